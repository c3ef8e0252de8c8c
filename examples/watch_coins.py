#!/usr/bin/env python3
"""Watch credited coins from coinmechd, resuming after a reconnect with nothing lost or repeated.

Standard library only. Usage: watch_coins.py [SOCKET]   (default /run/coinmech/coinmechd.sock)
It remembers the last event's seq and subscribes again with {"since": seq} after any
disconnect or overflow, so every event is seen exactly once.

Protocol 2: money is a "coin" event, sent once the mech has stored the coin in its cash box.
A "decision" with verdict "accept" is not money yet (subscribe with "pending": true to see
those); a coin can still come back ("coin_returned") or stay unknown ("coin_unconfirmed").
"""
import json
import socket
import sys
import time

PATH = sys.argv[1] if len(sys.argv) > 1 else "/run/coinmech/coinmechd.sock"


def lines(sock):
    buffer = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


def watch():
    last_seq = None
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(PATH)
                messages = lines(sock)
                hello = next(messages)
                if hello.get("protocol") != 2:
                    sys.exit(f"coinmechd speaks protocol {hello.get('protocol')}; this client speaks 2")
                if last_seq is None:
                    last_seq = hello["seq"]  # first start: only new events
                sock.sendall(json.dumps({"cmd": "subscribe", "since": last_seq, "id": 1}).encode() + b"\n")
                for message in messages:
                    if message.get("type") == "overflow":
                        last_seq = message["resume_from"]
                        break
                    if message.get("type") != "event":
                        continue
                    event = message["event"]
                    last_seq = message["seq"]
                    if event["kind"] == "coin":
                        print(f"#{last_seq} credited {event['currency']} {event['denomination']} ({event['value_minor']})", flush=True)
                    elif event["kind"] == "decision":
                        print(f"#{last_seq} returned: {event['reason']}", flush=True)
                    elif event["kind"] == "coin_returned":
                        print(f"#{last_seq} returned after the accept: {event.get('message', '')}", flush=True)
        except (OSError, StopIteration) as error:
            print(f"reconnecting after #{last_seq}: {error}", file=sys.stderr)
        time.sleep(1)


if __name__ == "__main__":
    try:
        watch()
    except KeyboardInterrupt:
        pass
