// Verifies one recorded dq callback with the Standard Webhooks reference
// library (npm "standardwebhooks") for each HMAC secret, and each "v1a"
// signature with node's own Ed25519 for each public key (the library knows
// only "v1"). Test-only: tests/test_signed_callbacks.cc calls it.
//   node verify.js CASE.json
// CASE.json: {"body": "...", "headers": {"webhook-id": ...}, "secrets":
// ["whsec_..."], "public_keys": ["whpk_..."]}
// Prints {"secrets": [true|"error"...], "public_keys": [true|"error"...]}.
"use strict";
const fs = require("fs");
const crypto = require("crypto");
const { Webhook } = require("standardwebhooks");

const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const headers = input.headers;

const secrets = (input.secrets || []).map((secret) => {
  try {
    new Webhook(secret).verify(input.body, headers);
    return true;
  } catch (error) {
    return String(error.message || error);
  }
});

// An Ed25519 public key as SPKI DER: the fixed prefix, then its 32 bytes.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const publicKeys = (input.public_keys || []).map((text) => {
  if (!text.startsWith("whpk_")) return "not a whpk_ key";
  const raw = Buffer.from(text.slice(5), "base64");
  const key = crypto.createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, raw]),
    format: "der",
    type: "spki",
  });
  const signed = Buffer.from(
    `${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${input.body}`, "utf8");
  const tolerance = 5 * 60;
  const age = Math.floor(Date.now() / 1000) - Number(headers["webhook-timestamp"]);
  if (Math.abs(age) > tolerance) return "timestamp outside the tolerance";
  for (const entry of String(headers["webhook-signature"] || "").split(" ")) {
    const [version, signature] = entry.split(",");
    if (version !== "v1a") continue;
    if (crypto.verify(null, signed, key, Buffer.from(signature, "base64"))) return true;
  }
  return "no matching v1a signature";
});

process.stdout.write(JSON.stringify({ secrets, public_keys: publicKeys }) + "\n");
