"""Typed results of the daemon's commands.

Every result keeps the reply's object as ``raw`` (fields a newer daemon adds are there).
The credit commands' results (/work/notes/credit-protocol.md):

    spend  → Approved | Refused          (refused: credit short; nothing recorded)
    refund → Refunded
    cancel → Returned | Kept             (kept: no device here pays change)

A state this library does not know comes back as a plain ``CreditResult``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .errors import ProtocolError, ProtocolVersionError
from .events import Event, parse_event

__all__ = [
    "PROTOCOL", "Hello", "TotalsRow", "Totals", "CreditAccount", "Credit", "EventsPage", "SubscribeReply",
    "CreditResult", "Approved", "Refused", "Refunded", "Returned", "Kept", "Payout",
    "parse_hello", "parse_totals", "parse_credit", "parse_events_page", "parse_credit_result",
]

#: The client protocol version this library speaks.
PROTOCOL = 2


def _need(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ProtocolError(f"{what}: {key!r} missing or not {getattr(kind, '__name__', kind)}: {dict(obj)!r:.300}")
    return value


def _object(obj: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise ProtocolError(f"{what} is not a JSON object: {obj!r:.300}")
    return obj


@dataclass(frozen=True)
class Hello:
    """The daemon's first line: who it is and the last recorded event's seq."""
    protocol: int
    daemon: str
    version: str
    seq: int
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def parse_hello(obj: Any) -> Hello:
    obj = _object(obj, "the daemon's first line")
    if obj.get("type") != "hello":
        raise ProtocolError(f"the daemon's first line is not a hello: {dict(obj)!r:.300}")
    if obj.get("protocol") != PROTOCOL:
        raise ProtocolVersionError(obj.get("protocol"))
    return Hello(protocol=PROTOCOL, daemon=str(obj.get("daemon", "")), version=str(obj.get("version", "")),
                 seq=_need(obj, "seq", int, "hello"), raw=dict(obj))


@dataclass(frozen=True)
class TotalsRow:
    currency: str
    denomination: str
    count: int
    value_minor: int
    weight_g: float | None = None


@dataclass(frozen=True)
class Totals:
    """``current`` (the cash box since the last collect) and ``lifetime``; only credited coins.
    ``pending``/``unconfirmed``: accepted coins not (yet) money, for audit."""
    current: list[TotalsRow]
    lifetime: list[TotalsRow]
    current_value: dict[str, int]
    lifetime_value: dict[str, int]
    pending: list[TotalsRow] = field(default_factory=list)
    unconfirmed: list[TotalsRow] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def _rows(obj: Mapping[str, Any], key: str) -> list[TotalsRow]:
    rows = obj.get(key) or []
    if not isinstance(rows, list):
        raise ProtocolError(f"totals: {key!r} is not a list")
    out = []
    for row in rows:
        row = _object(row, f"a row of totals' {key!r}")
        out.append(TotalsRow(currency=_need(row, "currency", str, "totals row"),
                             denomination=_need(row, "denomination", str, "totals row"),
                             count=_need(row, "count", int, "totals row"),
                             value_minor=_need(row, "value_minor", int, "totals row"),
                             weight_g=row.get("weight_g")))
    return out


def parse_totals(obj: Any) -> Totals:
    obj = _object(obj, "the totals")
    return Totals(current=_rows(obj, "current"), lifetime=_rows(obj, "lifetime"),
                  current_value=dict(obj.get("current_value") or {}), lifetime_value=dict(obj.get("lifetime_value") or {}),
                  pending=_rows(obj, "pending"), unconfirmed=_rows(obj, "unconfirmed"), raw=dict(obj))


@dataclass(frozen=True)
class CreditAccount:
    account: str
    currency: str
    balance_minor: int
    moved_seq: int | None = None


@dataclass(frozen=True)
class Credit:
    """The customer's credit at the cabinet: one account per currency."""
    source: str | None
    accounts: list[CreditAccount]
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def balance(self, currency: str | None = None) -> int:
        """The balance in ``currency`` (any currency's when there is one account), 0 if none."""
        for account in self.accounts:
            if currency is None or account.currency == currency:
                return account.balance_minor
        return 0


def parse_credit(obj: Any) -> Credit:
    obj = _object(obj, "the credit")
    accounts = obj.get("accounts") or []
    if not isinstance(accounts, list):
        raise ProtocolError("credit: 'accounts' is not a list")
    out = []
    for a in accounts:
        a = _object(a, "a credit account")
        out.append(CreditAccount(account=str(a.get("account", "")), currency=_need(a, "currency", str, "credit account"),
                                 balance_minor=_need(a, "balance_minor", int, "credit account"),
                                 moved_seq=a.get("moved_seq")))
    return Credit(source=obj.get("source"), accounts=out, raw=dict(obj))


@dataclass(frozen=True)
class EventsPage:
    """A page of recorded events (``seq > since``, oldest first) and the ledger's last seq."""
    events: list[Event]
    last_seq: int


def parse_events_page(obj: Any) -> EventsPage:
    obj = _object(obj, "the events reply")
    events = _need(obj, "events", list, "events reply")
    return EventsPage(events=[parse_event(e) for e in events], last_seq=_need(obj, "last_seq", int, "events reply"))


@dataclass(frozen=True)
class SubscribeReply:
    since: int
    seq: int
    pending: bool


# Credit results ---------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class CreditResult:
    """A credit command's answer. ``state`` names it; subclasses carry its fields."""
    state: str
    request_id: str
    currency: str | None = None
    balance_minor: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Approved(CreditResult):
    """The sale is approved and recorded: ``amount_minor`` left the credit (``seq``).
    ``repeated``: the daemon answered from its ledger (an earlier attempt went through)."""
    amount_minor: int
    item: str | None = None
    seq: int | None = None
    repeated: bool = False


@dataclass(frozen=True, kw_only=True)
class Refused(CreditResult):
    """Not enough credit (``reason`` "credit_short"): nothing recorded, ``balance_minor`` is
    what there is. The request id may be used again."""
    reason: str
    amount_minor: int | None = None


@dataclass(frozen=True, kw_only=True)
class Refunded(CreditResult):
    """A sale put back: ``amount_minor`` returned to the credit."""
    amount_minor: int
    seq: int | None = None
    repeated: bool = False


@dataclass(frozen=True)
class Payout:
    """The payout that paid the credit back as change (docs/PROTOCOL.md, ``payout``)."""
    state: str                  # done | partial | open
    paid_minor: int | None
    debt_minor: int | None
    coins: list[dict[str, Any]]
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Returned(CreditResult):
    """The credit was paid back as change; ``payout`` says what was paid, ``kept_minor`` what
    stays as credit."""
    kept_minor: int | None = None
    payout: Payout | None = None


@dataclass(frozen=True, kw_only=True)
class Kept(CreditResult):
    """Nothing was paid: no device here pays change (``reason``); the credit stays."""
    reason: str | None = None


def _payout(obj: Any) -> Payout | None:
    if not isinstance(obj, Mapping):
        return None
    coins = obj.get("coins")
    return Payout(state=str(obj.get("state", "")), paid_minor=obj.get("paid_minor"), debt_minor=obj.get("debt_minor"),
                  coins=list(coins) if isinstance(coins, list) else [], raw=dict(obj))


def parse_credit_result(obj: Any, request_id: str) -> CreditResult:
    """A ``spend``, ``refund`` or ``cancel`` result. The request id must be the one sent."""
    obj = _object(obj, "the credit command's result")
    state = _need(obj, "state", str, "credit result")
    got = obj.get("request_id", request_id)
    if got != request_id:
        raise ProtocolError(f"the daemon answered request id {got!r} to request id {request_id!r}")
    common = dict(state=state, request_id=request_id, currency=obj.get("currency"),
                  balance_minor=obj.get("balance_minor"), raw=dict(obj))
    what = f"a {state!r} result"
    if state == "approved":
        return Approved(**common, amount_minor=_need(obj, "amount_minor", int, what), item=obj.get("item"),
                        seq=obj.get("seq"), repeated=bool(obj.get("repeated", False)))
    if state == "refused":
        return Refused(**common, reason=str(obj.get("reason", "")), amount_minor=obj.get("amount_minor"))
    if state == "refunded":
        return Refunded(**common, amount_minor=_need(obj, "amount_minor", int, what), seq=obj.get("seq"),
                        repeated=bool(obj.get("repeated", False)))
    if state == "returned":
        return Returned(**common, kept_minor=obj.get("kept_minor"), payout=_payout(obj.get("payout")))
    if state == "kept":
        return Kept(**common, reason=obj.get("reason"))
    return CreditResult(**common)
