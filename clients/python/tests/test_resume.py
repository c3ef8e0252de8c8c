"""The resume file: atomic, durable, and read back."""

import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from coinmech import ResumeFile, ResumeFileError


class ResumeFileTests(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.path = Path(self.directory.name) / "kiosk.seq"

    def tearDown(self):
        self.directory.cleanup()

    def test_missing_file_is_none(self):
        self.assertIsNone(ResumeFile(self.path).load())

    def test_store_and_load(self):
        resume = ResumeFile(self.path)
        resume.store(41)
        self.assertEqual(resume.load(), 41)
        resume.store(412)
        self.assertEqual(ResumeFile(str(self.path)).load(), 412)
        self.assertEqual(self.path.read_text(), "412\n")
        self.assertEqual(os.listdir(self.directory.name), ["kiosk.seq"], "no temporary file left")

    def test_garbage_is_an_error_not_zero(self):
        self.path.write_text("forty-one\n")
        with self.assertRaises(ResumeFileError):
            ResumeFile(self.path).load()

    def test_bad_seq_refused(self):
        for bad in (-1, 1.5, "3", True):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                ResumeFile(self.path).store(bad)

    def test_written_to_a_temporary_file_synced_then_renamed(self):
        calls = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd):
            calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
            return real_fsync(fd)

        def replace(source, target):
            calls.append(("replace", str(source), str(target)))
            return real_replace(source, target)

        ResumeFile(self.path).store(7)
        with mock.patch("os.fsync", fsync), mock.patch("os.replace", replace):
            ResumeFile(self.path).store(8)
        self.assertEqual([c[0] for c in calls], ["fsync", "replace", "fsync"])
        temporary = calls[0][1]
        self.assertNotEqual(temporary, str(self.path))
        self.assertEqual(os.path.dirname(temporary), self.directory.name, "same directory: a rename, not a copy")
        self.assertEqual(calls[1], ("replace", temporary, str(self.path)))
        self.assertEqual(calls[2][1], self.directory.name, "the directory is synced after the rename")

    def test_a_failed_write_leaves_the_old_seq(self):
        resume = ResumeFile(self.path)
        resume.store(100)
        with mock.patch("os.fsync", side_effect=OSError(5, "I/O error")), self.assertRaises(OSError):
            resume.store(101)
        self.assertEqual(resume.load(), 100)
        self.assertEqual(os.listdir(self.directory.name), ["kiosk.seq"])


if __name__ == "__main__":
    unittest.main()
