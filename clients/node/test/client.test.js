// Tests of dq-client: the receiver helper against the Standard Webhooks
// specification's example, and (with DQ_URL set) the whole client against a
// real dqd: jobs, batch adds, topics, errors, and a real signed callback that
// verifies (HMAC and Ed25519) while a tampered one does not.
//   DQ_URL=http://127.0.0.1:6780 DQ_TOKEN=... DQ_ADMIN_TOKEN=... node --test test/
// tests/test_clients.cc runs this against a dqd it starts (require_token = yes).
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("crypto");
const http = require("http");
const { Client, DqError, StaleToken, Receiver, WebhookVerificationError } = require("..");

const SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SPEC_HEADERS = {
  "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330",
  "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const SPEC_BODY = '{"test": 2432232314}';
const SPEC_NOW = { now: 1614265330 };

test("the specification's example verifies", () => {
  const callback = new Receiver({ secrets: SPEC_SECRET }).verify(SPEC_BODY, SPEC_HEADERS, SPEC_NOW);
  assert.equal(callback.webhookId, "msg_p5jXN8AQM9LWM0D4loKWxJek");
  assert.deepEqual(callback.document, { test: 2432232314 });
});

test("another body, secret or time is refused", () => {
  const receiver = new Receiver({ secrets: [SPEC_SECRET] });
  assert.throws(() => receiver.verify(SPEC_BODY.replace("2432", "2433"), SPEC_HEADERS, SPEC_NOW), WebhookVerificationError);
  const other = "whsec_" + Buffer.from("another secret, 24 bytes").toString("base64");
  assert.throws(() => new Receiver({ secrets: other }).verify(SPEC_BODY, SPEC_HEADERS, SPEC_NOW), WebhookVerificationError);
  assert.throws(() => receiver.verify(SPEC_BODY, SPEC_HEADERS, { now: 1614265330 + 301 }), WebhookVerificationError);
  assert.throws(() => receiver.verify(SPEC_BODY, { ...SPEC_HEADERS, "webhook-signature": "" }, SPEC_NOW), WebhookVerificationError);
  assert.throws(() => new Receiver({}), TypeError);
});

test("Ed25519: a whpk_ or whsk_ key verifies v1a", () => {
  const { publicKey, privateKey } = crypto.generateKeyPairSync("ed25519");
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(12);
  const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(16);
  const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(Math.floor(Date.now() / 1000)) };
  const body = '{"id":"x"}';
  const signature = crypto.sign(null, Buffer.from(`msg_1.${headers["webhook-timestamp"]}.${body}`), privateKey);
  headers["webhook-signature"] = `v1,AAAA v1a,${signature.toString("base64")}`;
  for (const key of ["whpk_" + raw.toString("base64"), "whsk_" + seed.toString("base64"),
                     "whsk_" + Buffer.concat([seed, raw]).toString("base64")]) {
    assert.equal(new Receiver({ publicKeys: key }).verify(body, headers).document.id, "x");
    assert.throws(() => new Receiver({ publicKeys: key }).verify(body + " ", headers), WebhookVerificationError);
  }
});

test("an unknown outcome says so", () => {
  const error = new DqError(504, "redis shard a:1 did not answer in time");
  assert.equal(error.outcomeUnknown, true);
  assert.match(error.message, /outcome unknown/);
  assert.equal(new DqError(503, "down").outcomeUnknown, false);
});

const URL_ = process.env.DQ_URL;
const skip = URL_ ? false : "DQ_URL names no dqd to test against";

test("against a real dqd", { skip }, async (t) => {
  const admin = new Client({ baseUrl: URL_, token: process.env.DQ_ADMIN_TOKEN });
  const producer = new Client({ baseUrl: URL_, token: process.env.DQ_TOKEN });
  const received = [];
  const server = http.createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ raw: Buffer.concat(chunks), headers: request.headers });
      response.writeHead(200, { "Content-Length": "0" });
      response.end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const callbackUrl = `http://127.0.0.1:${server.address().port}/hook`;
  const rejects = async (promise, status) => {
    const error = await promise.then(() => null, (caught) => caught);
    assert.ok(error instanceof DqError, `expected a DqError ${status}`);
    assert.equal(error.status, status, error.message);
    return error;
  };
  const makeTopic = async (name, fields = {}) => {
    await admin.deleteTopic(name, { purge: true }).catch((error) => assert.equal(error.status, 404));
    const callback = fields.mode === "pull" ? {} : { callback_url: callbackUrl };
    return admin.putTopic(name, { ...callback, ...fields }, { createOnly: true });
  };

  await t.test("a pull worker reserves, acks, nacks and touches", async () => {
    await makeTopic("node-pull", { mode: "pull", max_attempts: 3 });
    for (let n = 0; n < 3; n++) await producer.add("node-pull", `p-${n}`, { n }, { delay: 0 });
    let got = [];
    const deadline = Date.now() + 30000;
    while (got.length < 3 && Date.now() < deadline) {
      got = got.concat(await producer.reserve("node-pull", { ttr: 30, wait: 5, count: 3 }));
    }
    got.sort((a, b) => a.id.localeCompare(b.id));
    assert.deepEqual(got.map((job) => job.id), ["p-0", "p-1", "p-2"]);
    const [first, second, third] = got;
    assert.deepEqual(first.body, { n: 0 });
    assert.equal(first.attempt, 1);
    const before = first.lease_until_ms;
    await producer.touch(first, { ttr: 120 });
    assert.ok(first.lease_until_ms > before);
    await producer.ack(first);
    const stale = await producer.ack(first).then(() => null, (error) => error);
    assert.ok(stale instanceof StaleToken, "a second ack is stale");
    assert.equal((await producer.nack(second, { delay: 3600, error: "not yet" })).state, "retrying");
    assert.equal((await producer.get("node-pull", "p-1")).state, "retrying");
    await producer.ack(third);
    await producer.add("node-pull", "w-fail", "no", { delay: 0 });
    const seen = [];
    const handled = await producer.work("node-pull", async (job) => {
      seen.push(job.id);
      throw new Error("cannot");
    }, { ttr: 30, wait: 5, maxJobs: 1 });
    assert.equal(handled, 1);
    assert.deepEqual(seen, ["w-fail"]);
    const failed = await producer.get("node-pull", "w-fail");
    assert.equal(failed.state, "retrying");
    await makeTopic("node-push");
    await rejects(producer.reserve("node-push"), 409);
    await admin.deleteTopic("node-pull", { purge: true });
    await admin.deleteTopic("node-push", { purge: true });
  });

  await t.test("a job after another waits for it", async () => {
    await makeTopic("node-after");
    await producer.add("node-after", "second", 2, { delay: 0, after: [["node-after", "first"]] });
    const waiting = await producer.get("node-after", "second");
    assert.equal(waiting.state, "waiting");
    assert.equal(waiting.waiting.reason, "dependencies");
    assert.deepEqual(waiting.waiting.after.map((e) => [e.topic, e.id]), [["node-after", "first"]]);
    await rejects(producer.add("node-after", "self", 1, { after: [{ topic: "node-after", id: "self" }] }), 400);
    await admin.deleteTopic("node-after", { purge: true });
  });

  await t.test("jobs: add, get, delete and batch add", async () => {
    await makeTopic("node-jobs");
    const added = await producer.add("node-jobs", "order-1", { amount: 42 }, { delay: 3600 });
    assert.equal(added.id, "order-1");
    assert.equal((await producer.add("node-jobs", "order-1", { amount: 42 }, { delay: 3600 })).existing, true);
    const job = await producer.get("node-jobs", "order-1");
    assert.equal(job.state, "delayed");
    assert.deepEqual(job.body, { amount: 42 });
    await producer.add("node-jobs", "a/b c", "text", { at: Math.floor(Date.now() / 1000) + 3600 });
    assert.equal((await producer.get("node-jobs", "a/b c")).body, "text");
    await producer.add("node-jobs", "run-1", 1, { delay: 3600 });
    const ran = await producer.run("node-jobs", "run-1");
    assert.equal(ran.moved, true);
    assert.equal(ran.state, "delayed");
    assert.ok(ran.due_at_ms < Date.now() + 60000);
    // It is delivered now (and is no longer on its way when the signed test starts).
    const runDeadline = Date.now() + 30000;
    const ranOnce = () => received.some(({ headers }) => headers["x-dq-id"] === "run-1");
    while (!ranOnce() && Date.now() < runDeadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(ranOnce(), "the job run now was not delivered");
    await rejects(producer.run("node-jobs", "no-such-job"), 404);
    await producer.add("node-jobs", "upd-1", { v: 1 }, { delay: 3600 });
    const updated = await producer.update("node-jobs", "upd-1", { body: { v: 2 }, delay: 7200 });
    assert.equal(updated.updated, true);
    assert.equal(updated.previous_state, "delayed");
    assert.ok(updated.due_at_ms > Date.now() + 7000 * 1000);
    assert.deepEqual((await producer.get("node-jobs", "upd-1")).body, { v: 2 });
    // Only the time: the body is kept; a null body is a body.
    await producer.update("node-jobs", "upd-1", { delay: 3600 });
    assert.deepEqual((await producer.get("node-jobs", "upd-1")).body, { v: 2 });
    await producer.update("node-jobs", "upd-1", { body: null });
    assert.equal((await producer.get("node-jobs", "upd-1")).body, null);
    assert.equal((await producer.update("node-jobs", "upd-2", { body: "new", delay: 3600 })).created, true);
    await rejects(producer.update("node-jobs", "upd-1", { delay: -1 }), 400);
    await producer.delete("node-jobs", "upd-1");
    await producer.delete("node-jobs", "upd-2");
    // at in a time zone: 09:00 in Shanghai, then moved to 09:00 in Paris.
    const zoned = await producer.add("node-jobs", "tz-1", 1, { at: "2036-07-01 09:00", tz: "Asia/Shanghai" });
    assert.equal(zoned.due_at_ms, 2098486800000);
    await producer.update("node-jobs", "tz-1", { at: "2036-07-01 09:00", tz: "Europe/Paris" });
    assert.equal((await producer.get("node-jobs", "tz-1")).due_at_ms, 2098508400000);
    await rejects(producer.add("node-jobs", "tz-2", 1, { at: "2036-07-01 09:00", tz: "Mars/Olympus" }), 400);
    await producer.delete("node-jobs", "tz-1");
    // A ttl after the due time, then moved by an update with a new one.
    await producer.add("node-jobs", "ttl-1", 1, { delay: 600, ttl: 30 });
    const timed = await producer.get("node-jobs", "ttl-1");
    assert.equal(timed.expires_at_ms, timed.due_at_ms + 30000);
    await producer.update("node-jobs", "ttl-1", { expire_at: "2036-07-01 10:00", tz: "Europe/Paris" });
    assert.equal((await producer.get("node-jobs", "ttl-1")).expires_at_ms, 2098512000000);
    await rejects(producer.add("node-jobs", "ttl-2", 1, { delay: 600, expire_at: "+1 minutes" }), 400);
    await producer.delete("node-jobs", "ttl-1");
    const conflict = await rejects(producer.add("node-jobs", "order-1", { amount: 43 }), 409);
    assert.match(conflict.serverMessage, /order-1/);
    assert.equal((await producer.delete("node-jobs", "order-1")).deleted, true);
    await rejects(producer.get("node-jobs", "order-1"), 404);
    const results = await producer.addBatch("node-jobs", [
      { id: "b-1", body: 1, delay: 3600 },
      { id: "b-2", body: { x: [1, 2] }, delay: 3600 },
      { id: "", body: 3 },
    ]);
    assert.deepEqual(results.map((result) => result.status), [201, 201, 400]);
    assert.ok(results[2].error);
    assert.equal((await producer.listJobs("node-jobs", "delayed")).total, 3);
    const nowhere = await producer.add("node-nowhere", "x", 1).then(() => null, (error) => error);
    assert.ok([403, 404].includes(nowhere.status));
    await rejects(new Client({ baseUrl: "http://127.0.0.1:9", timeoutMs: 2000 }).get("node-jobs", "x"), 0);
  });

  await t.test("topics: list, get, put, patch, delete", async () => {
    const made = await makeTopic("node-topics", { max_attempts: 4, creator: "node" });
    assert.equal(made.max_attempts, 4);
    await rejects(admin.putTopic("node-topics", { callback_url: callbackUrl }, { createOnly: true }), 409);
    const names = (await admin.listTopics({ search: "node-" })).topics.map((topic) => topic.name);
    assert.ok(names.includes("node-topics"));
    const read = await admin.getTopic("node-topics");
    assert.equal((await admin.patchTopic("node-topics", { priority: 1 }, { ifVersion: read.version })).priority, 1);
    await rejects(admin.patchTopic("node-topics", { priority: 3 }, { ifVersion: read.version }), 409);
    const refused = await rejects(admin.patchTopic("node-topics", { timeout_ms: 0 }), 400);
    assert.equal(refused.body.field, "timeout_ms");
    assert.equal((await admin.putTopic("node-topics", { callback_url: callbackUrl })).max_attempts, 0);
    const notAdmin = await rejects(producer.patchTopic("node-topics", { priority: 2 }), 403);
    assert.match(JSON.stringify(notAdmin.body), /admin scope/); // why, in the answer
    await producer.add("node-topics", "held", 1, { delay: 3600 });
    await rejects(admin.deleteTopic("node-topics"), 409);
    assert.equal((await admin.deleteTopic("node-topics", { purge: true })).purged_jobs, 1);
    await rejects(admin.getTopic("node-topics"), 404);
  });

  await t.test("schedules: add, list, pause, resume, delete", async () => {
    await makeTopic("node-schedules");
    const added = await admin.addSchedule("node-schedules", {
      spec: "30 2 * * *", tz: "Europe/Paris", body: { tick: "{{tick}}" }, catch_up: "none",
    });
    assert.equal(added.zone, "Europe/Paris");
    assert.match(added.id, /^sch_/);
    assert.equal(added.next_runs.length, 5);
    const every = await admin.addSchedule("node-schedules", { spec: "@every 1h", body: '{"ms": {{tick_ms}}}' });
    await rejects(admin.addSchedule("node-schedules", { spec: "30 2 * * *" }), 409);
    await rejects(admin.addSchedule("node-schedules", { spec: "61 * * * *" }), 400);
    await rejects(producer.addSchedule("node-schedules", { spec: "@daily" }), 403);
    const specs = (await admin.listSchedules("node-schedules")).map((s) => s.spec).sort();
    assert.deepEqual(specs, ["30 2 * * *", "@every 1h"]);
    const paused = await admin.pauseSchedule("node-schedules", "30 2 * * *");
    assert.equal(paused.paused, true);
    assert.deepEqual(paused.next_runs, []);
    assert.equal((await admin.pauseSchedule("node-schedules", "30 2 * * *", false)).paused, false);
    const deleted = await admin.deleteSchedule("node-schedules", "@every 1h");
    assert.equal(deleted.deleted, "@every 1h");
    assert.equal(deleted.id, every.id);
    await rejects(admin.deleteSchedule("node-schedules", "@every 1h"), 404);
    assert.deepEqual((await admin.listSchedules("node-schedules")).map((s) => s.spec), ["30 2 * * *"]);
    await admin.deleteTopic("node-schedules", { purge: true });
  });

  await t.test("a real signed callback verifies, a tampered one does not", async () => {
    const made = await makeTopic("node-signed", { signing_secret: "generate", signing_public_key: "generate" });
    const secret = made.signing_secret;
    assert.match(secret, /^whsec_/);
    const keys = (await admin.signingKeys("node-signed")).map((key) => key.public_key);
    assert.deepEqual(keys, [made.signing_public_key]);
    received.length = 0;
    await producer.add("node-signed", "cb-1", { hello: "world" }, { delay: 0 });
    const deadline = Date.now() + 30000;
    while (!received.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(received.length, "no callback came");
    const { raw, headers } = received[0];
    for (const receiver of [new Receiver({ secrets: [secret] }), new Receiver({ publicKeys: keys })]) {
      const callback = receiver.verify(raw, headers);
      assert.equal(callback.topic, "node-signed");
      assert.equal(callback.jobId, "cb-1");
      assert.equal(callback.attempt, 1);
      assert.deepEqual(callback.body, { hello: "world" });
      assert.match(callback.webhookId, /^msg_/);
      assert.throws(() => receiver.verify(Buffer.from(raw.toString().replace("world", "WORLD")), headers), WebhookVerificationError);
      const forged = { ...headers, "webhook-timestamp": String(Number(headers["webhook-timestamp"]) + 1) };
      assert.throws(() => receiver.verify(raw, forged), WebhookVerificationError);
    }
    const other = "whsec_" + crypto.createHash("sha256").update("other").digest("base64");
    assert.throws(() => new Receiver({ secrets: other }).verify(raw, headers), WebhookVerificationError);
    await admin.deleteTopic("node-signed", { purge: true });
  });
});
