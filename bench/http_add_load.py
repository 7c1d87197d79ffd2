#!/usr/bin/env python3
# Adds load for bench/token_overhead.sh: 50 keep-alive connections, each
# POSTing adds to topic "bench" back to back; prints adds/s and the statuses.
#   http_add_load.py PORT TOTAL [TOKEN]
import asyncio, sys, time
port, total, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else ""
conns = 50
async def worker(w, n, counts):
    r, wr = await asyncio.open_connection("127.0.0.1", port)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    for i in range(n):
        body = '{"id":"w%d-%d","body":{"n":1},"delay":3600}' % (w, i)
        wr.write((f"POST /v1/topics/bench/jobs HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
        head = await r.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await r.readexactly(length)
        counts[head[9:12]] = counts.get(head[9:12], 0) + 1
    wr.close()
async def main():
    counts = {}
    t = time.monotonic()
    await asyncio.gather(*[worker(w, total // conns, counts) for w in range(conns)])
    dt = time.monotonic() - t
    print(f"{total/dt:.0f} adds/s in {dt:.2f}s statuses={counts}")
asyncio.run(main())
