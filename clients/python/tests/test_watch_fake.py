"""watch() against the fake daemon: resume by seq across cut connections and overflows, and
the resume file written only once the caller is done with an event."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

import coinmech
from coinmech import RetryPolicy

from .fake_daemon import FakeDaemon, FakeLedger, make_events

FAST = RetryPolicy(attempts=4, delay=0.01, max_delay=0.05)
KINDS = ("coin", "decision", "coin", "laser_show", "source_lost", "credit_spent")


class WatchTestCase(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.seq_file = os.path.join(self.directory.name, "kiosk.seq")

    def start(self, events, **options) -> FakeDaemon:
        daemon = FakeDaemon(ledger=FakeLedger(events), **options)
        self.addCleanup(daemon.close)
        return daemon

    def watch(self, daemon, **options) -> coinmech.Watch:
        watch = coinmech.Client(daemon.path, retry=FAST, connect_timeout=2.0).watch(**options)
        self.addCleanup(watch.close)
        return watch

    def take(self, watch, count, timeout=5.0):
        events = []
        while len(events) < count:
            event = watch.poll(timeout)
            if event is None:
                self.fail(f"no event within {timeout} s after {len(events)} of {count}")
            events.append(event)
        return events

    def subscribed_since(self, daemon):
        return [r.message.get("since") for r in daemon.commands("subscribe")]


class WatchTests(WatchTestCase):
    def test_every_event_once_across_cut_connections(self):
        events = make_events(50, kinds=KINDS)
        daemon = self.start(events, events_per_connection=7)
        watch = self.watch(daemon, since=0)
        got = self.take(watch, 50)
        self.assertEqual([e.seq for e in got], list(range(1, 51)))
        self.assertEqual([e.raw for e in got], events)
        self.assertEqual(self.subscribed_since(daemon), [0, 7, 14, 21, 28, 35, 42, 49])
        self.assertEqual(watch.reconnects, 7)
        self.assertIsNone(watch.poll(0.05), "nothing more")
        self.assertIs(type(got[3]), coinmech.Event, "an unknown kind is a generic event")
        self.assertIsInstance(got[5], coinmech.CreditEvent)

    def test_overflow_resubscribes_from_the_last_seq(self):
        events = make_events(25)
        daemon = self.start(events, overflow_after=10)
        watch = self.watch(daemon, since=3)
        got = self.take(watch, 22)
        self.assertEqual([e.seq for e in got], list(range(4, 26)))
        self.assertEqual(self.subscribed_since(daemon), [3, 13, 23])
        self.assertEqual(watch.overflows, 2)

    def test_gaps_in_seq_are_fine(self):
        events = [e for e in make_events(30) if e["seq"] % 3]  # pending decisions left out
        daemon = self.start(events, events_per_connection=4)
        got = self.take(self.watch(daemon, since=0), len(events))
        self.assertEqual([e.seq for e in got], [e["seq"] for e in events])

    def test_first_start_without_file_begins_at_the_daemons_seq_and_records_it(self):
        daemon = self.start(make_events(12))
        watch = self.watch(daemon, resume_file=self.seq_file)
        self.assertIsNone(watch.poll(0.1), "only new events")
        self.assertEqual(self.subscribed_since(daemon), [12])
        self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), 12)

    def test_commit_after_handling_and_resume_from_the_file(self):
        daemon = self.start(make_events(20), events_per_connection=6)
        coinmech.ResumeFile(self.seq_file).store(2)
        watch = self.watch(daemon, resume_file=self.seq_file, since=999)  # the file wins over since
        first = watch.poll(5)
        self.assertEqual(first.seq, 3)
        self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), 2, "not written before the caller is done")
        second = watch.poll(5)
        self.assertEqual(second.seq, 4)
        self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), 3, "written when the caller asks for the next")
        watch.close()
        self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), 3, "close does not commit the one in hand")

        # The next watch on the file gets seq 4 again (its handling was never confirmed), then the rest.
        again = self.watch(daemon, resume_file=self.seq_file)
        self.assertEqual([e.seq for e in self.take(again, 17)], list(range(4, 21)))
        self.assertEqual(self.subscribed_since(daemon)[-1 - again.reconnects], 3)

    def test_with_block_commits_on_a_clean_exit_only(self):
        daemon = self.start(make_events(10))
        with self.watch(daemon, resume_file=self.seq_file, since=0) as events:
            for event in events:
                if event.seq == 4:
                    break
        self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), 4)

        with self.assertRaises(RuntimeError):
            with self.watch(daemon, resume_file=self.seq_file) as events:
                for event in events:
                    if event.seq == 6:
                        raise RuntimeError("the kiosk failed to handle event 6")
        self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), 5, "event 6 was not handled: not committed")

        with self.watch(daemon, resume_file=self.seq_file) as events:
            self.assertEqual(events.poll(5).seq, 6)
            events.commit()
            self.assertEqual(coinmech.ResumeFile(self.seq_file).load(), 6)

    def test_duplicate_from_the_daemon_is_not_delivered(self):
        events = make_events(5)
        daemon = self.start(events[:3] + [events[1]] + events[3:])
        got = self.take(self.watch(daemon, since=0), 5)
        self.assertEqual([e.seq for e in got], [1, 2, 3, 4, 5])

    def test_daemon_away_then_back(self):
        daemon = self.start(make_events(3))
        watch = self.watch(daemon, since=0)
        self.assertEqual([e.seq for e in self.take(watch, 3)], [1, 2, 3])
        path = daemon.path
        daemon.close()
        reconnects = []
        watch.on_reconnect = reconnects.append
        self.assertIsNone(watch.poll(0.3), "no daemon: nothing, and no exception")
        self.assertTrue(reconnects)
        # A new daemon on the same path with more events.
        revived = FakeDaemon(ledger=FakeLedger(make_events(6)))
        self.addCleanup(revived.close)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.rename(revived.path, path)
        self.addCleanup(shutil.rmtree, os.path.dirname(path), True)
        self.assertEqual([e.seq for e in self.take(watch, 3)], [4, 5, 6])
        self.assertEqual(self.subscribed_since(revived), [3])

    def test_without_reconnect_a_cut_raises(self):
        daemon = self.start(make_events(5), events_per_connection=2)
        watch = self.watch(daemon, since=0, reconnect=False)
        self.take(watch, 2)
        with self.assertRaises(coinmech.ConnectionFailed):
            watch.poll(5)

    def test_another_protocol_raises(self):
        daemon = self.start(make_events(1), protocol=1)
        with self.assertRaises(coinmech.ProtocolVersionError):
            self.watch(daemon, since=0).poll(5)


if __name__ == "__main__":
    unittest.main()
