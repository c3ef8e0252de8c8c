"""coinsim and coinmechd as child processes in a temporary directory, as scripts/demo.sh runs
them: the binaries from $COINMECH_BIN_DIR, the demo configuration with the current user
allowed control commands and the socket in the directory."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPOSITORY = Path(__file__).resolve().parents[3]
BINARIES = ("coinsim", "coinmechd", "coinctl")


def bin_dir() -> Path | None:
    """$COINMECH_BIN_DIR, or None when unset (the integration tests are then skipped)."""
    value = os.environ.get("COINMECH_BIN_DIR")
    return Path(value) if value else None


def missing_binaries(directory: Path) -> list[str]:
    return [name for name in BINARIES if not os.access(directory / name, os.X_OK)]


def wait_until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.02,
               details: Callable[[], str] | None = None) -> Any:
    """Poll ``condition`` until it returns something true; fail (AssertionError) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = f"\n{details()}" if details else ""
            raise AssertionError(f"timed out after {timeout} s waiting for {what}{extra}")
        time.sleep(interval)


class Rig:
    def __init__(self, binaries: Path, *, extra_config: str = "") -> None:
        self.bin = binaries
        self.directory = Path(tempfile.mkdtemp(prefix="coinmech-pyclient-"))
        self.socket = str(self.directory / "run" / "coinmechd.sock")
        self.config = self.directory / "coinmechd.yaml"
        user = pwd.getpwuid(os.getuid()).pw_name
        text = (REPOSITORY / "config" / "coinmechd.demo.yaml").read_text()
        text, count = re.subn(r"control_users: \[[^\]]*\]", f"control_users: [{json.dumps(user)}]", text)
        assert count == 1, "the demo configuration's control_users line moved"
        self.config.write_text(text + extra_config)
        self.sim: subprocess.Popen[bytes] | None = None
        self.daemon: subprocess.Popen[bytes] | None = None
        self.daemon_starts = 0
        self._logs: list[Any] = []

    # Processes ---------------------------------------------------------------------------

    def _log(self, name: str):
        handle = open(self.directory / name, "ab")
        self._logs.append(handle)
        return handle

    def start_sim(self, coins: int, rate: float, seed: int = 7) -> None:
        env = dict(os.environ, COINSIM_SCENARIOS=str(REPOSITORY / "Simulators" / "scenarios"))
        self.sim = subprocess.Popen(
            [str(self.bin / "coinsim"), "--scenario", "default", "--coins", str(coins), "--rate", str(rate),
             "--seed", str(seed), "--link", str(self.directory / "mech"), "--truth", str(self.directory / "truth.json")],
            stdout=self._log("coinsim.out"), stderr=self._log("coinsim.log"), stdin=subprocess.DEVNULL,
            env=env, start_new_session=True)

    def start_daemon(self, timeout: float = 30.0) -> None:
        self.daemon_starts += 1
        self.daemon = subprocess.Popen(
            [str(self.bin / "coinmechd"), "--config", str(self.config), "--plugin-dir", str(self.bin)],
            stdout=self._log("coinmechd.out"), stderr=self._log("coinmechd.log"), stdin=subprocess.DEVNULL,
            start_new_session=True)
        daemon = self.daemon

        def answering() -> bool:
            if daemon.poll() is not None:
                raise AssertionError(f"coinmechd exited with {daemon.returncode}\n{self.tail('coinmechd.log')}")
            return self.hello() is not None

        wait_until(answering, timeout, "coinmechd's hello on its socket", interval=0.05,
                   details=lambda: self.tail("coinmechd.log"))

    def hello(self) -> dict[str, Any] | None:
        """The daemon's hello on a fresh connection, or None when it does not answer yet."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(2)
                probe.connect(self.socket)
                data = b""
                while b"\n" not in data:
                    chunk = probe.recv(4096)
                    if not chunk:
                        return None
                    data += chunk
                return json.loads(data.split(b"\n", 1)[0])
        except OSError:
            return None

    def stop_daemon(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        assert self.daemon is not None
        self.daemon.send_signal(sig)
        try:
            return self.daemon.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"coinmechd did not stop within {timeout} s of signal {sig}\n"
                                 f"{self.tail('coinmechd.log')}") from None

    def wait_sim(self, timeout: float) -> int:
        assert self.sim is not None
        try:
            return self.sim.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"coinsim did not finish within {timeout} s\n{self.tail('coinsim.log')}") from None

    @staticmethod
    def _end(process: subprocess.Popen[bytes] | None) -> None:
        if process is None or process.poll() is not None:
            if process is not None:
                process.wait()
            return
        for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                process.wait(grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def close(self, keep: bool = False) -> None:
        """Stop and reap every child (the daemon first, then the mech), remove the directory."""
        self._end(self.daemon)
        self._end(self.sim)
        for handle in self._logs:
            handle.close()
        if keep:
            print(f"\nkept the failed test's directory: {self.directory}")
        else:
            shutil.rmtree(self.directory, ignore_errors=True)

    # Ground truth --------------------------------------------------------------------------

    def coinctl(self, *args: str, timeout: float = 30.0) -> Any:
        done = subprocess.run([str(self.bin / "coinctl"), *args, "--json", "--socket", self.socket],
                              capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise AssertionError(f"coinctl {' '.join(args)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
        return json.loads(done.stdout)

    def ledger_events(self, since: int = 0) -> list[dict[str, Any]]:
        """Every recorded event after ``since``, read with coinctl (not with the library under test)."""
        events: list[dict[str, Any]] = []
        while True:
            page = self.coinctl("events", "--since", str(since), "--limit", "1000")
            events.extend(page["events"])
            if not page["events"] or page["events"][-1]["seq"] >= page["last_seq"]:
                return events
            since = page["events"][-1]["seq"]

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            text = (self.directory / name).read_text(errors="replace").splitlines()
        except OSError:
            return f"({name}: none)"
        return f"--- last lines of {name}:\n" + "\n".join(text[-lines:])
