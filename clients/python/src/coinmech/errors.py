"""Exceptions: one class per error code of the daemon, and the client's own failures.

    CoinMechError
    ├── ConnectionFailed        the socket could not be reached, or the connection was lost
    │   └── ReplyTimeout        no reply in time (the request may or may not have been done)
    ├── ProtocolError           the daemon said something this client cannot read
    │   └── ProtocolVersionError  the daemon speaks another protocol than 2
    └── CommandError            the daemon refused a request: .code and .message
        ├── BadJSON             bad_json
        ├── BadRequest          bad_request
        ├── UnknownCommand      unknown_command
        ├── LineTooLong         line_too_long
        ├── Forbidden           forbidden
        ├── Unavailable         unavailable
        └── Failed              failed

A code this client does not know yet is raised as a plain ``CommandError``.
Every exception of a credit command carries the ``request_id`` it was sent with, so the
caller can ask again later with the same id (the daemon answers a repeat from its ledger).
"""

from __future__ import annotations

__all__ = [
    "CoinMechError", "ConnectionFailed", "ReplyTimeout", "ProtocolError", "ProtocolVersionError",
    "CommandError", "BadJSON", "BadRequest", "UnknownCommand", "LineTooLong", "Forbidden",
    "Unavailable", "Failed", "error_for",
]


class CoinMechError(Exception):
    """Everything this library raises."""

    #: The request id of the credit command that failed (None for other commands).
    request_id: str | None = None


class ConnectionFailed(CoinMechError):
    """The daemon's socket cannot be reached, or the connection was lost before the reply."""

    #: False when asking again cannot help (permission denied on the socket).
    retriable: bool = True


class ReplyTimeout(ConnectionFailed):
    """No reply within the timeout. The request may have been carried out: ask again with the
    same request id to learn its outcome."""


class ProtocolError(CoinMechError):
    """A line from the daemon that is not the protocol (not JSON, a missing field, …)."""


class ProtocolVersionError(ProtocolError):
    """The daemon speaks another protocol version than this client (2)."""

    def __init__(self, protocol: object, message: str | None = None) -> None:
        self.protocol = protocol
        super().__init__(message or f"coinmechd speaks protocol {protocol!r}; this client speaks protocol 2 "
                                    "(upgrade the client or the daemon)")


class CommandError(CoinMechError):
    """The daemon answered a request with ``{"ok": false, "error": {"code", "message"}}``."""

    #: The daemon's error code this class stands for (None: the base class, any code).
    CODE: str | None = None

    def __init__(self, code: str, message: str, request_id: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.request_id = request_id


class BadJSON(CommandError):
    """bad_json: the line was not a JSON object."""
    CODE = "bad_json"


class BadRequest(CommandError):
    """bad_request: a missing or wrong argument; for credit commands also an id reused for
    another amount or item, or a refund of an id never approved."""
    CODE = "bad_request"


class UnknownCommand(CommandError):
    """unknown_command: the daemon does not know the command (an older daemon)."""
    CODE = "unknown_command"


class LineTooLong(CommandError):
    """line_too_long: the request was longer than 4096 bytes."""
    CODE = "line_too_long"


class Forbidden(CommandError):
    """forbidden: a control command from a user not in socket.control_users/control_groups."""
    CODE = "forbidden"


class Unavailable(CommandError):
    """unavailable: the ledger cannot be used right now, the daemon is stopping, a payout is
    under way, or a connection limit; asking again later (same request id) is safe."""
    CODE = "unavailable"


class Failed(CommandError):
    """failed: a reload or teach command refused; the message says why."""
    CODE = "failed"


_BY_CODE: dict[str, type[CommandError]] = {
    cls.CODE: cls for cls in (BadJSON, BadRequest, UnknownCommand, LineTooLong, Forbidden, Unavailable, Failed)
}


def error_for(code: str, message: str, request_id: str | None = None) -> CommandError:
    """The exception for an error reply's code (a plain CommandError for a code not known here)."""
    return _BY_CODE.get(code, CommandError)(code, message, request_id)
