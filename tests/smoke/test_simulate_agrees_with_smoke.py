"""`promptlint simulate` and the smoke against the emulator report the same turns (issue 12).

Both stand on the one cache model, so for the requests the smoke really sent they must give the
same per-turn input, cache write and cache read. The smoke runs as a subprocess through the real
SDKs against the emulator on loopback; the emulator's cache records each body it received; those
bodies, one per line, go to `promptlint simulate --json` as a subprocess. A disagreement points at
the usage fields between them: the emulator's reply, the SDK, the smoke's reading of it, or the
simulator's grouping and clock.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from promptlint.caching.model import CacheModel
from promptlint.caching.server import EmulatorServer
from promptlint.caching.usage import Usage

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "scripts" / "smoke_cache.py"
APIS = {"anthropic": ("--provider", "anthropic"), "openai-chat": ("--provider", "openai"),
        "openai-responses": ("--provider", "openai", "--openai-api", "responses"),
        # GPT-5.6+: explicit breakpoints, writes reported as cache_write_tokens and part of the prompt tokens
        "openai-chat-gpt-5.6": ("--provider", "openai", "--model", "gpt-5.6-luna"),
        "openai-responses-gpt-5.6": ("--provider", "openai", "--openai-api", "responses", "--model", "gpt-5.6-luna")}
SDK_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")


@dataclass
class RecordingCache(CacheModel):
    """The emulator's cache model, keeping a copy of every request body it is given, in order."""

    bodies: list[dict] = field(default_factory=list)
    _record_lock: threading.Lock = field(default_factory=threading.Lock)

    def _record(self, body: dict) -> None:
        with self._record_lock:
            self.bodies.append(copy.deepcopy(body))

    def anthropic(self, body: dict) -> Usage:
        self._record(body)
        return super().anthropic(body)

    def openai(self, body: dict) -> Usage:
        self._record(body)
        return super().openai(body)


def smoke_against_emulator(*args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """The smoke's run against a fresh emulator, and the bodies that emulator received."""
    cache = RecordingCache()
    server = EmulatorServer(cache=cache)
    server.start()
    try:
        env = {k: v for k, v in os.environ.items() if k not in SDK_VARIABLES}
        run = subprocess.run([sys.executable, str(SMOKE), "--base-url", server.url, "--json", *args],
                             capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    finally:
        server.shutdown()
        server.server_close()
    return run, cache.bodies


def simulate(bodies: list[dict], tmp_path: Path) -> list[dict]:
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(b) + "\n" for b in bodies), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "promptlint", "simulate", str(requests), "--json"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode in (0, 1), run.stderr
    return [line for line in map(json.loads, run.stdout.splitlines()) if "turn" in line]


@pytest.mark.parametrize("broken", [False, True], ids=["clean", "break-prefix"])
@pytest.mark.parametrize("api", sorted(APIS))
def test_simulate_gives_the_smoke_figures_for_the_requests_the_smoke_sent(api, broken, tmp_path):
    run, bodies = smoke_against_emulator(*APIS[api], "--turns", "3", *(["--break-prefix"] if broken else []))
    assert run.returncode == (1 if broken else 0), run.stdout + run.stderr
    smoke_turns = [(t["input"], t["cache_write"], t["cache_read"]) for t in json.loads(run.stdout)["turns"]]
    assert len(bodies) == len(smoke_turns) == 3

    simulated = simulate(bodies, tmp_path)

    assert [t.get("error") for t in simulated] == [None] * 3
    if not broken:  # a broken prefix also changes OpenAI's prompt_cache_key: then each turn is its own conversation
        assert [t["conversation"] for t in simulated] == ["c1"] * 3
    assert [(t["input_tokens"], t["cache_write"], t["cache_read"]) for t in simulated] == smoke_turns
    # the comparison is not between two empty runs: a clean run reads, a broken one does not
    assert all((read > 0) != broken for _, _, read in smoke_turns[1:])
