"""dqclient: the dq delay queue's official Python client, standard library only.

    from dqclient import Client, Receiver
    client = Client("http://127.0.0.1:6780", token=None)
    client.add("orders", "order-42", {"amount": 42}, delay=600)

See clients/python/README.md and docs/client.md.
"""
from .client import Client, DqError, StaleToken
from .webhooks import Callback, Receiver, WebhookVerificationError

__all__ = ["Client", "DqError", "StaleToken", "Receiver", "Callback", "WebhookVerificationError"]
__version__ = "0.1.0"
