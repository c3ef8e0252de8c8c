"""The asyncio client: ``coinmech.AsyncClient`` and its ``AsyncWatch``, the same calls as the
blocking ``Client`` as coroutines."""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Callable

from . import _wire
from ._wire import RetryPolicy
from .client import _expect
from .errors import CoinMechError, ConnectionFailed, ProtocolError, ReplyTimeout, Unavailable
from .events import Event, parse_event
from .resume import ResumeFile
from .results import (Approved, Credit, EventsPage, Hello, Kept, Refunded, Refused, Returned, SubscribeReply, Totals,
                      parse_credit, parse_credit_result, parse_events_page, parse_hello, parse_totals)

__all__ = ["AsyncClient", "AsyncWatch"]


class _AsyncConnection:
    def __init__(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.path = path
        self.reader = reader
        self.writer = writer
        self.hello: Hello

    @classmethod
    async def open(cls, path: str, timeout: float | None) -> _AsyncConnection:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path, limit=_wire.MAX_LINE_BYTES)
        except TimeoutError:
            raise ReplyTimeout(f"{path}: no connection within {timeout} s") from None
        except OSError as error:
            raise _wire.transport_error(error, path) from None
        connection = cls(path, reader, writer)
        try:
            first = await connection.read_message(None if timeout is None else time.monotonic() + timeout)
            if first is None:
                raise ReplyTimeout(f"{path}: no hello within {timeout} s")
            if first.get("type") == "reply":
                try:
                    _wire.reply_result(first, -1, None)
                except _wire.ConnectionLevelError as refusal:
                    raise refusal.error from None
                raise ProtocolError(f"the daemon's first line is not a hello: {first!r:.300}")
            connection.hello = parse_hello(first)
        except BaseException:
            connection.close()
            raise
        return connection

    async def send(self, data: bytes, timeout: float | None) -> None:
        try:
            self.writer.write(data)
            async with asyncio.timeout(timeout):
                await self.writer.drain()
        except TimeoutError:
            raise ReplyTimeout(f"{self.path}: the daemon does not read requests") from None
        except OSError as error:
            raise _wire.transport_error(error, self.path) from None

    async def read_message(self, deadline: float | None) -> dict[str, Any] | None:
        """The next message, or None when ``deadline`` (time.monotonic) passes first."""
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            async with asyncio.timeout(timeout):
                line = await self.reader.readuntil(b"\n")
        except TimeoutError:
            return None
        except asyncio.IncompleteReadError:
            raise ConnectionFailed(f"{self.path}: the daemon closed the connection") from None
        except asyncio.LimitOverrunError:
            raise ProtocolError(f"the daemon sent a line longer than {_wire.MAX_LINE_BYTES} bytes") from None
        except OSError as error:
            raise _wire.transport_error(error, self.path) from None
        return _wire.decode_line(line[:-1])

    def close(self) -> None:
        try:
            self.writer.close()
        except (OSError, RuntimeError):
            pass


class AsyncClient:
    """The asyncio form of ``coinmech.Client``: the same calls, awaited.

        async with coinmech.AsyncClient() as client:
            print((await client.credit()).balance("USD"))
    """

    def __init__(self, path: str | None = None, *, timeout: float = 10.0, credit_timeout: float = 45.0,
                 connect_timeout: float = 5.0, retry: RetryPolicy = RetryPolicy()) -> None:
        self.path = path or _wire.default_socket_path()
        self.timeout = timeout
        self.credit_timeout = credit_timeout
        self.connect_timeout = connect_timeout
        self.retry = retry
        self._connection: _AsyncConnection | None = None
        self._number = 0
        self._lock = asyncio.Lock()

    async def connect(self) -> Hello:
        if self._connection is None:
            self._connection = await _AsyncConnection.open(self.path, self.connect_timeout)
            self._number = 0
        return self._connection.hello

    async def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _exchange(self, cmd: str, args: dict[str, Any], timeout: float, request_id: str | None) -> Any:
        await self.connect()
        connection = self._connection
        assert connection is not None
        self._number += 1
        number = self._number
        try:
            deadline = time.monotonic() + timeout
            await connection.send(_wire.encode_request(cmd, number, args), timeout)
            while True:
                message = await connection.read_message(deadline)
                if message is None:
                    raise ReplyTimeout(f"no reply to {cmd!r} within {timeout} s")
                done, result = _wire.reply_result(message, number, request_id)
                if done:
                    return result
        except _wire.ConnectionLevelError as cut:
            await self.close()
            raise cut.error from None
        except (ConnectionFailed, ProtocolError, asyncio.CancelledError):
            # Cancelled mid-request: the reply may still come, so this connection is spent.
            await self.close()
            raise

    async def _call(self, cmd: str, args: dict[str, Any], *, timeout: float | None = None,
                    request_id: str | None = None, retry: bool = True) -> Any:
        async with self._lock:
            attempts = self.retry.attempts if retry else 1
            for attempt in range(attempts):
                try:
                    return await self._exchange(cmd, args, timeout or self.timeout, request_id)
                except CoinMechError as error:
                    _wire.with_request_id(error, request_id)
                    if attempt + 1 >= attempts or not _wire.is_retriable(error):
                        raise
                await asyncio.sleep(self.retry.pause(attempt))
            raise AssertionError("unreachable")

    async def request(self, cmd: str, *, retry: bool = False, timeout: float | None = None, **args: Any) -> Any:
        return await self._call(cmd, args, timeout=timeout, retry=retry)

    async def status(self) -> dict[str, Any]:
        return await self._call("status", {})

    async def totals(self) -> Totals:
        return parse_totals(await self._call("totals", {}))

    async def events(self, since: int = 0, limit: int = 100) -> EventsPage:
        return parse_events_page(await self._call("events", {"since": since, "limit": limit}))

    async def all_events(self, since: int = 0, page: int = 1000) -> AsyncIterator[Event]:
        while True:
            result = await self.events(since, page)
            for event in result.events:
                yield event
            if not result.events or result.events[-1].seq >= result.last_seq:
                return
            since = result.events[-1].seq

    async def credit(self) -> Credit:
        return parse_credit(await self._call("credit", {}))

    async def spend(self, amount_minor: int, *, item: str | None = None, currency: str | None = None,
                    request_id: str | None = None) -> Approved | Refused:
        request_id = _wire.check_request_id(request_id or _wire.new_request_id())
        args = {"amount_minor": _wire.check_amount(amount_minor), "request_id": request_id,
                "item": _wire.check_item(item), "currency": _wire.check_currency(currency)}
        result = parse_credit_result(await self._call("spend", args, timeout=self.credit_timeout,
                                                      request_id=request_id), request_id)
        return _expect(result, (Approved, Refused), "spend")

    async def refund(self, request_id: str) -> Refunded:
        request_id = _wire.check_request_id(request_id)
        result = parse_credit_result(await self._call("refund", {"request_id": request_id},
                                                      timeout=self.credit_timeout, request_id=request_id), request_id)
        return _expect(result, (Refunded,), "refund")

    async def cancel(self, request_id: str | None = None) -> Returned | Kept:
        request_id = _wire.check_request_id(request_id or _wire.new_request_id())
        result = parse_credit_result(await self._call("cancel", {"request_id": request_id},
                                                      timeout=self.credit_timeout, request_id=request_id), request_id)
        return _expect(result, (Returned, Kept), "cancel")

    def watch(self, resume_file: str | None = None, *, since: int | None = None, pending: bool = False,
              reconnect: bool = True, on_reconnect: Callable[[BaseException | None], None] | None = None) -> AsyncWatch:
        return AsyncWatch(self.path, resume_file=resume_file, since=since, pending=pending, reconnect=reconnect,
                          connect_timeout=self.connect_timeout, retry=self.retry, on_reconnect=on_reconnect)


class AsyncWatch:
    """The asyncio form of ``coinmech.Watch`` (same resume and commit rules).

        async with client.watch("/var/lib/kiosk/coinmech.seq") as events:
            async for event in events:
                await handle(event)
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
        self.last_seq: int | None = stored if stored is not None else since
        self.committed_seq: int | None = stored
        self.hello: Hello | None = None
        self.subscription: SubscribeReply | None = None
        self.reconnects = 0
        self.overflows = 0
        self._connection: _AsyncConnection | None = None
        self._delivered: int | None = None
        self._connections = 0
        self._failures = 0

    async def commit(self) -> None:
        """Record the last delivered event as handled (written off the event loop's thread)."""
        if self._delivered is not None:
            seq = self._delivered
            if self.resume is not None:
                await asyncio.to_thread(self.resume.store, seq)
            self.committed_seq = seq
            if self._delivered == seq:
                self._delivered = None

    async def _open(self, deadline: float | None) -> None:
        timeout = self.connect_timeout
        if deadline is not None:
            timeout = max(0.001, min(timeout, deadline - time.monotonic()))
        connection = await _AsyncConnection.open(self.path, timeout)
        try:
            self.hello = connection.hello
            if self.last_seq is None:
                self.last_seq = connection.hello.seq
                if self.resume is not None and self.committed_seq is None:
                    await asyncio.to_thread(self.resume.store, connection.hello.seq)
                    self.committed_seq = connection.hello.seq
            since = self.last_seq
            await connection.send(_wire.encode_request("subscribe", 1, {"since": since, "pending": self.pending}),
                                  timeout)
            reply_deadline = time.monotonic() + timeout
            while True:
                message = await connection.read_message(reply_deadline)
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

    async def open(self) -> AsyncWatch:
        """Connect and subscribe now (else the first ``poll`` does)."""
        if self._connection is None:
            await self._open(None)
        return self

    async def poll(self, timeout: float | None = None) -> Event | None:
        """The next event, or None when none came within ``timeout`` seconds."""
        await self.commit()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                if self._connection is None:
                    await self._open(deadline)
                    self._failures = 0
                message = await self._connection.read_message(deadline)
            except (ConnectionFailed, Unavailable) as error:
                self._drop()
                if not self.reconnect or not _wire.is_retriable(error):
                    raise
                if self.on_reconnect is not None:
                    self.on_reconnect(error)
                pause = self.retry.pause(self._failures)
                self._failures += 1
                if deadline is not None and deadline - time.monotonic() <= pause:
                    await asyncio.sleep(max(0.0, deadline - time.monotonic()))
                    return None
                await asyncio.sleep(pause)
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
                    continue
                self.last_seq = seq
                self._delivered = seq
                return event
            if kind == "overflow":
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

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> Event:
        event = await self.poll(None)
        assert event is not None
        return event

    async def close(self) -> None:
        self._drop()

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        try:
            if exc_type is None:
                await self.commit()
        finally:
            await self.close()
