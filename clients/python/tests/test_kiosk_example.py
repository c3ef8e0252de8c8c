"""examples/kiosk.py against the fake daemon: waits for credit, sells with spend, returns the
rest with cancel."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

from .credit_fake import CreditBook
from .fake_daemon import FakeDaemon, FakeLedger, make_events

KIOSK = Path(__file__).resolve().parents[3] / "examples" / "kiosk.py"


class KioskExampleTests(unittest.TestCase):
    def test_waits_for_credit_sells_and_returns_the_rest(self):
        book = CreditBook(balance=0)
        daemon = FakeDaemon(lambda request, connection, daemon: book.answer(request), ledger=FakeLedger(make_events(3)))
        self.addCleanup(daemon.close)
        kiosk = subprocess.Popen([sys.executable, str(KIOSK), "--socket", daemon.path, "--price", "150", "--wait", "20"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        self.addCleanup(kiosk.kill)
        try:
            daemon.wait_for(lambda: any(r.message.get("cmd") == "credit" for r in daemon.requests), timeout=20)
            book.balance = 200  # two coins came: the daemon raised the credit, then published them
            for event in make_events(2, first=4):
                daemon.publish(event)
            out, err = kiosk.communicate(timeout=30)
        finally:
            if kiosk.poll() is None:
                kiosk.kill()
            kiosk.wait()
        self.assertEqual(kiosk.returncode, 0, err.decode())
        text = out.decode()
        self.assertIn("sold A4 for USD 1.50", text)
        self.assertIn("change USD 0.50 paid", text)
        self.assertEqual([r.message["since"] for r in daemon.commands("subscribe")], [3])
        spend = daemon.commands("spend")
        self.assertEqual([(s.message["amount_minor"], s.message["item"]) for s in spend], [(150, "A4")])
        self.assertEqual(len(daemon.commands("cancel")), 1)
        self.assertEqual(book.balance, 0)

    def test_repeat_serves_customer_after_customer(self):
        """--repeat --quiet --prefix, as `make demo` runs it: only sales and change, each prefixed."""
        book = CreditBook(balance=0)
        daemon = FakeDaemon(lambda request, connection, daemon: book.answer(request), ledger=FakeLedger(make_events(3)))
        self.addCleanup(daemon.close)
        kiosk = subprocess.Popen([sys.executable, str(KIOSK), "--socket", daemon.path, "--price", "150", "--repeat",
                                  "--quiet", "--prefix", "KIOSK: "],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        self.addCleanup(kiosk.kill)
        try:
            # wait_for holds the daemon's lock: count its requests directly, not with commands().
            def count(cmd: str) -> int:
                return sum(1 for r in daemon.requests if r.message.get("cmd") == cmd)

            daemon.wait_for(lambda: count("credit") >= 1, timeout=20)
            book.balance = 175
            for event in make_events(1, first=4):
                daemon.publish(event)
            daemon.wait_for(lambda: count("cancel") == 1 and count("credit") >= 3, timeout=20)
            book.balance = 150
            for event in make_events(1, first=5):
                daemon.publish(event)
            daemon.wait_for(lambda: count("spend") == 2 and count("credit") >= 5, timeout=20)
        finally:
            kiosk.kill()
            out, err = kiosk.communicate(timeout=30)
        lines = out.decode().splitlines()
        self.assertTrue(lines and all(line.startswith("KIOSK: ") for line in lines), lines)
        self.assertEqual([line.split(" (")[0] for line in lines],
                         ["KIOSK: sold A4 for USD 1.50", "KIOSK: change USD 0.25 paid", "KIOSK: sold A4 for USD 1.50",
                          "KIOSK: no change due"], err.decode())
        self.assertEqual(len(daemon.commands("cancel")), 1)
        self.assertEqual(book.balance, 0)


if __name__ == "__main__":
    unittest.main()
