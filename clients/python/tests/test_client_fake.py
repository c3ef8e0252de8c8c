"""The blocking client against the in-process fake daemon: what goes on the wire, what comes
back, and the retries that reuse a request id."""

from __future__ import annotations

import json
import socket
import unittest
import uuid

import coinmech
from coinmech import RetryPolicy

from .credit_fake import CreditBook
from .fake_daemon import Drop, Error, FakeDaemon, FakeLedger, Raw, Silent, make_events

FAST = RetryPolicy(attempts=4, delay=0.01, max_delay=0.05)


class ClientTestCase(unittest.TestCase):
    def start(self, handler=None, **options) -> FakeDaemon:
        daemon = FakeDaemon(handler, **options)
        self.addCleanup(daemon.close)
        return daemon

    def client(self, daemon: FakeDaemon, **options) -> coinmech.Client:
        options.setdefault("retry", FAST)
        options.setdefault("timeout", 2.0)
        options.setdefault("credit_timeout", 2.0)
        client = coinmech.Client(daemon.path, **options)
        self.addCleanup(client.close)
        return client


class ConnectTests(ClientTestCase):
    def test_hello(self):
        daemon = self.start(ledger=FakeLedger(make_events(41)))
        hello = self.client(daemon).connect()
        self.assertEqual((hello.protocol, hello.seq, hello.daemon), (2, 41, "coinmechd"))

    def test_another_protocol_is_refused(self):
        daemon = self.start(protocol=3)
        with self.assertRaises(coinmech.ProtocolVersionError) as caught:
            self.client(daemon).status()
        self.assertIn("protocol 3", str(caught.exception))
        self.assertEqual(daemon.commands("status"), [], "nothing is asked of a daemon of another protocol")

    def test_limit_refusal_before_hello_is_unavailable(self):
        daemon = self.start(refuse={"type": "reply", "id": None, "ok": False, "error": {
            "code": "unavailable", "message": "the daemon serves 64 connections, its limit"}})
        with self.assertRaises(coinmech.Unavailable) as caught:
            self.client(daemon, retry=RetryPolicy(attempts=2, delay=0.01)).status()
        self.assertIn("64 connections", caught.exception.message)
        self.assertEqual(daemon.connections, 2, "unavailable is asked again, then raised")

    def test_no_daemon(self):
        client = coinmech.Client("/nonexistent/coinmechd.sock", retry=RetryPolicy(attempts=1))
        with self.assertRaises(coinmech.ConnectionFailed) as caught:
            client.status()
        self.assertIn("is coinmechd running", str(caught.exception))

    def test_default_path(self):
        self.assertEqual(coinmech.DEFAULT_SOCKET, "/run/coinmech/coinmechd.sock")


class ReadCommandTests(ClientTestCase):
    def test_requests_on_the_wire_and_typed_results(self):
        book = CreditBook(balance=150)
        ledger = FakeLedger(make_events(5))

        def handler(request, connection, daemon):
            if request["cmd"] == "status":
                return {"inhibited": False, "ledger": "ok", "last_seq": 5}
            if request["cmd"] == "totals":
                return {"current": [{"count": 3, "currency": "USD", "denomination": "quarter", "value_minor": 75,
                                     "weight_g": 17.01}], "current_value": {"USD": 75}, "lifetime": [],
                        "lifetime_value": {"USD": 75}}
            if request["cmd"] == "events":
                events = ledger.after(request["since"])[:request["limit"]]
                return {"events": events, "last_seq": ledger.last_seq}
            return book.answer(request)

        daemon = self.start(handler, ledger=ledger)
        client = self.client(daemon)
        self.assertEqual(client.status()["last_seq"], 5)
        self.assertEqual(client.totals().current_value, {"USD": 75})
        page = client.events(since=2, limit=2)
        self.assertEqual([e.seq for e in page.events], [3, 4])
        self.assertEqual(page.last_seq, 5)
        self.assertEqual([e.seq for e in client.all_events(since=0, page=2)], [1, 2, 3, 4, 5])
        self.assertEqual(client.credit().balance("USD"), 150)
        sent = [r.message for r in daemon.requests]
        self.assertEqual(sent[0], {"cmd": "status", "id": 1})
        self.assertEqual(sent[1], {"cmd": "totals", "id": 2})
        self.assertEqual(sent[2], {"cmd": "events", "id": 3, "since": 2, "limit": 2})
        self.assertEqual(sent[-1], {"cmd": "credit", "id": len(sent)})
        self.assertEqual({r.connection for r in daemon.requests}, {1}, "one connection for every request")

    def test_idle_cut_off_then_reconnect(self):
        # The daemon cuts a connection off with a reply of id null, then closes it.
        def handler(request, connection, daemon):
            if connection == 1:
                return Raw([{"type": "reply", "id": None, "ok": False, "error": {
                    "code": "unavailable", "message": "no request within 60 s of connecting: disconnected"}}], close=True)
            return {"inhibited": False}

        daemon = self.start(handler)
        self.assertEqual(self.client(daemon).status(), {"inhibited": False})
        self.assertEqual(daemon.connections, 2)

    def test_events_and_other_replies_are_skipped_while_waiting(self):
        def handler(request, connection, daemon):
            return Raw([{"type": "event", "seq": 9, "event": {"seq": 9, "time": 1.0, "kind": "coin"}},
                        {"type": "reply", "id": 999, "ok": True, "result": {"wrong": True}},
                        {"type": "reply", "id": request["id"], "ok": True, "result": {"right": True}}])

        daemon = self.start(handler)
        self.assertEqual(self.client(daemon).status(), {"right": True})


class CreditCommandTests(ClientTestCase):
    def book_daemon(self, book: CreditBook, faults=None):
        """faults: {attempt number of a cmd (1-based): what to do instead of answering}."""
        faults = faults or {}
        seen: dict[str, int] = {}

        def handler(request, connection, daemon):
            seen[request["cmd"]] = seen.get(request["cmd"], 0) + 1
            fault = faults.get((request["cmd"], seen[request["cmd"]]))
            if fault == "lose-reply":  # carried out, then the reply is lost with the connection
                book.answer(request)
                return Drop
            if fault is not None:
                return fault
            return book.answer(request)

        return self.start(handler)

    def test_spend_on_the_wire(self):
        book = CreditBook(balance=200)
        daemon = self.book_daemon(book)
        result = self.client(daemon).spend(150, item="A4", currency="USD")
        self.assertIsInstance(result, coinmech.Approved)
        self.assertEqual((result.amount_minor, result.balance_minor, result.item, result.repeated), (150, 50, "A4", False))
        request = daemon.commands("spend")[0].message
        self.assertEqual(set(request), {"cmd", "id", "amount_minor", "request_id", "item", "currency"})
        self.assertEqual(uuid.UUID(request["request_id"]).version, 4)
        self.assertEqual(result.request_id, request["request_id"])
        self.assertEqual((request["amount_minor"], request["item"], request["currency"]), (150, "A4", "USD"))

    def test_optional_fields_left_out_and_each_call_a_new_id(self):
        book = CreditBook(balance=10)
        daemon = self.book_daemon(book)
        client = self.client(daemon)
        client.spend(1)
        client.spend(1)
        first, second = (r.message for r in daemon.commands("spend"))
        self.assertNotIn("item", first)
        self.assertNotIn("currency", first)
        self.assertNotEqual(first["request_id"], second["request_id"])

    def test_refused_short_with_the_balance(self):
        daemon = self.book_daemon(CreditBook(balance=100))
        result = self.client(daemon).spend(150, request_id="sale-7")
        self.assertIsInstance(result, coinmech.Refused)
        self.assertEqual((result.reason, result.balance_minor, result.request_id), ("credit_short", 100, "sale-7"))

    def test_lost_reply_is_asked_again_with_the_same_id_and_charged_once(self):
        book = CreditBook(balance=200)
        daemon = self.book_daemon(book, {("spend", 1): "lose-reply"})
        result = self.client(daemon).spend(150, item="A4")
        spends = daemon.commands("spend")
        self.assertEqual(len(spends), 2)
        self.assertEqual(spends[0].message["request_id"], spends[1].message["request_id"])
        self.assertEqual([s.connection for s in spends], [1, 2], "the retry went on a new connection")
        self.assertTrue(result.repeated, "the daemon answered the retry from its ledger")
        self.assertEqual((book.charged, book.balance, result.balance_minor), (1, 50, 50))

    def test_reply_timeout_is_asked_again_with_the_same_id(self):
        book = CreditBook(balance=200)
        daemon = self.book_daemon(book, {("spend", 1): Silent})
        result = self.client(daemon, credit_timeout=0.2).spend(150)
        spends = daemon.commands("spend")
        self.assertEqual(len({s.message["request_id"] for s in spends}), 1)
        self.assertEqual(len(spends), 2)
        self.assertIsInstance(result, coinmech.Approved)
        self.assertEqual(book.charged, 1)

    def test_unavailable_is_asked_again_with_the_same_id(self):
        book = CreditBook(balance=200)
        daemon = self.book_daemon(book, {("spend", 1): Error("unavailable", "the ledger cannot write"),
                                         ("spend", 2): Error("unavailable", "the ledger cannot write")})
        result = self.client(daemon).spend(20)
        spends = daemon.commands("spend")
        self.assertEqual(len(spends), 3)
        self.assertEqual(len({s.message["request_id"] for s in spends}), 1)
        self.assertEqual(result.balance_minor, 180)

    def test_given_up_error_carries_the_id_to_ask_again_later(self):
        book = CreditBook(balance=200)
        daemon = self.book_daemon(book, {("spend", n): "lose-reply" for n in range(1, 5)})
        client = self.client(daemon)
        with self.assertRaises(coinmech.ConnectionFailed) as caught:
            client.spend(150, item="A4")
        rid = caught.exception.request_id
        self.assertEqual({s.message["request_id"] for s in daemon.commands("spend")}, {rid})
        self.assertEqual(book.charged, 1)
        later = client.spend(150, item="A4", request_id=rid)
        self.assertTrue(later.repeated)
        self.assertEqual((book.charged, book.balance), (1, 50))

    def test_command_errors_are_typed_and_not_retried(self):
        for code, cls in (("bad_request", coinmech.BadRequest), ("forbidden", coinmech.Forbidden),
                          ("unknown_command", coinmech.UnknownCommand), ("failed", coinmech.Failed),
                          ("bad_json", coinmech.BadJSON), ("line_too_long", coinmech.LineTooLong)):
            with self.subTest(code=code):
                daemon = self.start(lambda request, connection, daemon, code=code: Error(code, f"no: {code}"))
                with self.assertRaises(cls) as caught:
                    self.client(daemon).spend(5, request_id="r-1")
                self.assertEqual((caught.exception.code, caught.exception.message, caught.exception.request_id),
                                 (code, f"no: {code}", "r-1"))
                self.assertEqual(len(daemon.commands("spend")), 1)

    def test_same_id_other_amount_is_bad_request(self):
        daemon = self.book_daemon(CreditBook(balance=500))
        client = self.client(daemon)
        client.spend(100, request_id="sale-1")
        with self.assertRaises(coinmech.BadRequest):
            client.spend(200, request_id="sale-1")

    def test_refund(self):
        book = CreditBook(balance=200)
        daemon = self.book_daemon(book, {("refund", 1): "lose-reply"})
        client = self.client(daemon)
        client.spend(150, request_id="sale-7")
        refunded = client.refund("sale-7")
        self.assertIsInstance(refunded, coinmech.Refunded)
        self.assertEqual((refunded.amount_minor, refunded.balance_minor, book.balance), (150, 200, 200))
        self.assertEqual([r.message["request_id"] for r in daemon.commands("refund")], ["sale-7", "sale-7"])
        self.assertEqual(set(daemon.commands("refund")[0].message), {"cmd", "id", "request_id"})
        with self.assertRaises(coinmech.BadRequest):
            client.refund("never-sold")

    def test_cancel_returned_retried_once_paid(self):
        book = CreditBook(balance=75)
        daemon = self.book_daemon(book, {("cancel", 1): "lose-reply"})
        result = self.client(daemon).cancel()
        self.assertIsInstance(result, coinmech.Returned)
        self.assertEqual((result.payout.state, result.payout.paid_minor, result.balance_minor), ("done", 75, 0))
        cancels = daemon.commands("cancel")
        self.assertEqual(len(cancels), 2)
        self.assertEqual(cancels[0].message["request_id"], cancels[1].message["request_id"])
        self.assertEqual(uuid.UUID(cancels[0].message["request_id"]).version, 4)

    def test_cancel_kept(self):
        daemon = self.book_daemon(CreditBook(balance=75, pays_change=False))
        result = self.client(daemon).cancel("esc-3")
        self.assertIsInstance(result, coinmech.Kept)
        self.assertEqual((result.balance_minor, result.request_id), (75, "esc-3"))

    def test_arguments_checked_before_sending(self):
        daemon = self.book_daemon(CreditBook(balance=75))
        client = self.client(daemon)
        for call in (lambda: client.spend(0), lambda: client.spend(100_001), lambda: client.spend(1.5),
                     lambda: client.spend(True), lambda: client.spend(5, request_id="has space"),
                     lambda: client.spend(5, request_id="x" * 65), lambda: client.spend(5, item=""),
                     lambda: client.spend(5, currency="usd"), lambda: client.refund("")):
            with self.assertRaises(ValueError):
                call()
        self.assertEqual(daemon.requests, [])


if __name__ == "__main__":
    unittest.main()
