"""coinmech: a client library for coinmechd, the CoinMech coin-mech daemon.

Speaks the daemon's client protocol 2 over its Unix socket (docs/PROTOCOL.md): typed events,
``watch()`` with a resume file, the read commands and the credit commands with safe retries,
in a blocking (``Client``) and an asyncio (``AsyncClient``) form. Standard library only.
"""

from ._wire import DEFAULT_SOCKET, RetryPolicy, new_request_id
from .aio import AsyncClient, AsyncWatch
from .client import Client, Watch
from .errors import (BadJSON, BadRequest, CoinMechError, CommandError, ConnectionFailed, Failed, Forbidden,
                     LineTooLong, ProtocolError, ProtocolVersionError, ReplyTimeout, Unavailable, UnknownCommand,
                     error_for)
from .events import (KNOWN_KINDS, CoinEvent, CoinReturnedEvent, CoinUnconfirmedEvent, CreditEvent, DecisionEvent,
                     Event, parse_event)
from .resume import ResumeFile, ResumeFileError
from .results import (PROTOCOL, Approved, Credit, CreditAccount, CreditResult, EventsPage, Hello, Kept, Payout,
                      Refunded, Refused, Returned, SubscribeReply, Totals, TotalsRow)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SOCKET", "PROTOCOL", "RetryPolicy", "new_request_id",
    "Client", "Watch", "AsyncClient", "AsyncWatch",
    "CoinMechError", "ConnectionFailed", "ReplyTimeout", "ProtocolError", "ProtocolVersionError", "CommandError",
    "BadJSON", "BadRequest", "UnknownCommand", "LineTooLong", "Forbidden", "Unavailable", "Failed", "error_for",
    "Event", "DecisionEvent", "CoinEvent", "CoinReturnedEvent", "CoinUnconfirmedEvent", "CreditEvent",
    "parse_event", "KNOWN_KINDS",
    "ResumeFile", "ResumeFileError",
    "Hello", "Totals", "TotalsRow", "Credit", "CreditAccount", "EventsPage", "SubscribeReply",
    "CreditResult", "Approved", "Refused", "Refunded", "Returned", "Kept", "Payout",
]
