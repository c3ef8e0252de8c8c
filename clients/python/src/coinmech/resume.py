"""The resume file: the seq of the last event the caller has handled.

Written atomically (a temporary file in the same directory, fsync, rename, fsync of the
directory), so after a crash or power cut it holds either the old seq or the new one, never
a torn write: ``watch`` resumes after it with nothing lost or repeated.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import CoinMechError

__all__ = ["ResumeFile", "ResumeFileError"]


class ResumeFileError(CoinMechError):
    """The resume file exists but does not hold a seq (it was not written by this library)."""


class ResumeFile:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> int | None:
        """The seq stored, or None when the file does not exist yet."""
        try:
            text = self.path.read_text(encoding="ascii")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError as error:
            raise ResumeFileError(f"{self.path}: not a seq: {error}") from None
        text = text.strip()
        if not text.isdigit():
            raise ResumeFileError(f"{self.path}: does not hold a seq (found {text[:40]!r})")
        return int(text)

    def store(self, seq: int) -> None:
        """Replace the stored seq atomically and durably."""
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise ValueError(f"a seq is a whole number ≥ 0, not {seq!r}")
        directory = self.path.parent
        temporary = directory / f".{self.path.name}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            data = f"{seq}\n".encode("ascii")
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            _unlink_quietly(temporary)
            raise
        os.close(fd)
        try:
            os.replace(temporary, self.path)
        except BaseException:
            _unlink_quietly(temporary)
            raise
        _fsync_directory(directory)

    def __repr__(self) -> str:
        return f"ResumeFile({str(self.path)!r})"


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
