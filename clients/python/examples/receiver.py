"""A callback receiver that verifies dq's signatures:
DQ_SIGNING_SECRET=whsec_... python3 examples/receiver.py 8080"""
import http.server
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from dqclient import Receiver, WebhookVerificationError  # noqa: E402

receiver = Receiver(secrets=[os.environ["DQ_SIGNING_SECRET"]])
seen = set()  # in production: a shared store with an expiry (e.g. Redis SET id 1 NX EX 600)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            callback = receiver.verify(raw, self.headers)
        except WebhookVerificationError as error:
            print("refused:", error)
            self.send_response(401)
        else:
            if callback.webhook_id not in seen:  # dq delivers at least once
                seen.add(callback.webhook_id)
                print("job", callback.topic, callback.job_id, "attempt", callback.attempt, callback.body)
            self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8080),
                                Handler).serve_forever()
