"""A tiny in-process coinmechd for unit tests: a Unix socket in a temporary directory that says
hello and answers each request line as a handler decides, speaking the documented lines
(docs/PROTOCOL.md and the credit commands' contract)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable


class Drop:
    """Close the connection without a reply (the reply is lost)."""


class Silent:
    """Read the request, never answer (the client's reply timeout)."""


@dataclass
class Error:
    code: str
    message: str = "test error"


@dataclass
class Raw:
    """Send these messages as they are (after optional events), then maybe close."""
    messages: list[dict[str, Any]]
    close: bool = False


@dataclass
class Request:
    connection: int
    message: dict[str, Any]


@dataclass
class FakeLedger:
    """Events for subscribe/events: ``events`` in seq order."""
    events: list[dict[str, Any]] = field(default_factory=list)

    def after(self, since: int) -> list[dict[str, Any]]:
        return [e for e in self.events if e["seq"] > since]

    @property
    def last_seq(self) -> int:
        return self.events[-1]["seq"] if self.events else 0


def make_events(count: int, first: int = 1, kinds: tuple[str, ...] = ("coin",)) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        seq = first + i
        kind = kinds[i % len(kinds)]
        event: dict[str, Any] = {"seq": seq, "time": 1795286946.0 + seq, "kind": kind, "source": "serial"}
        if kind == "coin":
            event.update(currency="USD", denomination="quarter", value_minor=25, ref_seq=seq - 1, message="stored")
        out.append(event)
    return out


Handler = Callable[[dict[str, Any], int, "FakeDaemon"], Any]


class FakeDaemon:
    def __init__(self, handler: Handler | None = None, *, protocol: Any = 2, ledger: FakeLedger | None = None,
                 hello: dict[str, Any] | None = None, refuse: dict[str, Any] | None = None,
                 events_per_connection: int | None = None, overflow_after: int | None = None) -> None:
        self.handler = handler or (lambda request, connection, daemon: {})
        self.protocol = protocol
        self.ledger = ledger or FakeLedger()
        self.hello_override = hello
        self.refuse = refuse
        #: Cut every subscription after this many events (a lost connection).
        self.events_per_connection = events_per_connection
        #: Send `overflow` after this many events of a subscription, then close.
        self.overflow_after = overflow_after
        self.requests: list[Request] = []
        self.connections = 0
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.directory = tempfile.mkdtemp(prefix="coinmech-fake-")
        self.path = os.path.join(self.directory, "coinmechd.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(16)
        self.listener.settimeout(0.05)
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.accepter = threading.Thread(target=self._accept, name="fake-accept", daemon=True)
        self.accepter.start()

    # Inspection --------------------------------------------------------------------------

    def commands(self, cmd: str) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.message.get("cmd") == cmd]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError("the fake daemon never saw what the test waited for")
                self.changed.wait(remaining)

    # Serving -----------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self.changed:
                self.connections += 1
                number = self.connections
                self.sockets.append(conn)
                self.changed.notify_all()
            thread = threading.Thread(target=self._serve, args=(conn, number), name=f"fake-{number}", daemon=True)
            self.threads.append(thread)
            thread.start()

    @staticmethod
    def _send(conn: socket.socket, message: dict[str, Any]) -> None:
        conn.sendall(json.dumps(message, separators=(",", ":"), sort_keys=True).encode() + b"\n")

    def _serve(self, conn: socket.socket, number: int) -> None:
        try:
            if self.refuse is not None:
                self._send(conn, self.refuse)
                return
            hello = {"type": "hello", "protocol": self.protocol, "daemon": "coinmechd", "version": "0.5.0",
                     "seq": self.ledger.last_seq}
            hello.update(self.hello_override or {})
            self._send(conn, hello)
            reader = conn.makefile("rb")
            for line in reader:
                request = json.loads(line)
                with self.changed:
                    self.requests.append(Request(number, request))
                    self.changed.notify_all()
                if request.get("cmd") == "subscribe":
                    self._subscribe(conn, request)
                    return
                answer = self.handler(request, number, self)
                if answer is Drop or isinstance(answer, Drop):
                    return
                if answer is Silent or isinstance(answer, Silent):
                    continue
                if isinstance(answer, Error):
                    self._send(conn, {"type": "reply", "id": request.get("id"), "ok": False,
                                      "error": {"code": answer.code, "message": answer.message}})
                elif isinstance(answer, Raw):
                    for message in answer.messages:
                        self._send(conn, message)
                    if answer.close:
                        return
                else:
                    self._send(conn, {"type": "reply", "id": request.get("id"), "ok": True, "result": answer})
        except OSError:
            pass
        finally:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def _subscribe(self, conn: socket.socket, request: dict[str, Any]) -> None:
        since = request.get("since")
        if since is None:
            since = self.ledger.last_seq
        self._send(conn, {"type": "reply", "id": request.get("id"), "ok": True,
                          "result": {"since": since, "seq": self.ledger.last_seq, "pending": bool(request.get("pending"))}})
        sent = 0
        for event in self.ledger.after(since):
            if self.overflow_after is not None and sent >= self.overflow_after:
                self._send(conn, {"type": "overflow", "resume_from": event["seq"] - 1})
                return
            if self.events_per_connection is not None and sent >= self.events_per_connection:
                return
            self._send(conn, {"type": "event", "seq": event["seq"], "event": event})
            since = event["seq"]
            sent += 1
        # Then live: what `publish` adds, until the test stops us (or the client goes away).
        conn.settimeout(0.05)
        while not self.stopping.is_set():
            with self.lock:
                live = self.ledger.after(since)
            for event in live:
                self._send(conn, {"type": "event", "seq": event["seq"], "event": event})
                since = event["seq"]
            try:
                if conn.recv(1) == b"":
                    return
            except TimeoutError:
                continue

    def publish(self, event: dict[str, Any]) -> None:
        """Record a new event: subscribers get it live."""
        with self.lock:
            self.ledger.events.append(event)

    def close(self) -> None:
        self.stopping.set()
        try:
            self.listener.close()
        except OSError:
            pass
        with self.lock:
            sockets = list(self.sockets)
        for conn in sockets:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.accepter.join(5)
        for thread in self.threads:
            thread.join(5)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> FakeDaemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
