"""What the blocking and the asyncio client share: request encoding, line decoding, reply
matching, argument checks and the retry policy. No I/O here."""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

from .errors import CoinMechError, CommandError, ConnectionFailed, ProtocolError, Unavailable, error_for

DEFAULT_SOCKET = "/run/coinmech/coinmechd.sock"
#: The daemon reads request lines of at most this many bytes (newline excluded).
MAX_REQUEST_BYTES = 4096
#: A line from the daemon longer than this is refused (an `events` page of 1000 events is far less).
MAX_LINE_BYTES = 64 * 1024 * 1024
#: Amounts the credit commands take, in minor units.
AMOUNT_RANGE = range(1, 100_001)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def default_socket_path() -> str:
    """$COINMECH_SOCKET, else /run/coinmech/coinmechd.sock (as coinctl)."""
    return os.environ.get("COINMECH_SOCKET") or DEFAULT_SOCKET


def new_request_id() -> str:
    """A fresh request id: a UUID4 (36 characters of the allowed set)."""
    return str(uuid.uuid4())


def check_request_id(request_id: str) -> str:
    if not isinstance(request_id, str) or not _REQUEST_ID.fullmatch(request_id):
        raise ValueError(f"a request id is 1–64 characters of A-Z a-z 0-9 . _ : -, not {request_id!r}")
    return request_id


def check_amount(amount_minor: int) -> int:
    if isinstance(amount_minor, bool) or not isinstance(amount_minor, int) or amount_minor not in AMOUNT_RANGE:
        raise ValueError(f"amount_minor is a whole number of minor units from 1 to 100000, not {amount_minor!r}")
    return amount_minor


def check_item(item: str | None) -> str | None:
    if item is None:
        return None
    if not isinstance(item, str) or not 1 <= len(item.encode()) <= 64 or not item.isprintable():
        raise ValueError(f"an item is 1–64 bytes of printable text, not {item!r}")
    return item


def check_currency(currency: str | None) -> str | None:
    if currency is None:
        return None
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        raise ValueError(f"a currency is an ISO 4217 code such as 'USD', not {currency!r}")
    return currency


def encode_request(cmd: str, request_number: int, args: Mapping[str, Any]) -> bytes:
    """One request line: {"cmd", "id", **args} without None values, newline-terminated."""
    request: dict[str, Any] = {"cmd": cmd, "id": request_number}
    request.update((k, v) for k, v in args.items() if v is not None)
    line = json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(line) > MAX_REQUEST_BYTES:
        raise ValueError(f"the request is {len(line)} bytes; the daemon reads at most {MAX_REQUEST_BYTES}")
    return line + b"\n"


def decode_line(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ProtocolError(f"the daemon sent a line that is not JSON ({error}): {line[:200]!r}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"the daemon sent a line that is not a JSON object: {line[:200]!r}")
    return message


class ConnectionLevelError(Exception):
    """Carries a reply with ``id: null`` and ``ok: false``: the daemon refused or cut off the
    connection itself (a limit, idle time); it closes it next."""

    def __init__(self, error: CommandError) -> None:
        super().__init__(str(error))
        self.error = error


def reply_result(message: Mapping[str, Any], request_number: int, request_id: str | None) -> tuple[bool, Any]:
    """Classify a message read while waiting for reply ``request_number``.

    Returns (True, result) for our reply, (False, None) for a message to skip (an event,
    a reply to another request). Raises the CommandError of an error reply to us, or
    ConnectionLevelError for an error addressed to the connection (id null)."""
    if message.get("type") != "reply":
        return False, None
    if message.get("id") is None and message.get("ok") is False:
        raise ConnectionLevelError(_error(message, request_id))
    if message.get("id") != request_number:
        return False, None
    if message.get("ok") is True:
        return True, message.get("result")
    raise _error(message, request_id)


def _error(message: Mapping[str, Any], request_id: str | None) -> CommandError:
    error = message.get("error")
    if not isinstance(error, Mapping):
        raise ProtocolError(f"an error reply without an error object: {dict(message)!r:.300}")
    return error_for(str(error.get("code", "")), str(error.get("message", "")), request_id)


class LineBuffer:
    """Bytes in, complete lines out (for the blocking client)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) > MAX_LINE_BYTES and b"\n" not in self._buffer:
            raise ProtocolError(f"the daemon sent a line longer than {MAX_LINE_BYTES} bytes")

    def next_line(self) -> bytes | None:
        index = self._buffer.find(b"\n")
        if index < 0:
            return None
        line = bytes(self._buffer[:index])
        del self._buffer[:index + 1]
        return line


@dataclass(frozen=True)
class RetryPolicy:
    """How often a request is asked again after a lost connection, a lost reply or
    ``unavailable``: ``attempts`` in all, waiting ``delay`` × 2^n (at most ``max_delay``)
    between them. Credit commands are asked again with the same request id."""
    attempts: int = 4
    delay: float = 0.2
    max_delay: float = 5.0

    def pause(self, attempt: int) -> float:
        return min(self.max_delay, self.delay * (2 ** attempt))


def is_retriable(error: BaseException) -> bool:
    """A failure after which asking again (same request id) may succeed."""
    if isinstance(error, ConnectionFailed):
        return error.retriable
    return isinstance(error, Unavailable)


def with_request_id(error: CoinMechError, request_id: str | None) -> CoinMechError:
    if request_id is not None and error.request_id is None:
        error.request_id = request_id
    return error


def transport_error(error: BaseException, path: str) -> ConnectionFailed:
    """A socket failure as ConnectionFailed, saying what it means."""
    if isinstance(error, FileNotFoundError):
        text = f"no socket at {path}: is coinmechd running?"
    elif isinstance(error, ConnectionRefusedError):
        text = f"{path}: connection refused: is coinmechd running?"
    elif isinstance(error, PermissionError):
        failure = ConnectionFailed(f"{path}: permission denied (the socket's group and mode decide who may connect)")
        failure.retriable = False
        return failure
    else:
        text = f"{path}: {error or type(error).__name__}"
    return ConnectionFailed(text)
