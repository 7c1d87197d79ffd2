"""Tests of dqclient: the receiver helper against the Standard Webhooks
specification's example, and (with DQ_URL set) the whole client against a
real dqd: jobs, batch adds, topics, errors, and a real signed callback that
verifies (HMAC and Ed25519) while a tampered one does not.

    DQ_URL=http://127.0.0.1:6780 DQ_TOKEN=... DQ_ADMIN_TOKEN=... python3 -m unittest -v

tests/test_clients.cc runs this against a dqd it starts (require_token = yes).
"""
import base64
import hashlib
import hmac
import http.server
import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dqclient import Client, DqError, Receiver, StaleToken, WebhookVerificationError  # noqa: E402

# The specification's published example (the libraries' own test).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_HEADERS = {
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
}
SPEC_BODY = '{"test": 2432232314}'


class ReceiverTest(unittest.TestCase):
    def test_the_specification_example_verifies(self):
        callback = Receiver(SPEC_SECRET).verify(SPEC_BODY, SPEC_HEADERS, now=1614265330)
        self.assertEqual(callback.webhook_id, "msg_p5jXN8AQM9LWM0D4loKWxJek")
        self.assertEqual(callback.document, {"test": 2432232314})

    def test_another_body_secret_or_time_is_refused(self):
        receiver = Receiver(SPEC_SECRET)
        with self.assertRaises(WebhookVerificationError):
            receiver.verify(SPEC_BODY.replace("2432", "2433"), SPEC_HEADERS, now=1614265330)
        with self.assertRaises(WebhookVerificationError):
            Receiver("whsec_" + base64.b64encode(b"another secret, 24 bytes").decode()).verify(
                SPEC_BODY, SPEC_HEADERS, now=1614265330)
        with self.assertRaises(WebhookVerificationError):
            receiver.verify(SPEC_BODY, SPEC_HEADERS, now=1614265330 + 301)
        with self.assertRaises(WebhookVerificationError):
            receiver.verify(SPEC_BODY, dict(SPEC_HEADERS, **{"webhook-signature": ""}), now=1614265330)

    def test_any_one_matching_signature_of_several_is_enough(self):
        headers = dict(SPEC_HEADERS)
        headers["webhook-signature"] = "v1,AAAA v1a,AAAA " + SPEC_HEADERS["webhook-signature"]
        self.assertTrue(Receiver(SPEC_SECRET).verify(SPEC_BODY, headers, now=1614265330))

    def test_keys_are_checked_when_given(self):
        with self.assertRaises(ValueError):
            Receiver(["not-a-key"])
        with self.assertRaises(ValueError):
            Receiver()

    def test_an_unknown_outcome_says_so(self):
        error = DqError(504, "redis shard a:1 did not answer in time")
        self.assertTrue(error.outcome_unknown)
        self.assertIn("outcome unknown", str(error))
        self.assertFalse(DqError(503, "down").outcome_unknown)


class Recorder(http.server.BaseHTTPRequestHandler):
    """A callback receiver: keeps each request's raw body and headers, answers 200."""

    received = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Recorder.received.append((raw, {name.lower(): value for name, value in self.headers.items()}))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@unittest.skipUnless(os.environ.get("DQ_URL"), "DQ_URL names no dqd to test against")
class AgainstDqdTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        url = os.environ["DQ_URL"]
        cls.admin = Client(url, token=os.environ.get("DQ_ADMIN_TOKEN"))
        cls.producer = Client(url, token=os.environ.get("DQ_TOKEN"))
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.callback_url = "http://127.0.0.1:%d/hook" % cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def make_topic(self, name, **fields):
        if fields.get("mode") != "pull":
            fields.setdefault("callback_url", self.callback_url)
        try:
            self.admin.delete_topic(name, purge=True)
        except DqError as error:
            self.assertEqual(error.status, 404)
        return self.admin.put_topic(name, fields, create_only=True)

    def test_jobs_add_get_delete_and_batch(self):
        self.make_topic("py-jobs")
        added = self.producer.add("py-jobs", "order-1", {"amount": 42}, delay=3600)
        self.assertEqual(added["id"], "order-1")
        again = self.producer.add("py-jobs", "order-1", {"amount": 42}, delay=3600)
        self.assertTrue(again.get("existing"))
        job = self.producer.get("py-jobs", "order-1")
        self.assertEqual(job["state"], "delayed")
        self.assertEqual(job["body"], {"amount": 42})
        self.assertTrue(self.producer.add("py-jobs", "a/b c", "text", at=int(time.time()) + 3600))
        self.assertEqual(self.producer.get("py-jobs", "a/b c")["body"], "text")
        self.producer.add("py-jobs", "run-1", 1, delay=3600)
        ran = self.producer.run("py-jobs", "run-1")
        self.assertTrue(ran["moved"])
        self.assertEqual(ran["state"], "delayed")
        self.assertLess(ran["due_at_ms"], int(time.time() * 1000) + 60000)
        with self.assertRaises(DqError) as no_job:
            self.producer.run("py-jobs", "no-such-job")
        self.assertEqual(no_job.exception.status, 404)
        self.producer.add("py-jobs", "upd-1", {"v": 1}, delay=3600)
        updated = self.producer.update("py-jobs", "upd-1", {"v": 2}, delay=7200)
        self.assertTrue(updated["updated"])
        self.assertEqual(updated["previous_state"], "delayed")
        self.assertGreater(updated["due_at_ms"], int(time.time() * 1000) + 7000 * 1000)
        self.assertEqual(self.producer.get("py-jobs", "upd-1")["body"], {"v": 2})
        # Only the time: the body is kept; a null body is a body.
        self.producer.update("py-jobs", "upd-1", delay=3600)
        self.assertEqual(self.producer.get("py-jobs", "upd-1")["body"], {"v": 2})
        self.producer.update("py-jobs", "upd-1", None)
        self.assertIsNone(self.producer.get("py-jobs", "upd-1")["body"])
        created = self.producer.update("py-jobs", "upd-2", "new", delay=3600)
        self.assertTrue(created["created"])
        with self.assertRaises(DqError) as bad:
            self.producer.update("py-jobs", "upd-1", delay=-1)
        self.assertEqual(bad.exception.status, 400)
        self.producer.delete("py-jobs", "upd-1")
        self.producer.delete("py-jobs", "upd-2")
        # at in a time zone: 09:00 in Shanghai, then moved to 09:00 in Paris.
        zoned = self.producer.add("py-jobs", "tz-1", 1, at="2036-07-01 09:00", tz="Asia/Shanghai")
        self.assertEqual(zoned["due_at_ms"], 2098486800000)
        self.producer.update("py-jobs", "tz-1", at="2036-07-01 09:00", tz="Europe/Paris")
        self.assertEqual(self.producer.get("py-jobs", "tz-1")["due_at_ms"], 2098508400000)
        with self.assertRaises(DqError) as no_zone:
            self.producer.add("py-jobs", "tz-2", 1, at="2036-07-01 09:00", tz="Mars/Olympus")
        self.assertEqual(no_zone.exception.status, 400)
        self.producer.delete("py-jobs", "tz-1")
        # A ttl after the due time, then moved by an update with a new one.
        self.producer.add("py-jobs", "ttl-1", 1, delay=600, ttl=30)
        job = self.producer.get("py-jobs", "ttl-1")
        self.assertEqual(job["expires_at_ms"], job["due_at_ms"] + 30000)
        self.producer.update("py-jobs", "ttl-1", expire_at="2036-07-01 10:00", tz="Europe/Paris")
        self.assertEqual(self.producer.get("py-jobs", "ttl-1")["expires_at_ms"], 2098512000000)
        with self.assertRaises(DqError) as refused:
            self.producer.add("py-jobs", "ttl-2", 1, delay=600, expire_at="+1 minutes")
        self.assertEqual(refused.exception.status, 400)
        self.producer.delete("py-jobs", "ttl-1")
        with self.assertRaises(DqError) as conflict:
            self.producer.add("py-jobs", "order-1", {"amount": 43})
        self.assertEqual(conflict.exception.status, 409)
        self.assertIn("order-1", conflict.exception.message)
        self.assertEqual(self.producer.delete("py-jobs", "order-1")["deleted"], True)
        with self.assertRaises(DqError) as gone:
            self.producer.get("py-jobs", "order-1")
        self.assertEqual(gone.exception.status, 404)
        results = self.producer.add_batch("py-jobs", [
            {"id": "b-1", "body": 1, "delay": 3600},
            {"id": "b-2", "body": {"x": [1, 2]}, "delay": 3600},
            {"id": "", "body": 3},
        ])
        self.assertEqual([result["status"] for result in results], [201, 201, 400])
        self.assertIn("error", results[2])
        listed = self.producer.list_jobs("py-jobs", "delayed")
        self.assertEqual(listed["total"], 3)
        with self.assertRaises(DqError) as unknown:
            self.producer.add("py-nowhere", "x", 1)
        self.assertIn(unknown.exception.status, (403, 404))
        with self.assertRaises(DqError) as unreachable:
            Client("http://127.0.0.1:9", timeout=2).get("py-jobs", "x")
        self.assertEqual(unreachable.exception.status, 0)

    def test_topics_list_get_put_patch_delete(self):
        made = self.make_topic("py-topics", max_attempts=4, creator="python")
        self.assertEqual(made["max_attempts"], 4)
        with self.assertRaises(DqError) as exists:
            self.admin.put_topic("py-topics", {"callback_url": self.callback_url}, create_only=True)
        self.assertEqual(exists.exception.status, 409)
        names = [topic["name"] for topic in self.admin.list_topics(search="py-")["topics"]]
        self.assertIn("py-topics", names)
        read = self.admin.get_topic("py-topics")
        patched = self.admin.patch_topic("py-topics", {"priority": 1}, if_version=read["version"])
        self.assertEqual(patched["priority"], 1)
        with self.assertRaises(DqError) as stale:
            self.admin.patch_topic("py-topics", {"priority": 3}, if_version=read["version"])
        self.assertEqual(stale.exception.status, 409)
        with self.assertRaises(DqError) as refused:
            self.admin.patch_topic("py-topics", {"timeout_ms": 0})
        self.assertEqual(refused.exception.status, 400)
        self.assertEqual(refused.exception.body["field"], "timeout_ms")
        replaced = self.admin.put_topic("py-topics", {"callback_url": self.callback_url})
        self.assertEqual(replaced["max_attempts"], 0)  # a PUT sets every field
        with self.assertRaises(DqError) as not_admin:
            self.producer.patch_topic("py-topics", {"priority": 2})
        self.assertEqual(not_admin.exception.status, 403)
        self.assertIn("admin scope", json.dumps(not_admin.exception.body))  # why, in the answer
        self.producer.add("py-topics", "held", 1, delay=3600)
        with self.assertRaises(DqError) as holds:
            self.admin.delete_topic("py-topics")
        self.assertEqual(holds.exception.status, 409)
        self.assertEqual(self.admin.delete_topic("py-topics", purge=True)["purged_jobs"], 1)
        with self.assertRaises(DqError) as gone:
            self.admin.get_topic("py-topics")
        self.assertEqual(gone.exception.status, 404)

    def test_schedules_add_list_pause_resume_delete(self):
        self.make_topic("py-schedules")
        added = self.admin.add_schedule("py-schedules", "30 2 * * *", tz="Europe/Paris",
                                        body={"tick": "{{tick}}"}, catch_up="none")
        self.assertEqual(added["zone"], "Europe/Paris")
        self.assertTrue(added["id"].startswith("sch_"))
        self.assertEqual(len(added["next_runs"]), 5)
        every = self.admin.add_schedule("py-schedules", "@every 1h", body='{"ms": {{tick_ms}}}')
        self.assertEqual(every["spec"], "@every 1h")
        with self.assertRaises(DqError) as twice:
            self.admin.add_schedule("py-schedules", "30 2 * * *")
        self.assertEqual(twice.exception.status, 409)
        with self.assertRaises(DqError) as bad:
            self.admin.add_schedule("py-schedules", "61 * * * *")
        self.assertEqual(bad.exception.status, 400)
        with self.assertRaises(DqError) as not_admin:
            self.producer.add_schedule("py-schedules", "@daily")
        self.assertEqual(not_admin.exception.status, 403)
        specs = sorted(s["spec"] for s in self.admin.list_schedules("py-schedules"))
        self.assertEqual(specs, ["30 2 * * *", "@every 1h"])
        paused = self.admin.pause_schedule("py-schedules", "30 2 * * *")
        self.assertTrue(paused["paused"])
        self.assertEqual(paused["next_runs"], [])
        self.assertFalse(self.admin.pause_schedule("py-schedules", "30 2 * * *", paused=False)["paused"])
        deleted = self.admin.delete_schedule("py-schedules", "@every 1h")
        self.assertEqual(deleted["deleted"], "@every 1h")
        self.assertEqual(deleted["id"], every["id"])
        with self.assertRaises(DqError) as gone:
            self.admin.delete_schedule("py-schedules", "@every 1h")
        self.assertEqual(gone.exception.status, 404)
        self.assertEqual([s["spec"] for s in self.admin.list_schedules("py-schedules")], ["30 2 * * *"])
        self.admin.delete_topic("py-schedules", purge=True)

    def test_a_real_signed_callback_verifies_and_a_tampered_one_does_not(self):
        made = self.make_topic("py-signed", signing_secret="generate", signing_public_key="generate")
        secret = made["signing_secret"]
        self.assertTrue(secret.startswith("whsec_"))
        keys = [key["public_key"] for key in self.admin.signing_keys("py-signed")]
        self.assertEqual(keys, [made["signing_public_key"]])
        Recorder.received.clear()
        self.producer.add("py-signed", "cb-1", {"hello": "world"}, delay=0)
        deadline = time.time() + 30
        while not Recorder.received and time.time() < deadline:
            time.sleep(0.05)
        self.assertTrue(Recorder.received, "no callback came")
        raw, headers = Recorder.received[0]
        for receiver in (Receiver(secrets=[secret]), Receiver(public_keys=keys)):
            callback = receiver.verify(raw, headers)
            self.assertEqual(callback.topic, "py-signed")
            self.assertEqual(callback.job_id, "cb-1")
            self.assertEqual(callback.attempt, 1)
            self.assertEqual(callback.body, {"hello": "world"})
            self.assertTrue(callback.webhook_id.startswith("msg_"))
            with self.assertRaises(WebhookVerificationError):
                receiver.verify(raw.replace(b"world", b"WORLD"), headers)
            forged = dict(headers)
            forged["webhook-timestamp"] = str(int(headers["webhook-timestamp"]) + 1)
            with self.assertRaises(WebhookVerificationError):
                receiver.verify(raw, forged)
        other = "whsec_" + base64.b64encode(hashlib.sha256(b"other").digest()).decode()
        with self.assertRaises(WebhookVerificationError):
            Receiver(secrets=[other]).verify(raw, headers)
        # The HMAC is the one the specification defines.
        signed = ("%s.%s." % (headers["webhook-id"], headers["webhook-timestamp"])).encode() + raw
        expected = base64.b64encode(
            hmac.new(base64.b64decode(secret[6:]), signed, hashlib.sha256).digest()).decode()
        self.assertIn("v1," + expected, headers["webhook-signature"].split(" "))
        self.admin.delete_topic("py-signed", purge=True)

    def test_a_pull_worker_reserves_acks_nacks_and_touches(self):
        self.make_topic("py-pull", mode="pull", max_attempts=3)
        for n in range(3):
            self.producer.add("py-pull", "p-%d" % n, {"n": n}, delay=0)
        got = []
        deadline = time.time() + 30
        while len(got) < 3 and time.time() < deadline:
            got += self.producer.reserve("py-pull", ttr=30, wait=5, count=3)
        self.assertEqual(sorted(job["id"] for job in got), ["p-0", "p-1", "p-2"])
        first, second, third = sorted(got, key=lambda job: job["id"])
        self.assertEqual(first["body"], {"n": 0})
        self.assertEqual(first["attempt"], 1)
        before = first["lease_until_ms"]
        self.producer.touch(first, ttr=120)
        self.assertGreater(first["lease_until_ms"], before)
        self.producer.ack(first)
        with self.assertRaises(StaleToken):
            self.producer.ack(first)  # acked already: nothing changes
        retried = self.producer.nack(second, delay=3600, error="not yet")
        self.assertEqual(retried["state"], "retrying")
        self.assertEqual(self.producer.get("py-pull", "p-1")["state"], "retrying")
        with self.assertRaises(StaleToken):
            self.producer.touch(second)
        # work(): a handler that returns acks, one that raises nacks.
        self.producer.ack(third)
        self.producer.add("py-pull", "w-ok", "fine", delay=0)
        seen = []
        self.assertEqual(self.producer.work("py-pull", lambda job: seen.append(job["id"]), ttr=30,
                                            wait=5, max_jobs=1), 1)
        self.assertEqual(seen, ["w-ok"])
        with self.assertRaises(DqError) as gone:
            self.producer.get("py-pull", "w-ok")
        self.assertEqual(gone.exception.status, 404)
        with self.assertRaises(DqError) as push:
            self.make_topic("py-push")
            self.producer.reserve("py-push")
        self.assertEqual(push.exception.status, 409)
        self.admin.delete_topic("py-pull", purge=True)
        self.admin.delete_topic("py-push", purge=True)

    def test_a_job_after_another_waits_for_it(self):
        self.make_topic("py-after")
        self.producer.add("py-after", "second", 2, delay=0, after=[("py-after", "first")])
        waiting = self.producer.get("py-after", "second")
        self.assertEqual(waiting["state"], "waiting")
        self.assertEqual(waiting["waiting"]["reason"], "dependencies")
        self.assertEqual([(e["topic"], e["id"]) for e in waiting["waiting"]["after"]],
                         [("py-after", "first")])
        with self.assertRaises(DqError) as itself:
            self.producer.add("py-after", "self", 1, after=[{"topic": "py-after", "id": "self"}])
        self.assertEqual(itself.exception.status, 400)
        self.admin.delete_topic("py-after", purge=True)


if __name__ == "__main__":
    unittest.main()
