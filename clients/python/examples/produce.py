"""Adds, reads, deletes and batch-adds jobs: python3 examples/produce.py [URL] [TOKEN]."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from dqclient import Client, DqError  # noqa: E402

client = Client(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:6780",
                token=sys.argv[2] if len(sys.argv) > 2 else os.environ.get("DQ_TOKEN"))
client.put_topic("orders", {"callback_url": "http://127.0.0.1:8080/check-order"})
print(client.add("orders", "order-42", {"amount": 42}, delay=600))
print(client.get("orders", "order-42")["state"])
print(client.add_batch("orders", [{"id": "order-43", "body": 1}, {"id": "bad\u0001id", "body": 2}]))
client.delete("orders", "order-42")
try:
    client.get("orders", "order-42")
except DqError as error:
    print("not there any more:", error.status, error.message)
