"""The blocking client: ``coinmech.Client`` and its ``Watch``."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Callable, Iterator

from . import _wire
from ._wire import RetryPolicy
from .errors import CoinMechError, CommandError, ConnectionFailed, ProtocolError, ReplyTimeout, Unavailable
from .events import Event, parse_event
from .resume import ResumeFile
from .results import (Approved, Credit, CreditResult, EventsPage, Hello, Kept, Refunded, Refused, Returned,
                      SubscribeReply, Totals, parse_credit, parse_credit_result, parse_events_page, parse_hello,
                      parse_totals)

__all__ = ["Client", "Watch"]


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.monotonic()


class _Connection:
    """One socket to the daemon, its hello read."""

    def __init__(self, path: str, timeout: float | None) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.lines = _wire.LineBuffer()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
            first = self.read_message(deadline)
            if first is None:
                raise ReplyTimeout(f"{path}: no hello within {timeout} s")
            if first.get("type") == "reply":
                # Refused before the hello (a connection limit): {"id": null, "ok": false, …}.
                try:
                    _wire.reply_result(first, -1, None)
                except _wire.ConnectionLevelError as refusal:
                    raise refusal.error from None
                raise ProtocolError(f"the daemon's first line is not a hello: {first!r:.300}")
            self.hello: Hello = parse_hello(first)
        except BaseException as error:
            self.close()
            if isinstance(error, OSError):
                raise _wire.transport_error(error, path) from None
            raise

    def send(self, data: bytes, timeout: float | None) -> None:
        try:
            self.sock.settimeout(timeout)
            self.sock.sendall(data)
        except OSError as error:
            raise _wire.transport_error(error, self.path) from None

    def read_message(self, deadline: float | None) -> dict[str, Any] | None:
        """The next message, or None when ``deadline`` (time.monotonic) passes first.
        Raises ConnectionFailed when the daemon closes the connection."""
        while True:
            line = self.lines.next_line()
            if line is not None:
                return _wire.decode_line(line)
            remaining = _remaining(deadline)
            if remaining is not None and remaining <= 0:
                return None
            try:
                self.sock.settimeout(remaining)
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            except OSError as error:
                raise _wire.transport_error(error, self.path) from None
            if not data:
                raise ConnectionFailed(f"{self.path}: the daemon closed the connection")
            self.lines.feed(data)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Client:
    """A blocking client of coinmechd.

    Connects on first use (or ``connect()``), and again after a lost connection. Read
    commands and credit commands are asked again after a lost connection, a lost reply or
    ``unavailable`` (``retry``); a credit command always with the request id of its first
    attempt, so the daemon answers a repeat from its ledger and never charges twice.

        with coinmech.Client() as client:
            print(client.credit().balance("USD"))
    """

    def __init__(self, path: str | None = None, *, timeout: float = 10.0, credit_timeout: float = 45.0,
                 connect_timeout: float = 5.0, retry: RetryPolicy = RetryPolicy()) -> None:
        self.path = path or _wire.default_socket_path()
        self.timeout = timeout
        #: Replies to spend, refund and cancel: a cancel waits for its payout (up to 30 s).
        self.credit_timeout = credit_timeout
        self.connect_timeout = connect_timeout
        self.retry = retry
        self._connection: _Connection | None = None
        self._number = 0
        self._lock = threading.RLock()

    # Connection ------------------------------------------------------------------------

    def connect(self) -> Hello:
        """Open the connection (if not open) and return the daemon's hello."""
        with self._lock:
            if self._connection is None:
                self._connection = _Connection(self.path, self.connect_timeout)
                self._number = 0
            return self._connection.hello

    @property
    def hello(self) -> Hello:
        return self.connect()

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Requests --------------------------------------------------------------------------

    def _exchange(self, cmd: str, args: dict[str, Any], timeout: float, request_id: str | None) -> Any:
        """One attempt: send the request, wait for its reply. A failure of the connection
        (or a lost reply) closes it, so the next attempt starts on a fresh one."""
        self.connect()
        connection = self._connection
        assert connection is not None
        self._number += 1
        number = self._number
        try:
            deadline = time.monotonic() + timeout
            connection.send(_wire.encode_request(cmd, number, args), timeout)
            while True:
                message = connection.read_message(deadline)
                if message is None:
                    raise ReplyTimeout(f"no reply to {cmd!r} within {timeout} s")
                done, result = _wire.reply_result(message, number, request_id)
                if done:
                    return result
        except _wire.ConnectionLevelError as cut:
            self.close()
            raise cut.error from None
        except (ConnectionFailed, ProtocolError):
            self.close()
            raise

    def _call(self, cmd: str, args: dict[str, Any], *, timeout: float | None = None,
              request_id: str | None = None, retry: bool = True) -> Any:
        with self._lock:
            attempts = self.retry.attempts if retry else 1
            for attempt in range(attempts):
                try:
                    return self._exchange(cmd, args, timeout or self.timeout, request_id)
                except CoinMechError as error:
                    _wire.with_request_id(error, request_id)
                    if attempt + 1 >= attempts or not _wire.is_retriable(error):
                        raise
                time.sleep(self.retry.pause(attempt))
            raise AssertionError("unreachable")

    def request(self, cmd: str, *, retry: bool = False, timeout: float | None = None, **args: Any) -> Any:
        """Any command, its ``result`` object as sent (retried only when ``retry``)."""
        return self._call(cmd, args, timeout=timeout, retry=retry)

    # Read commands ---------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The daemon's status object (docs/PROTOCOL.md, ``status``), as sent."""
        return self._call("status", {})

    def totals(self) -> Totals:
        return parse_totals(self._call("totals", {}))

    def events(self, since: int = 0, limit: int = 100) -> EventsPage:
        """Recorded events with ``seq > since``, oldest first, at most ``limit`` (1–1000)."""
        return parse_events_page(self._call("events", {"since": since, "limit": limit}))

    def all_events(self, since: int = 0, page: int = 1000) -> Iterator[Event]:
        """Every recorded event after ``since``, page by page, up to the ledger's last seq."""
        while True:
            result = self.events(since, page)
            yield from result.events
            if not result.events or result.events[-1].seq >= result.last_seq:
                return
            since = result.events[-1].seq

    def credit(self) -> Credit:
        """The customer's credit: one account per currency."""
        return parse_credit(self._call("credit", {}))

    # Credit commands -------------------------------------------------------------------

    def spend(self, amount_minor: int, *, item: str | None = None, currency: str | None = None,
              request_id: str | None = None) -> Approved | Refused:
        """Sell ``amount_minor`` of the customer's credit: ``Approved`` (recorded once per
        request id) or ``Refused`` (credit short, nothing recorded). A new uuid4 request id
        unless given; pass the id of an earlier attempt (``error.request_id``) to learn its
        outcome without charging twice."""
        request_id = _wire.check_request_id(request_id or _wire.new_request_id())
        args = {"amount_minor": _wire.check_amount(amount_minor), "request_id": request_id,
                "item": _wire.check_item(item), "currency": _wire.check_currency(currency)}
        result = parse_credit_result(self._call("spend", args, timeout=self.credit_timeout, request_id=request_id),
                                     request_id)
        return _expect(result, (Approved, Refused), "spend")

    def refund(self, request_id: str) -> Refunded:
        """Put an approved sale back (the request id of its ``spend``)."""
        request_id = _wire.check_request_id(request_id)
        result = parse_credit_result(self._call("refund", {"request_id": request_id}, timeout=self.credit_timeout,
                                                request_id=request_id), request_id)
        return _expect(result, (Refunded,), "refund")

    def cancel(self, request_id: str | None = None) -> Returned | Kept:
        """The customer's escrow return: the credit paid back as change (``Returned``), or
        ``Kept`` where no device pays change. Paid once per request id."""
        request_id = _wire.check_request_id(request_id or _wire.new_request_id())
        result = parse_credit_result(self._call("cancel", {"request_id": request_id}, timeout=self.credit_timeout,
                                                request_id=request_id), request_id)
        return _expect(result, (Returned, Kept), "cancel")

    # Events ----------------------------------------------------------------------------

    def watch(self, resume_file: str | None = None, *, since: int | None = None, pending: bool = False,
              reconnect: bool = True, on_reconnect: Callable[[BaseException | None], None] | None = None) -> Watch:
        """Events as they are recorded, on a connection of their own (see ``Watch``)."""
        return Watch(self.path, resume_file=resume_file, since=since, pending=pending, reconnect=reconnect,
                     connect_timeout=self.connect_timeout, retry=self.retry, on_reconnect=on_reconnect)


def _expect(result: CreditResult, kinds: tuple[type, ...], cmd: str) -> Any:
    # A state this library does not know is passed on as a plain CreditResult.
    if isinstance(result, kinds) or type(result) is CreditResult:
        return result
    raise ProtocolError(f"{cmd} answered with state {result.state!r}")


class Watch:
    """Every event after a resume point, exactly once, across reconnects.

    The resume point is the seq in ``resume_file`` (when it exists), else ``since``, else the
    daemon's last seq at the first connect (only new events). After a disconnect, a daemon
    restart or an ``overflow`` it subscribes again with ``since`` = the last seq delivered, so
    nothing is lost or repeated. An event counts as handled when the caller asks for the next
    one (or calls ``commit()``, or leaves the ``with`` block without an exception): only then
    is its seq written to the resume file (atomically). An event whose handling was cut short
    is therefore delivered again by the next ``watch`` on that file, never skipped.

        with client.watch("/var/lib/kiosk/coinmech.seq") as events:
            for event in events:
                handle(event)
    """

    def __init__(self, path: str, *, resume_file: str | None = None, since: int | None = None,
                 pending: bool = False, reconnect: bool = True, connect_timeout: float = 5.0,
                 retry: RetryPolicy = RetryPolicy(),
                 on_reconnect: Callable[[BaseException | None], None] | None = None) -> None:
        self.path = path
        self.pending = pending
        self.reconnect = reconnect
        self.connect_timeout = connect_timeout
        self.retry = retry
        self.on_reconnect = on_reconnect
        self.resume = ResumeFile(resume_file) if resume_file is not None else None
        stored = self.resume.load() if self.resume is not None else None
        #: The seq of the last event delivered (None until the first connect, when starting at "now").
        self.last_seq: int | None = stored if stored is not None else since
        #: The seq last written to the resume file.
        self.committed_seq: int | None = stored
        self.hello: Hello | None = None
        self.subscription: SubscribeReply | None = None
        #: Connections opened after the first (disconnects and overflows).
        self.reconnects = 0
        self.overflows = 0
        self._connection: _Connection | None = None
        self._delivered: int | None = None
        self._connections = 0
        self._failures = 0

    # The resume point --------------------------------------------------------------------

    def commit(self) -> None:
        """Record the last delivered event as handled (the resume file, when there is one)."""
        if self._delivered is not None:
            if self.resume is not None:
                self.resume.store(self._delivered)
            self.committed_seq = self._delivered
            self._delivered = None

    def _start_at(self, seq: int) -> None:
        self.last_seq = seq
        if self.resume is not None and self.committed_seq is None:
            self.resume.store(seq)
            self.committed_seq = seq

    # Reading ---------------------------------------------------------------------------

    def _open(self, deadline: float | None) -> None:
        timeout = self.connect_timeout
        remaining = _remaining(deadline)
        if remaining is not None:
            timeout = max(0.001, min(timeout, remaining))
        connection = _Connection(self.path, timeout)
        try:
            self.hello = connection.hello
            if self.last_seq is None:
                self._start_at(connection.hello.seq)
            since = self.last_seq
            connection.send(_wire.encode_request("subscribe", 1, {"since": since, "pending": self.pending}), timeout)
            reply_deadline = time.monotonic() + timeout
            while True:
                message = connection.read_message(reply_deadline)
                if message is None:
                    raise ReplyTimeout(f"no reply to subscribe within {timeout:.3g} s")
                try:
                    done, result = _wire.reply_result(message, 1, None)
                except _wire.ConnectionLevelError as cut:
                    raise cut.error from None
                if done:
                    break
            self.subscription = SubscribeReply(since=since, seq=int(result.get("seq", since)),
                                               pending=bool(result.get("pending", self.pending)))
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._connections += 1
        if self._connections > 1:
            self.reconnects += 1

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def open(self) -> Watch:
        """Connect and subscribe now (else the first ``poll`` does): events recorded from here
        on are delivered. Raises when the daemon cannot be reached."""
        if self._connection is None:
            self._open(None)
        return self

    def poll(self, timeout: float | None = None) -> Event | None:
        """The next event, or None when none came within ``timeout`` seconds (None: wait for
        ever). Commits the event delivered before (the caller is done with it)."""
        self.commit()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                if self._connection is None:
                    self._open(deadline)
                    self._failures = 0
                message = self._connection.read_message(deadline)
            except (ConnectionFailed, Unavailable) as error:
                self._drop()
                if not self.reconnect or not _wire.is_retriable(error):
                    raise
                if self.on_reconnect is not None:
                    self.on_reconnect(error)
                pause = self.retry.pause(self._failures)
                self._failures += 1
                remaining = _remaining(deadline)
                if remaining is not None and remaining <= pause:
                    if remaining > 0:
                        time.sleep(remaining)
                    return None
                time.sleep(pause)
                continue
            except BaseException:
                self._drop()
                raise
            if message is None:
                return None
            kind = message.get("type")
            if kind == "event":
                event = parse_event(message.get("event"))
                seq = message.get("seq", event.seq)
                if self.last_seq is not None and seq <= self.last_seq:
                    continue  # already delivered (cannot happen with a daemon that keeps its contract)
                self.last_seq = seq
                self._delivered = seq
                return event
            if kind == "overflow":
                # We fell behind: resume from the last seq we delivered (the daemon's resume_from
                # is at most that: every event it wrote came before this line).
                self.overflows += 1
                self._drop()
                if not self.reconnect:
                    raise ConnectionFailed(f"overflow: the daemon cut the subscription (resume_from "
                                           f"{message.get('resume_from')})")
                if self.on_reconnect is not None:
                    self.on_reconnect(None)
                continue
            if kind == "reply" and message.get("id") is None and message.get("ok") is False:
                try:
                    _wire.reply_result(message, -1, None)
                except _wire.ConnectionLevelError as cut:
                    self._drop()
                    if not self.reconnect:
                        raise cut.error from None
                continue
            # Anything else (a reply to nothing we asked) is skipped.

    def __iter__(self) -> Watch:
        return self

    def __next__(self) -> Event:
        event = self.poll(None)
        assert event is not None
        return event

    def close(self) -> None:
        """Close the connection. The event delivered last is not committed (see ``commit``)."""
        self._drop()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            if exc_type is None:
                self.commit()
        finally:
            self.close()
