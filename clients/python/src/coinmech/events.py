"""Ledger events as typed, immutable dataclasses (docs/PROTOCOL.md, "Events").

``parse_event`` turns an event object from ``subscribe`` or ``events`` into an ``Event``, or a
subclass for the kinds a kiosk acts on. A kind this library does not know is kept as a plain
``Event`` (never an exception), and so is every field it does not know (``extra``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from .errors import ProtocolError

__all__ = [
    "Event", "DecisionEvent", "CoinEvent", "CoinReturnedEvent", "CoinUnconfirmedEvent", "CreditEvent",
    "parse_event", "KNOWN_KINDS",
]

#: Every kind docs/PROTOCOL.md lists (a daemon may add more: those are plain ``Event``s).
KNOWN_KINDS = frozenset("""
    decision coin coin_returned coin_unconfirmed startup shutdown source_connected source_lost
    mech_power_up mech_session mech_status inhibit collect ledger_recovered late_answer reload
    reload_failed quarantined quarantine_lifted teach_start teach_commit teach_abort
    payout_requested payout_dispensing payout_done payout_partial payout_failed tubes_counted
    inventory_paid inventory_refilled inventory_set coin_uncredited cctalk_error cctalk_backlog
    cctalk_lost acceptor_identified credit_opened credit_spent credit_refunded credit_returned
    credit_expired
""".split())


@dataclass(frozen=True, kw_only=True, repr=False)
class Event:
    """One recorded event. ``seq`` orders every event of the ledger; only ``seq``, ``time`` and
    ``kind`` are always there, the other fields are None where the event has none."""

    seq: int
    time: float
    kind: str
    source: str | None = None
    currency: str | None = None
    value_minor: int | None = None
    denomination: str | None = None
    detail: dict[str, Any] | None = None
    epoch: int | None = None
    device_seq: int | None = None
    diameter_mm: float | None = None
    weight_g: float | None = None
    thickness_mm: float | None = None
    channel: int | None = None
    conductivity_low_iacs: float | None = None
    conductivity_high_iacs: float | None = None
    permeability: float | None = None
    verdict: str | None = None
    link: str | None = None
    reason: str | None = None
    message: str | None = None
    chain_generation: int | None = None
    state: str | None = None
    ref_seq: int | None = None
    collected: list[dict[str, Any]] | None = None
    unconfirmed: list[dict[str, Any]] | None = None
    #: Fields this version of the library does not know, as sent.
    extra: dict[str, Any] = field(default_factory=dict)
    #: The event object exactly as the daemon sent it.
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    #: The kinds a subclass stands for (the base class: any).
    KINDS: ClassVar[frozenset[str]] = frozenset()

    def __repr__(self) -> str:
        shown = [f"seq={self.seq}", f"kind={self.kind!r}"]
        for name in _FIELDS:
            value = getattr(self, name)
            if name not in ("seq", "kind", "time") and value is not None:
                shown.append(f"{name}={value!r}")
        if self.extra:
            shown.append(f"extra={self.extra!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    @property
    def is_money(self) -> bool:
        """True for a ``coin`` event: the mech stored the coin, the customer has the credit."""
        return self.kind == "coin"

    @property
    def is_known_kind(self) -> bool:
        return self.kind in KNOWN_KINDS


@dataclass(frozen=True, kw_only=True, repr=False)
class DecisionEvent(Event):
    """The chain's verdict on a reading. An accept is *not* money (pending until ``coin``)."""
    KINDS: ClassVar[frozenset[str]] = frozenset({"decision"})

    @property
    def accepted(self) -> bool:
        return self.verdict == "accept"


@dataclass(frozen=True, kw_only=True, repr=False)
class CoinEvent(Event):
    """Money: the mech stored the accepted coin ``ref_seq``; ``value_minor`` in ``currency``."""
    KINDS: ClassVar[frozenset[str]] = frozenset({"coin"})


@dataclass(frozen=True, kw_only=True, repr=False)
class CoinReturnedEvent(Event):
    """An accepted coin the mech gave back after all (``message`` says how): no credit."""
    KINDS: ClassVar[frozenset[str]] = frozenset({"coin_returned"})


@dataclass(frozen=True, kw_only=True, repr=False)
class CoinUnconfirmedEvent(Event):
    """An accepted coin nobody can say the fate of: never credit, audit only."""
    KINDS: ClassVar[frozenset[str]] = frozenset({"coin_unconfirmed"})


@dataclass(frozen=True, kw_only=True, repr=False)
class CreditEvent(Event):
    """The customer's credit moved: opened, spent (a sale), refunded, returned (paid back as
    change) or expired. ``value_minor`` is the amount moved; the rest is in ``detail``."""
    KINDS: ClassVar[frozenset[str]] = frozenset(
        {"credit_opened", "credit_spent", "credit_refunded", "credit_returned", "credit_expired"})

    def _detail(self, key: str) -> Any:
        return (self.detail or {}).get(key)

    @property
    def request_id(self) -> str | None:
        return self._detail("request_id")

    @property
    def account(self) -> str | None:
        return self._detail("account")

    @property
    def by(self) -> str | None:
        return self._detail("by")

    @property
    def item(self) -> str | None:
        return self._detail("item")

    @property
    def balance_minor(self) -> int | None:
        """The balance the move left (the ledger writes it as a string of digits)."""
        value = self._detail("balance_minor")
        if value is None:
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            return None


_FIELDS = {f.name: f for f in dataclasses.fields(Event) if f.name not in ("extra", "raw")}
_CLASS_BY_KIND: dict[str, type[Event]] = {
    kind: cls for cls in (DecisionEvent, CoinEvent, CoinReturnedEvent, CoinUnconfirmedEvent, CreditEvent)
    for kind in cls.KINDS
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_event(obj: Mapping[str, Any]) -> Event:
    """An event object from the daemon as an ``Event`` (or subclass by kind).

    Raises ``ProtocolError`` only when the object is not an event at all (not an object, or
    no integer ``seq``, numeric ``time`` or string ``kind``); unknown kinds and fields are kept.
    """
    if not isinstance(obj, Mapping):
        raise ProtocolError(f"an event is not a JSON object: {obj!r:.200}")
    seq, time, kind = obj.get("seq"), obj.get("time"), obj.get("kind")
    if not _is_int(seq):
        raise ProtocolError(f"an event without an integer seq: {dict(obj)!r:.200}")
    if not (_is_int(time) or isinstance(time, float)):
        raise ProtocolError(f"an event without a numeric time: {dict(obj)!r:.200}")
    if not isinstance(kind, str):
        raise ProtocolError(f"an event without a string kind: {dict(obj)!r:.200}")
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        (known if key in _FIELDS else extra)[key] = value
    known["time"] = float(time)
    cls = _CLASS_BY_KIND.get(kind, Event)
    return cls(**known, extra=extra, raw=dict(obj))
