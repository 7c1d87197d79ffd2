// The dq HTTP API from Node (18+), with no dependency: the global fetch.
//   const { Client } = require("dq-client");
//   const client = new Client({ baseUrl: "http://127.0.0.1:6780", token });
//   await client.add("orders", "order-42", { amount: 42 }, { delay: 600 });
// Every call resolves to the server's JSON answer; a refusal rejects with a
// DqError carrying the HTTP status and the server's message.
"use strict";

class DqError extends Error {
  // status: the HTTP status (0 when no answer came); message: the server's
  // {"error": ...} text; body: its parsed answer; outcomeUnknown: on 504 (and
  // a write whose answer never came) dq cannot tell whether the write
  // happened, and retrying the same call is safe.
  constructor(status, message, { body = null, outcomeUnknown = false } = {}) {
    const unknown = outcomeUnknown || status === 504;
    let text = status ? `${status}: ${message}` : message;
    if (unknown) {
      text += " (outcome unknown: the write may or may not have happened; retrying is safe)";
    }
    super(text);
    this.name = "DqError";
    this.status = status;
    this.serverMessage = message;
    this.body = body;
    this.outcomeUnknown = unknown;
  }
}

// A worker call (ack, nack, touch) whose lease token is no longer the job's:
// its lease ran out and the job went back (perhaps to another worker), or it
// was acked, deleted or replaced. Nothing was changed.
class StaleToken extends DqError {
  constructor(status, message, options) {
    super(status, message, options);
    this.name = "StaleToken";
  }
}

const segment = (value) => encodeURIComponent(String(value));

// fields plus the time members given (undefined or null: not sent).
function withTimes(fields, { delay, at, tz, ttl, expire_at: expireAt } = {}) {
  const times = { delay, at, tz, ttl, expire_at: expireAt };
  for (const [name, value] of Object.entries(times)) {
    if (value !== undefined && value !== null) fields[name] = value;
  }
  return fields;
}

// [[topic, id]] or [{topic, id}] as the API's "after" list.
const afterList = (after) =>
  after.map((entry) => (Array.isArray(entry) ? { topic: entry[0], id: entry[1] } : { topic: entry.topic, id: entry.id }));

class Client {
  // baseUrl: "http://host:port"; token: an API token (dqctl token add);
  // timeoutMs: per call.
  constructor({ baseUrl, token = null, timeoutMs = 10000 } = {}) {
    if (!baseUrl) throw new TypeError("baseUrl is required, e.g. http://127.0.0.1:6780");
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.timeoutMs = timeoutMs;
  }

  // Jobs.

  // body: any JSON value; delay: seconds; at: unix seconds or a time text,
  // read in the IANA zone tz when it has no offset (else the topic's tz);
  // neither: the topic's default delay. ttl: seconds after its due time it
  // may still be delivered, or expire_at: a time after which it never is
  // (neither: the topic's ttl). Resolves to {topic, id, due_at_ms}
  // (+ existing: true when the same job was pending already, or ended within
  // the topic's dedup_window_s: then state says how, and ended_at_ms when).
  // when.after: jobs it waits for, [[topic, id]] or [{topic, id}]: it stays
  // "waiting" until each was delivered, then is due by its own delay or time.
  add(topic, id, body, when = {}) {
    const fields = withTimes({ id, body }, when);
    if (when.after && when.after.length) fields.after = afterList(when.after);
    return this.call("POST", `/v1/topics/${segment(topic)}/jobs`, { body: fields });
  }

  // jobs: [{id, body, delay|at}]: one result per job, in order.
  async addBatch(topic, jobs) {
    const reply = await this.call("POST", `/v1/topics/${segment(topic)}/jobs/batch`, {
      body: { jobs: [...jobs] },
    });
    return reply.results;
  }

  get(topic, id) {
    return this.call("GET", `/v1/topics/${segment(topic)}/jobs/${segment(id)}`);
  }

  // Resolves to {deleted: true, delivery_in_flight}: in flight, its callback
  // was already running and may still complete.
  async delete(topic, id) {
    const reply = await this.call("DELETE", `/v1/topics/${segment(topic)}/jobs/${segment(id)}`);
    return reply || { deleted: true, delivery_in_flight: false };
  }

  // Changes a pending job in place, in one step: a new body (any JSON value,
  // null too) and/or due time (delay seconds, or at as add takes it); what is
  // not given (undefined) is kept; ttl or expire_at change its expiry. A delivery already under way still runs
  // with the old body; the new version is delivered after it, at its time.
  // Resolves to {topic, id, state, due_at_ms, updated: true, previous_state},
  // or with created: true when there was no such job and it was added (a
  // body is needed then). A dead letter is a DqError 409.
  update(topic, id, { body, ...times } = {}) {
    const fields = body === undefined ? {} : { body };
    withTimes(fields, times);
    return this.call("PUT", `/v1/topics/${segment(topic)}/jobs/${segment(id)}`, { body: fields });
  }

  // A delayed or retrying job due now, its attempts kept: {topic, id, state,
  // due_at_ms, moved} (moved false: it was due already). A dead letter is a
  // DqError 409 (requeue it).
  run(topic, id) {
    return this.call("POST", `/v1/topics/${segment(topic)}/jobs/${segment(id)}/run`);
  }

  listJobs(topic, state, { offset, limit } = {}) {
    return this.call("GET", `/v1/topics/${segment(topic)}/jobs`, { query: { state, offset, limit } });
  }

  // Pull workers (a topic of mode pull).

  // Leases up to count ready jobs for ttr seconds, waiting up to wait seconds
  // for one to become ready. Resolves to a list (empty when none came) of
  // {topic, id, body, attempt, token, lease_until_ms, ...}; hand each to ack,
  // nack or touch before its lease ends, or it is given out again.
  async reserve(topic, { ttr, wait, count } = {}) {
    const reply = await this.call("GET", `/v1/topics/${segment(topic)}/reserve`, {
      query: { ttr, wait, count },
      timeoutMs: this.timeoutMs + (wait || 0) * 1000,
    });
    return reply.jobs;
  }

  // The job is done: it ends (delivered). A stale lease rejects with StaleToken.
  ack(job) {
    return this.workerCall(job, "ack", {});
  }

  // The attempt failed: retried after delay seconds (undefined: the topic's
  // backoff), or dead-lettered when its attempts are used up.
  nack(job, { delay, error } = {}) {
    return this.workerCall(job, "nack", error === undefined ? {} : { error }, { delay });
  }

  // Extends the lease (by ttr seconds from now); updates job.lease_until_ms.
  async touch(job, { ttr } = {}) {
    const reply = await this.workerCall(job, "touch", ttr === undefined ? {} : { ttr });
    if (reply && reply.lease_until_ms !== undefined) job.lease_until_ms = reply.lease_until_ms;
    return reply;
  }

  // Runs await handler(job) for each job of the topic, one at a time: acks
  // when it resolves, nacks (the topic's backoff, the error as text) when it
  // throws. Stops after maxJobs jobs (undefined: never). Resolves to how
  // many were handled. Keep handler shorter than ttr, or touch.
  async work(topic, handler, { ttr = 30, wait = 20, maxJobs } = {}) {
    let handled = 0;
    while (maxJobs === undefined || handled < maxJobs) {
      for (const job of await this.reserve(topic, { ttr, wait, count: 1 })) {
        handled += 1;
        let failure = null;
        try {
          await handler(job);
        } catch (error) {
          failure = error;
        }
        try {
          if (failure === null) await this.ack(job);
          else await this.nack(job, { error: String((failure && failure.message) || failure) });
        } catch (error) {
          if (!(error instanceof StaleToken)) throw error;  // stale: its lease ran out, given out again
        }
      }
    }
    return handled;
  }

  async workerCall(job, verb, fields, query) {
    const path = `/v1/topics/${segment(job.topic)}/jobs/${segment(job.id)}/${verb}`;
    try {
      return await this.call("POST", path, { body: { ...fields, token: job.token }, query });
    } catch (error) {
      if (error instanceof DqError && error.status === 409) {
        throw new StaleToken(error.status, error.serverMessage, { body: error.body });
      }
      throw error;
    }
  }

  // Topics.

  listTopics({ search, offset, limit } = {}) {
    return this.call("GET", "/v1/topics", { query: { search, offset, limit } });
  }

  getTopic(topic) {
    return this.call("GET", `/v1/topics/${segment(topic)}`);
  }

  // Creates the topic, or sets every field (absent ones to their defaults;
  // signing keys stay unless named). createOnly: 409 when it exists;
  // ifVersion: 409 when it changed since.
  putTopic(topic, fields, { ifVersion, createOnly = false } = {}) {
    const headers = {};
    if (createOnly) headers["If-None-Match"] = "*";
    if (ifVersion !== undefined && ifVersion !== null) headers["If-Match"] = `"${ifVersion}"`;
    return this.call("PUT", `/v1/topics/${segment(topic)}`, { body: fields, headers });
  }

  // Changes the fields given ({online: false} pauses delivery).
  patchTopic(topic, fields, { ifVersion } = {}) {
    const headers = {};
    if (ifVersion !== undefined && ifVersion !== null) headers["If-Match"] = `"${ifVersion}"`;
    return this.call("PATCH", `/v1/topics/${segment(topic)}`, { body: fields, headers });
  }

  // Refused (409) while the topic holds jobs, unless purge.
  deleteTopic(topic, { purge = false } = {}) {
    return this.call("DELETE", `/v1/topics/${segment(topic)}`, {
      query: { purge: purge ? "true" : undefined },
    });
  }

  topicStats(topic) {
    return this.call("GET", `/v1/topics/${segment(topic)}/stats`);
  }

  // Schedules (docs/schedules.md): the writes need the admin scope.

  // [{spec, id, tz, zone, body, catch_up, paused, next_runs, ...}].
  async listSchedules(topic) {
    return (await this.call("GET", `/v1/topics/${segment(topic)}/schedules`)).schedules;
  }

  // fields: {spec, tz?, body?, catch_up?, paused?}; spec is five cron fields,
  // @hourly..., or "@every 10s"; body a JSON value, or JSON text with
  // {{tick}} / {{tick_ms}} in it. 409 when the topic has that spec already.
  addSchedule(topic, fields) {
    return this.call("POST", `/v1/topics/${segment(topic)}/schedules`, { body: fields });
  }

  // Pauses (no tick is added) or, with paused false, resumes it.
  pauseSchedule(topic, spec, paused = true) {
    return this.call("PATCH", `/v1/topics/${segment(topic)}/schedules`, { body: { spec, paused } });
  }

  // Resolves to {deleted: spec, id}.
  deleteSchedule(topic, spec) {
    return this.call("DELETE", `/v1/topics/${segment(topic)}/schedules`, { query: { spec } });
  }

  // Dead letters.

  listDead(topic, { offset, limit } = {}) {
    return this.call("GET", `/v1/topics/${segment(topic)}/dead`, { query: { offset, limit } });
  }

  // One dead letter, or (without id) all of the topic's.
  requeueDead(topic, id) {
    const tail = id === undefined || id === null ? "/requeue" : `/${segment(id)}/requeue`;
    return this.call("POST", `/v1/topics/${segment(topic)}/dead${tail}`);
  }

  purgeDead(topic) {
    return this.call("DELETE", `/v1/topics/${segment(topic)}/dead`);
  }

  // Operations.

  // The Ed25519 public keys receivers verify with.
  async signingKeys(topic) {
    return (await this.call("GET", "/v1/signing-keys", { query: { topic } })).keys;
  }

  // /healthz's answer (a 503 is answered too, {status: "unavailable", ...}).
  async health() {
    try {
      return await this.call("GET", "/healthz");
    } catch (error) {
      if (error instanceof DqError && error.status === 503 && error.body) return error.body;
      throw error;
    }
  }

  async call(method, path, { body, query, headers = {}, timeoutMs } = {}) {
    let url = this.baseUrl + path;
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null) params.append(key, String(value));
    }
    if ([...params].length) url += `?${params}`;
    const request = { method, headers: { Accept: "application/json", ...headers } };
    if (body !== undefined) {
      request.body = JSON.stringify(body);
      request.headers["Content-Type"] = "application/json";
    }
    if (this.token) request.headers.Authorization = `Bearer ${this.token}`;
    request.signal = AbortSignal.timeout(timeoutMs || this.timeoutMs);
    let answer;
    try {
      answer = await fetch(url, request);
    } catch (error) {
      const timedOut = error && (error.name === "TimeoutError" || error.name === "AbortError");
      const reason = (error && error.cause && error.cause.message) || (error && error.message) || error;
      throw new DqError(0, `${this.baseUrl}: ${timedOut ? "timed out" : reason}`, {
        outcomeUnknown: timedOut && method !== "GET",
      });
    }
    const text = await answer.text();
    let parsed = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        parsed = null;
      }
    }
    if (!answer.ok) {
      const message = parsed && typeof parsed.error === "string" ? parsed.error : text || answer.statusText;
      throw new DqError(answer.status, message, { body: parsed });
    }
    return parsed;
  }
}

module.exports = { Client, DqError, StaleToken };
