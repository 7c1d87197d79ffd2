#!/usr/bin/env python3
"""A real SMTP server for tests (Debian's python3-aiosmtpd).

    smtp_sink.py PORT DIR

Listens on 127.0.0.1:PORT and writes every accepted message to DIR/NNNNNN.eml,
atomically (temp file + rename), with the envelope in two extra headers on
top: X-Envelope-From and X-Envelope-To (comma-separated). Numbering goes on
after the files already in DIR, so a restarted sink never overwrites one.
Answers DATA with "250 OK queued as N". Stops on SIGTERM.
"""
import os
import signal
import sys
import threading

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, directory):
        self.directory = directory
        self.count = len([n for n in os.listdir(directory) if n.endswith(".eml")])
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
            number = self.count
        path = os.path.join(self.directory, "%06d.eml" % number)
        with open(path + ".tmp", "wb") as out:
            out.write(("X-Envelope-From: %s\r\nX-Envelope-To: %s\r\n" %
                       (envelope.mail_from, ",".join(envelope.rcpt_tos))).encode())
            out.write(envelope.original_content or envelope.content)
        os.rename(path + ".tmp", path)
        return "250 OK queued as %d" % number


def main():
    port = int(sys.argv[1])
    directory = sys.argv[2]
    controller = Controller(Sink(directory), hostname="127.0.0.1", port=port)
    controller.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(0.2):
        pass
    controller.stop()


if __name__ == "__main__":
    main()
