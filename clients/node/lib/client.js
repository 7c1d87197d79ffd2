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

const segment = (value) => encodeURIComponent(String(value));

// fields plus the time members given (undefined or null: not sent).
function withTimes(fields, { delay, at, tz, ttl, expire_at: expireAt } = {}) {
  const times = { delay, at, tz, ttl, expire_at: expireAt };
  for (const [name, value] of Object.entries(times)) {
    if (value !== undefined && value !== null) fields[name] = value;
  }
  return fields;
}

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
  add(topic, id, body, when = {}) {
    return this.call("POST", `/v1/topics/${segment(topic)}/jobs`, { body: withTimes({ id, body }, when) });
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

  async call(method, path, { body, query, headers = {} } = {}) {
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
    request.signal = AbortSignal.timeout(this.timeoutMs);
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

module.exports = { Client, DqError };
