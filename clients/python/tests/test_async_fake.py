"""The asyncio client against the fake daemon: the same calls, the same retries with the same
request id, the same watch."""

from __future__ import annotations

import asyncio
import os
import tempfile
import unittest
import uuid

import coinmech
from coinmech import RetryPolicy

from .credit_fake import CreditBook
from .fake_daemon import Drop, Error, FakeDaemon, FakeLedger, Silent, make_events

FAST = RetryPolicy(attempts=4, delay=0.01, max_delay=0.05)


class AsyncClientTests(unittest.IsolatedAsyncioTestCase):
    def start(self, handler=None, **options) -> FakeDaemon:
        daemon = FakeDaemon(handler, **options)
        self.addCleanup(daemon.close)
        return daemon

    async def client(self, daemon, **options) -> coinmech.AsyncClient:
        options.setdefault("retry", FAST)
        options.setdefault("timeout", 2.0)
        options.setdefault("credit_timeout", 2.0)
        client = coinmech.AsyncClient(daemon.path, **options)
        self.addAsyncCleanup(client.close)
        return client

    def book_daemon(self, book, faults=None):
        faults = faults or {}
        seen = {}

        def handler(request, connection, daemon):
            seen[request["cmd"]] = seen.get(request["cmd"], 0) + 1
            fault = faults.get((request["cmd"], seen[request["cmd"]]))
            if fault == "lose-reply":
                book.answer(request)
                return Drop
            return fault if fault is not None else book.answer(request)

        return self.start(handler)

    async def test_hello_and_reads(self):
        book = CreditBook(balance=60)
        ledger = FakeLedger(make_events(4))

        def handler(request, connection, daemon):
            if request["cmd"] == "events":
                return {"events": ledger.after(request["since"])[:request["limit"]], "last_seq": ledger.last_seq}
            if request["cmd"] == "status":
                return {"ledger": "ok"}
            if request["cmd"] == "totals":
                return {"current": [], "lifetime": [], "current_value": {}, "lifetime_value": {}}
            return book.answer(request)

        daemon = self.start(handler, ledger=ledger)
        async with coinmech.AsyncClient(daemon.path, retry=FAST) as client:
            self.assertEqual((await client.connect()).seq, 4)
            self.assertEqual(await client.status(), {"ledger": "ok"})
            self.assertEqual((await client.totals()).current, [])
            self.assertEqual([e.seq for e in (await client.events(1, 2)).events], [2, 3])
            self.assertEqual([e.seq async for e in client.all_events(0, page=3)], [1, 2, 3, 4])
            self.assertEqual((await client.credit()).balance(), 60)

    async def test_protocol_refused(self):
        daemon = self.start(protocol=1)
        with self.assertRaises(coinmech.ProtocolVersionError):
            await (await self.client(daemon)).status()

    async def test_spend_lost_reply_same_id_charged_once(self):
        book = CreditBook(balance=200)
        daemon = self.book_daemon(book, {("spend", 1): "lose-reply", ("spend", 2): Silent})
        client = await self.client(daemon, credit_timeout=0.3)
        result = await client.spend(150, item="A4", currency="USD")
        spends = daemon.commands("spend")
        self.assertEqual(len(spends), 3)
        self.assertEqual(len({s.message["request_id"] for s in spends}), 1)
        self.assertEqual(uuid.UUID(spends[0].message["request_id"]).version, 4)
        self.assertIsInstance(result, coinmech.Approved)
        self.assertTrue(result.repeated)
        self.assertEqual((book.charged, book.balance), (1, 50))

    async def test_refused_refund_cancel_and_errors(self):
        book = CreditBook(balance=100)
        daemon = self.book_daemon(book, {("cancel", 1): Error("unavailable", "stopping")})
        client = await self.client(daemon)
        refused = await client.spend(150, request_id="s-1")
        self.assertIsInstance(refused, coinmech.Refused)
        self.assertEqual(refused.balance_minor, 100)
        approved = await client.spend(40, request_id="s-1")  # a refused id may be used again
        self.assertIsInstance(approved, coinmech.Approved)
        self.assertIsInstance(await client.refund("s-1"), coinmech.Refunded)
        with self.assertRaises(coinmech.BadRequest) as caught:
            await client.refund("nope")
        self.assertEqual(caught.exception.request_id, "nope")
        returned = await client.cancel("esc-1")
        self.assertIsInstance(returned, coinmech.Returned)
        self.assertEqual(returned.payout.paid_minor, 100)
        self.assertEqual([c.message["request_id"] for c in daemon.commands("cancel")], ["esc-1", "esc-1"])

    async def test_given_up_carries_the_request_id(self):
        book = CreditBook(balance=200)
        daemon = self.book_daemon(book, {("spend", n): "lose-reply" for n in range(1, 5)})
        client = await self.client(daemon)
        with self.assertRaises(coinmech.ConnectionFailed) as caught:
            await client.spend(10)
        self.assertTrue((await client.spend(10, request_id=caught.exception.request_id)).repeated)
        self.assertEqual(book.charged, 1)

    async def test_watch_across_cuts_and_overflow_with_resume_file(self):
        with tempfile.TemporaryDirectory() as directory:
            seq_file = os.path.join(directory, "seq")
            events = make_events(30, kinds=("coin", "mystery", "credit_opened"))
            daemon = self.start(ledger=FakeLedger(events), events_per_connection=8)
            client = await self.client(daemon)
            got = []
            async with client.watch(seq_file, since=0) as watch:
                while len(got) < 30:
                    event = await watch.poll(5)
                    self.assertIsNotNone(event, f"stalled after {len(got)}")
                    got.append(event)
            self.assertEqual([e.seq for e in got], list(range(1, 31)))
            self.assertEqual(coinmech.ResumeFile(seq_file).load(), 30)
            self.assertEqual([r.message["since"] for r in daemon.commands("subscribe")], [0, 8, 16, 24])
            self.assertIs(type(got[1]), coinmech.Event)

            overflow = self.start(ledger=FakeLedger(make_events(40)), overflow_after=4)
            resumed = []
            async with coinmech.AsyncClient(overflow.path, retry=FAST).watch(seq_file) as watch:
                async for event in watch:
                    resumed.append(event.seq)
                    if event.seq == 40:
                        break
            self.assertEqual(resumed, list(range(31, 41)))
            self.assertEqual(coinmech.ResumeFile(seq_file).load(), 40)
            self.assertEqual([r.message["since"] for r in overflow.commands("subscribe")], [30, 34, 38])


if __name__ == "__main__":
    unittest.main()
