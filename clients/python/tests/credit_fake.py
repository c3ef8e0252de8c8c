"""The credit commands as the contract describes them, for the fake daemon: a balance, sales
approved once per request id (a repeat answered from the "ledger"), refunds and cancels."""

from __future__ import annotations

from typing import Any

from .fake_daemon import Error


class CreditBook:
    def __init__(self, balance: int = 0, currency: str = "USD", pays_change: bool = True) -> None:
        self.balance = balance
        self.currency = currency
        self.pays_change = pays_change
        self.seq = 400
        self.sales: dict[str, dict[str, Any]] = {}
        self.refunds: dict[str, dict[str, Any]] = {}
        self.cancels: dict[str, dict[str, Any]] = {}
        self.charged = 0  # times money actually moved for a sale

    def answer(self, request: dict[str, Any]) -> Any:
        cmd = request.get("cmd")
        if cmd == "credit":
            return {"source": "coinmech0", "accounts": [{"account": "coinmech0", "currency": self.currency,
                                                         "balance_minor": self.balance, "moved_seq": self.seq}]}
        if cmd == "spend":
            rid, amount, item = request.get("request_id"), request.get("amount_minor"), request.get("item")
            if not isinstance(rid, str) or not isinstance(amount, int):
                return Error("bad_request", "\"request_id\" and \"amount_minor\" are required")
            if rid in self.sales:
                first = self.sales[rid]
                if first["amount_minor"] != amount or first.get("item") != item:
                    return Error("bad_request", f"request id '{rid}' was a sale of another amount or item")
                return dict(first, repeated=True)
            if amount > self.balance:
                return {"state": "refused", "reason": "credit_short", "request_id": rid, "amount_minor": amount,
                        "currency": self.currency, "balance_minor": self.balance}
            self.balance -= amount
            self.seq += 1
            self.charged += 1
            answer = {"state": "approved", "request_id": rid, "amount_minor": amount, "currency": self.currency,
                      "balance_minor": self.balance, "seq": self.seq, "repeated": False}
            if item is not None:
                answer["item"] = item
            self.sales[rid] = answer
            return answer
        if cmd == "refund":
            rid = request.get("request_id")
            if rid in self.refunds:
                return dict(self.refunds[rid], repeated=True)
            if rid not in self.sales:
                return Error("bad_request", f"no sale approved with request id '{rid}'")
            self.balance += self.sales[rid]["amount_minor"]
            self.seq += 1
            self.refunds[rid] = {"state": "refunded", "request_id": rid, "amount_minor": self.sales[rid]["amount_minor"],
                                 "currency": self.currency, "balance_minor": self.balance, "seq": self.seq,
                                 "repeated": False}
            return self.refunds[rid]
        if cmd == "cancel":
            rid = request.get("request_id")
            if rid in self.cancels:
                return self.cancels[rid]
            if not self.pays_change:
                return {"state": "kept", "request_id": rid, "currency": self.currency, "balance_minor": self.balance,
                        "reason": "no device here pays change: the credit stays"}
            paid, self.balance = self.balance, 0
            self.cancels[rid] = {"state": "returned", "request_id": rid, "currency": self.currency, "kept_minor": 0,
                                 "balance_minor": 0, "payout": {"state": "done", "paid_minor": paid, "debt_minor": 0,
                                                                "coins": []}}
            return self.cancels[rid]
        return Error("unknown_command", f"unknown command '{cmd}'")
