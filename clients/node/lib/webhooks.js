// Verifying and reading dq's signed callbacks (Standard Webhooks,
// docs/callbacks.md): the signed content is `${webhook-id}.${webhook-timestamp}.${body}`,
// signed with HMAC-SHA256 per whsec_ secret ("v1,<base64>") and Ed25519 per
// key pair ("v1a,<base64>"), listed space-separated in webhook-signature.
//   const receiver = new Receiver({ secrets: ["whsec_..."], publicKeys: ["whpk_..."] });
//   const callback = receiver.verify(rawBody, request.headers);  // throws WebhookVerificationError
// The body must be the raw bytes received, never a re-serialised parse.
"use strict";
const crypto = require("crypto");

const DEFAULT_TOLERANCE_S = 5 * 60;
// An Ed25519 public key as SPKI DER: this prefix, then its 32 bytes.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
// An Ed25519 seed as PKCS#8 DER: this prefix, then its 32 bytes.
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

class WebhookVerificationError extends Error {
  constructor(message) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

function keyBytes(text, prefix) {
  if (typeof text !== "string" || !text.startsWith(prefix)) {
    throw new TypeError(`expected a ${prefix}... key`);
  }
  return Buffer.from(text.slice(prefix.length), "base64");
}

// A whpk_ public key, or the public key of a whsk_ secret key.
function publicKey(text) {
  if (typeof text === "string" && text.startsWith("whsk_")) {
    const raw = keyBytes(text, "whsk_");
    if (raw.length === 64) {
      return crypto.createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw.subarray(32)]), format: "der", type: "spki" });
    }
    if (raw.length === 32) {
      const secret = crypto.createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, raw]), format: "der", type: "pkcs8" });
      return crypto.createPublicKey(secret);
    }
    throw new TypeError("a whsk_ key holds 32 or 64 bytes");
  }
  const raw = keyBytes(text, "whpk_");
  if (raw.length !== 32) throw new TypeError("a whpk_ key holds 32 bytes");
  return crypto.createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
}

// A header of a plain object (any name case) or a Headers object.
function header(headers, name) {
  if (headers && typeof headers.get === "function") return headers.get(name) || "";
  for (const [key, value] of Object.entries(headers || {})) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(",") : String(value);
  }
  return "";
}

// A verified callback. webhookId is the same on every attempt of one job:
// dedup on it. document is dq's JSON ({topic, id, body, attempt, due_at_ms,
// created_at_ms}), null for a form body; body is document.body (or the raw
// text of a form body).
class Callback {
  constructor(headers, raw) {
    this.webhookId = header(headers, "webhook-id");
    this.timestamp = Number(header(headers, "webhook-timestamp"));
    this.topic = header(headers, "x-dq-topic");
    this.jobId = header(headers, "x-dq-id");
    this.event = header(headers, "x-dq-event");
    const attempt = header(headers, "x-dq-attempt");
    this.attempt = /^[0-9]+$/.test(attempt) ? Number(attempt) : null;
    this.raw = raw;
    const text = raw.toString("utf8");
    try {
      this.document = JSON.parse(text);
    } catch (error) {
      this.document = null;
    }
    this.body = this.document && typeof this.document === "object" && "body" in this.document ? this.document.body : text;
  }
}

class Receiver {
  // secrets: whsec_ HMAC secrets; publicKeys: whpk_ public keys or whsk_
  // secret keys (Ed25519); toleranceS: how far webhook-timestamp may be from
  // this clock (5 minutes).
  constructor({ secrets = [], publicKeys = [], toleranceS = DEFAULT_TOLERANCE_S } = {}) {
    this.secrets = [].concat(secrets).map((secret) => keyBytes(secret, "whsec_"));
    this.publicKeys = [].concat(publicKeys).map(publicKey);
    if (!this.secrets.length && !this.publicKeys.length) {
      throw new TypeError("give at least one whsec_ secret or whpk_/whsk_ key");
    }
    this.toleranceS = toleranceS;
  }

  // body: the raw request body (Buffer or string as received); headers: a
  // plain object or a Headers. Returns the Callback, or throws.
  verify(body, headers, { now } = {}) {
    const raw = Buffer.isBuffer(body) ? body : Buffer.from(String(body), "utf8");
    const id = header(headers, "webhook-id");
    const timestamp = header(headers, "webhook-timestamp");
    const signatures = header(headers, "webhook-signature");
    if (!id || !timestamp || !signatures) {
      throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
    }
    if (!/^[0-9]+$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not unix seconds");
    const nowS = now === undefined ? Date.now() / 1000 : now;
    if (Math.abs(nowS - Number(timestamp)) > this.toleranceS) {
      throw new WebhookVerificationError("webhook-timestamp is outside the tolerance");
    }
    const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), raw]);
    for (const entry of signatures.split(" ")) {
      const [version, value] = entry.split(",");
      if (!value) continue;
      const signature = Buffer.from(value, "base64");
      if (version === "v1") {
        for (const secret of this.secrets) {
          const expected = crypto.createHmac("sha256", secret).update(signed).digest();
          if (expected.length === signature.length && crypto.timingSafeEqual(expected, signature)) {
            return new Callback(headers, raw);
          }
        }
      } else if (version === "v1a" && signature.length === 64) {
        for (const key of this.publicKeys) {
          if (crypto.verify(null, signed, key, signature)) return new Callback(headers, raw);
        }
      }
    }
    throw new WebhookVerificationError("no signature matches the keys given");
  }
}

module.exports = { Receiver, Callback, WebhookVerificationError };
