"""The client against the real coinmechd and coinsim ($COINMECH_BIN_DIR): what the client
receives must be the ledger's events (read with coinctl), across a cut socket and a daemon
restarted with SIGTERM: none lost, none repeated."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import tempfile
import time
import unittest
from typing import Any

import coinmech
from coinmech import RetryPolicy

from .daemon_rig import Rig, bin_dir, missing_binaries, wait_until

FAST = RetryPolicy(attempts=6, delay=0.05, max_delay=0.5)
BIN = bin_dir()


def _skip_reason() -> str | None:
    if BIN is None and os.environ.get("COINMECH_REQUIRE_INTEGRATION") == "1":
        raise RuntimeError("COINMECH_REQUIRE_INTEGRATION=1 and no COINMECH_BIN_DIR")
    if BIN is None:
        return "COINMECH_BIN_DIR is not set (the directory of coinsim, coinmechd, coinctl and the plugins)"
    return None


@unittest.skipIf(_skip_reason() is not None, _skip_reason() or "")
class IntegrationTestCase(unittest.TestCase):
    def setUp(self):
        missing = missing_binaries(BIN)
        if missing:
            self.fail(f"COINMECH_BIN_DIR={BIN} lacks {', '.join(missing)}")
        self.rig = Rig(BIN)
        self.addCleanup(self._close_rig)
        self.scratch = tempfile.TemporaryDirectory()
        self.addCleanup(self.scratch.cleanup)
        self.seq_file = os.path.join(self.scratch.name, "kiosk.seq")

    def _close_rig(self):
        outcome = getattr(self, "_outcome", None)
        failed = bool(outcome is not None and not outcome.success)
        self.rig.close(keep=failed and bool(os.environ.get("COINMECH_KEEP_FAILED")))

    def client(self) -> coinmech.Client:
        client = coinmech.Client(self.rig.socket, retry=FAST, timeout=15)
        self.addCleanup(client.close)
        return client

    def logs(self) -> str:
        return f"{self.rig.tail('coinmechd.log')}\n{self.rig.tail('coinsim.log', 10)}"

    def collect(self, watch: coinmech.Watch, got: list[coinmech.Event], until, timeout: float, what: str) -> None:
        """Poll ``watch`` into ``got`` until ``until()`` holds; fail after ``timeout``."""
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                self.fail(f"timed out after {timeout} s waiting for {what} "
                          f"({len(got)} events, last seq {watch.last_seq})\n{self.logs()}")
            event = watch.poll(0.2)
            if event is not None:
                got.append(event)

    def assert_same_as_ledger(self, got: list[coinmech.Event], expected: list[dict[str, Any]]) -> None:
        seqs = [e.seq for e in got]
        self.assertEqual(len(seqs), len(set(seqs)), "an event was delivered twice")
        self.assertEqual(seqs, sorted(seqs), "events out of order")
        target = expected[-1]["seq"]
        received = [e.raw for e in got if e.seq <= target]
        # A live accepted decision carries the state it had when recorded ("pending"); the
        # `events` command reads the ledger's row as it is now ("credited", …): compare the
        # decisions without it, and check that a state differs only that way.
        for mine, theirs in zip(received, expected):
            if mine.get("kind") == "decision" and mine.get("state") != theirs.get("state"):
                self.assertEqual(mine.get("state"), "pending", f"client {mine} ledger {theirs}")
        received, expected = _without_decision_state(received), _without_decision_state(expected)
        if received != expected:
            differing = [(a, b) for a, b in zip(received, expected) if a != b]
            if differing:
                self.fail(f"{len(differing)} events differ from the ledger's; the first: client {differing[0][0]} "
                          f"ledger {differing[0][1]}")
            have, want = {e["seq"] for e in received}, {e["seq"] for e in expected}
            self.fail(f"the client's events differ from the ledger's: lost {sorted(want - have)[:20]}, "
                      f"extra {sorted(have - want)[:20]}, {len(received)} vs {len(expected)}")

    def finish_and_compare(self, watch, got, *, pending: bool, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Let coinsim finish, then read the ledger and wait until the client has reached its
        last seq; the client's events must be the ledger's (pending accepts left out unless
        subscribed to)."""
        self.collect(watch, got, lambda: self.rig.sim.poll() is not None, timeout, "coinsim to finish its coins")
        ledger = self.rig.ledger_events(0)
        expected = [e for e in ledger if pending or not (e["kind"] == "decision" and e.get("verdict") == "accept")]
        target = expected[-1]["seq"]
        self.collect(watch, got, lambda: watch.last_seq is not None and watch.last_seq >= target, 30,
                     f"the client to reach the ledger's seq {target}")
        self.assert_same_as_ledger(got, expected)
        coins = [e for e in got if isinstance(e, coinmech.CoinEvent)]
        self.assertTrue(coins, "coinsim's coins were credited and seen")
        return expected


def _without_decision_state(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "state"} if e.get("kind") == "decision" else e for e in events]


class WatchAgainstTheDaemon(IntegrationTestCase):
    def test_events_equal_the_ledger_across_a_cut_socket(self):
        self.rig.start_daemon()
        self.rig.start_sim(coins=40, rate=10)
        watch = self.client().watch(self.seq_file, since=0, pending=True)
        self.addCleanup(watch.close)
        got: list[coinmech.Event] = []
        cuts = 0
        while cuts < 3:
            self.collect(watch, got, lambda: len(got) >= 12 * (cuts + 1), 30, "events before a cut")
            watch._connection.sock.shutdown(socket.SHUT_RDWR)  # the client's socket dies mid-stream
            cuts += 1
        self.finish_and_compare(watch, got, pending=True)
        self.assertGreaterEqual(watch.reconnects, 3)
        self.assertEqual(watch.subscription.pending, True)

    def test_events_equal_the_ledger_across_a_daemon_restart(self):
        self.rig.start_daemon()
        self.rig.start_sim(coins=60, rate=10)
        reconnect_causes: list[BaseException | None] = []
        watch = self.client().watch(self.seq_file, since=0, on_reconnect=reconnect_causes.append)
        self.addCleanup(watch.close)
        got: list[coinmech.Event] = []
        self.collect(watch, got, lambda: sum(isinstance(e, coinmech.CoinEvent) for e in got) >= 5, 30,
                     "five coins before the restart")
        self.assertEqual(self.rig.stop_daemon(signal.SIGTERM), 0, self.logs())
        self.rig.start_daemon()
        expected = self.finish_and_compare(watch, got, pending=False)
        kinds = [e["kind"] for e in expected]
        self.assertIn("shutdown", kinds, "the restart is in what the client saw")
        self.assertGreaterEqual(kinds.count("startup"), 2)
        self.assertGreaterEqual(watch.reconnects, 1)
        self.assertTrue(reconnect_causes)

    def test_resume_file_carries_a_watch_over_to_the_next(self):
        self.rig.start_daemon()
        self.rig.start_sim(coins=30, rate=10)
        client = self.client()
        first: list[coinmech.Event] = []
        with client.watch(self.seq_file, since=0, pending=True) as events:
            for event in events:
                first.append(event)
                if len(first) == 15:
                    break
        self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), first[-1].seq)
        # A new watch (as after the kiosk's restart): it goes on from the file.
        watch = client.watch(self.seq_file, since=0, pending=True)
        self.addCleanup(watch.close)
        rest: list[coinmech.Event] = []
        self.collect(watch, rest, lambda: self.rig.sim.poll() is not None, 60, "coinsim to finish")
        ledger = self.rig.ledger_events(0)
        self.collect(watch, rest, lambda: watch.last_seq >= ledger[-1]["seq"], 30, "the ledger's last seq")
        self.assert_same_as_ledger(first + rest, ledger)


class ReadCommandsAgainstTheDaemon(IntegrationTestCase):
    def test_hello_status_totals_events(self):
        self.rig.start_daemon()
        self.rig.start_sim(coins=12, rate=20)
        self.assertEqual(self.rig.wait_sim(60), 0, self.logs())
        client = self.client()
        hello = client.connect()
        self.assertEqual((hello.protocol, hello.daemon), (2, "coinmechd"))
        status = client.status()
        self.assertEqual(status["ledger"], "ok")
        self.assertGreaterEqual(status["last_seq"], hello.seq)
        ledger = self.rig.ledger_events(0)
        mine = list(client.all_events(0, page=7))
        self.assertEqual([e.raw for e in mine if e.seq <= ledger[-1]["seq"]], ledger)
        page = client.events(since=2, limit=3)
        self.assertEqual([e.raw for e in page.events], ledger[2:5])
        totals = client.totals()
        credited: dict[str, int] = {}
        for event in ledger:
            if event["kind"] == "coin":
                credited[event["currency"]] = credited.get(event["currency"], 0) + event["value_minor"]
        self.assertEqual(totals.current_value, credited, "the totals are the coin events' sum")
        self.assertEqual(sum(r.count for r in totals.current), sum(e["kind"] == "coin" for e in ledger))
        with self.assertRaises(coinmech.BadRequest):
            client.events(since=0, limit=0)


class CreditAgainstTheDaemon(IntegrationTestCase):
    """The credit commands for real."""

    def test_spend_refund_cancel(self):
        self.rig.start_daemon()
        client = self.client()
        self.rig.start_sim(coins=10, rate=20)
        self.assertEqual(self.rig.wait_sim(60), 0, self.logs())
        balance = wait_until(lambda: client.credit().balance(), 30, "credit from coinsim's coins")
        short = client.spend(balance + 1, item="A4")
        self.assertIsInstance(short, coinmech.Refused)
        self.assertEqual(short.balance_minor, balance)
        sale = client.spend(1, item="A4")
        self.assertIsInstance(sale, coinmech.Approved)
        self.assertEqual(sale.balance_minor, balance - 1)
        again = client.spend(1, item="A4", request_id=sale.request_id)
        self.assertTrue(again.repeated)
        self.assertEqual(client.credit().balance(), balance - 1, "a repeat is never charged again")
        refunded = client.refund(sale.request_id)
        self.assertEqual(refunded.balance_minor, balance)
        cancelled = client.cancel()
        self.assertIsInstance(cancelled, (coinmech.Returned, coinmech.Kept))
        ledger = self.rig.ledger_events(0)
        spent = [e for e in ledger if e["kind"] == "credit_spent"]
        self.assertEqual([e["detail"]["request_id"] for e in spent], [sale.request_id])


class AsyncAgainstTheDaemon(IntegrationTestCase):
    def test_async_watch_equals_the_ledger_across_a_cut_socket(self):
        self.rig.start_daemon()
        self.rig.start_sim(coins=25, rate=10)

        async def run() -> tuple[list[coinmech.Event], int, list[dict[str, Any]]]:
            got: list[coinmech.Event] = []
            async with coinmech.AsyncClient(self.rig.socket, retry=FAST) as client:
                async with client.watch(self.seq_file, since=0, pending=True) as watch:
                    deadline = time.monotonic() + 90
                    target, ledger = None, []
                    while target is None or watch.last_seq < target:
                        self.assertLess(time.monotonic(), deadline, f"stalled at {watch.last_seq}\n{self.logs()}")
                        event = await watch.poll(0.2)
                        if event is not None:
                            got.append(event)
                            if len(got) == 10:
                                watch._connection.writer.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
                        if target is None and self.rig.sim.poll() is not None:
                            ledger = await asyncio.to_thread(self.rig.ledger_events, 0)
                            target = ledger[-1]["seq"]
                    return got, watch.reconnects, ledger

        got, reconnects, ledger = asyncio.run(run())
        self.assertGreaterEqual(reconnects, 1)
        self.assert_same_as_ledger(got, ledger)
        self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), got[-1].seq)


if __name__ == "__main__":
    unittest.main()
