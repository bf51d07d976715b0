"""Start `promptlint emulate` as a real subprocess and read the URL it prints, with a deadline."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def start_emulator(*args: str, deadline: float = 20.0) -> tuple[subprocess.Popen, str]:
    """The running emulator and its URL; fails (never hangs) when no URL appears in time."""
    proc = subprocess.Popen([sys.executable, "-m", "promptlint", "emulate", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout=deadline)
    if not ready:
        proc.kill()
        pytest.fail(f"the emulator printed no URL within {deadline} s")
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        pytest.fail(f"unexpected first line {url!r}: {proc.stderr.read()}")
    return proc, url


@pytest.fixture(name="start_emulator")
def start_emulator_fixture():
    """:func:`start_emulator` for tests that manage the process themselves."""
    return start_emulator


@pytest.fixture(scope="module")
def emulator():
    """The URL of an emulator subprocess shared by a test module; it must stop cleanly on SIGTERM."""
    proc, url = start_emulator()
    yield url
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=10) == 0  # a clean shutdown on SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
