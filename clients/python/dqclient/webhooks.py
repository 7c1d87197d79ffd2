"""Verifying and reading dq's signed callbacks (Standard Webhooks).

dq signs each callback as the Standard Webhooks specification says
(docs/callbacks.md): the signed content is "{webhook-id}.{webhook-timestamp}.{body}",
signed with HMAC-SHA256 per "whsec_" secret ("v1,<base64>") and with Ed25519
per key pair ("v1a,<base64>"); webhook-signature lists them, space-separated.

    receiver = Receiver(secrets=["whsec_..."])            # and/or public_keys=["whpk_..."]
    callback = receiver.verify(raw_body, request_headers)  # raises WebhookVerificationError
    callback.job_id, callback.body, callback.attempt ...

The body must be the raw bytes received, never a parsed and re-serialised copy.
"""
import base64
import hashlib
import hmac
import json
import time

from . import _ed25519

DEFAULT_TOLERANCE_S = 5 * 60


class WebhookVerificationError(Exception):
    """The callback is not signed by a key given, or its timestamp is too old or new."""


class Callback:
    """A verified callback: its headers' facts and its parsed body.

    webhook_id:  msg_..., the same on every attempt of one job: dedup on it.
    timestamp:   unix seconds this attempt was sent.
    topic, job_id, attempt, event: X-DQ-Topic, X-DQ-Id, X-DQ-Attempt,
                 X-DQ-Event ("dead" for a dead-letter callback, else "").
    document:    the JSON document dq sent ({"topic", "id", "body", "attempt",
                 "due_at_ms", "created_at_ms"}); None for a form-encoded body.
    body:        the job's body (document["body"]), or the raw text of a form body.
    """

    def __init__(self, headers, raw):
        self.webhook_id = headers.get("webhook-id", "")
        self.timestamp = int(headers.get("webhook-timestamp", "0") or 0)
        self.topic = headers.get("x-dq-topic", "")
        self.job_id = headers.get("x-dq-id", "")
        self.event = headers.get("x-dq-event", "")
        attempt = headers.get("x-dq-attempt", "")
        self.attempt = int(attempt) if attempt.isdigit() else None
        self.raw = raw
        text = raw.decode("utf-8", "replace")
        try:
            self.document = json.loads(text)
        except ValueError:
            self.document = None
        if isinstance(self.document, dict) and "body" in self.document:
            self.body = self.document["body"]
        else:
            self.body = text

    def __repr__(self):
        return "Callback(topic=%r, job_id=%r, attempt=%r, webhook_id=%r)" % (
            self.topic, self.job_id, self.attempt, self.webhook_id)


def _key_bytes(text, prefix):
    if not text.startswith(prefix):
        raise ValueError("expected a %s... key, got %r" % (prefix, text[:8]))
    return base64.b64decode(text[len(prefix):])


def _public_key(text):
    """A whpk_ public key, or the public key of a whsk_ secret key."""
    if text.startswith("whsk_"):
        raw = _key_bytes(text, "whsk_")
        if len(raw) == 64:  # seed then public key, as libsodium keeps them
            return raw[32:]
        if len(raw) == 32:
            return _ed25519.public_key_of(raw)
        raise ValueError("a whsk_ key holds 32 or 64 bytes")
    raw = _key_bytes(text, "whpk_")
    if len(raw) != 32:
        raise ValueError("a whpk_ key holds 32 bytes")
    return raw


class Receiver:
    """Verifies callbacks with any of the given keys.

    secrets:     "whsec_..." HMAC secrets ("v1" signatures).
    public_keys: "whpk_..." Ed25519 public keys, or "whsk_..." secret keys
                 ("v1a" signatures; GET /v1/signing-keys lists the public ones).
    tolerance_s: how far webhook-timestamp may be from this clock (5 minutes).
    """

    def __init__(self, secrets=(), public_keys=(), tolerance_s=DEFAULT_TOLERANCE_S):
        if isinstance(secrets, str):
            secrets = [secrets]
        if isinstance(public_keys, str):
            public_keys = [public_keys]
        self._secrets = [_key_bytes(secret, "whsec_") for secret in secrets]
        self._public_keys = [_public_key(key) for key in public_keys]
        if not self._secrets and not self._public_keys:
            raise ValueError("give at least one whsec_ secret or whpk_/whsk_ key")
        self._tolerance_s = tolerance_s

    def verify(self, body, headers, now=None):
        """Checks the signature and the timestamp; returns the Callback.

        body: the raw request body (bytes, or str as received); headers: any
        mapping of the request's headers (names in any case).
        """
        raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        lower = {str(name).lower(): str(value) for name, value in dict(headers).items()}
        message_id = lower.get("webhook-id", "")
        timestamp = lower.get("webhook-timestamp", "")
        signatures = lower.get("webhook-signature", "")
        if not message_id or not timestamp or not signatures:
            raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
        if not timestamp.isdigit():
            raise WebhookVerificationError("webhook-timestamp is not unix seconds")
        now = time.time() if now is None else now
        if abs(now - int(timestamp)) > self._tolerance_s:
            raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
        signed = ("%s.%s." % (message_id, timestamp)).encode("utf-8") + raw
        for entry in signatures.split(" "):
            version, _, value = entry.partition(",")
            try:
                signature = base64.b64decode(value, validate=True)
            except ValueError:
                continue
            if version == "v1":
                for secret in self._secrets:
                    expected = hmac.new(secret, signed, hashlib.sha256).digest()
                    if hmac.compare_digest(expected, signature):
                        return Callback(lower, raw)
            elif version == "v1a":
                for key in self._public_keys:
                    if _ed25519.verify(key, signed, signature):
                        return Callback(lower, raw)
        raise WebhookVerificationError("no signature matches the keys given")
