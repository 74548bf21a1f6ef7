#!/usr/bin/env python3
"""A minimal OpenAI-compatible chat-completions server for the runner-overhead scenario.

Every POST is answered after a fixed delay (default 50 ms) with a short text answer, no tool
call, so each question is one model call. Its usage reports half the request body's bytes
as prompt tokens: more than the prompt's real count, as a server that saw the whole prompt
reports about as many (a fixed 100 had ctxbench flag every answer's prompt as truncated and
take the flagged units' path). Keep-alive HTTP/1.1 on 127.0.0.1; prints the port on
stdout's first line. Counts requests and connections (a client that reuses its connections opens
about as many as it has calls in flight) and prints both on SIGTERM/SIGINT to stderr.
Usage: python3 mock_openai.py [--port 0] [--delay-ms 50]
"""
import argparse
import asyncio
import json
import signal
import sys
import time

def body(prompt_tokens):
    return json.dumps({
        "id": "mock", "object": "chat.completion", "model": "mock",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "I don't know."}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 4,
                  "total_tokens": prompt_tokens + 4},
    }).encode()

served = 0
connections = 0
# When the first call arrived and the last answer left (wall clock), and the integral of calls in
# flight over that span: its mean says how well the client kept its call slots busy.
first = last = mark = None
in_flight = 0
busy = 0.0


def account(delta):
    global first, last, mark, in_flight, busy
    now = time.time()
    if first is None:
        first = now
    if mark is not None:
        busy += in_flight * (now - mark)
    mark = now
    in_flight += delta
    last = now


async def handle(reader, writer, delay):
    global served, connections
    connections += 1
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            account(+1)
            await asyncio.sleep(delay)
            account(-1)
            served += 1
            answer = body(length // 2)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(answer) + answer)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, default=50.0)
    a = ap.parse_args()
    server = await asyncio.start_server(lambda r, w: handle(r, w, a.delay_ms / 1000), "127.0.0.1", a.port)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    print(f"served {served} requests on {connections} connections", file=sys.stderr, flush=True)
    if first is not None:
        span = last - first
        print(f"calls from {first:.3f} to {last:.3f}, mean in flight "
              f"{busy / span if span > 0 else 0:.2f} (epoch seconds)", file=sys.stderr, flush=True)


asyncio.run(main())
