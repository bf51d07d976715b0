"""The smoke script, run for real against the emulator (a real server on loopback, real SDKs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "scripts" / "smoke_cache.py"
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}


@pytest.fixture(scope="module")
def emulator():
    proc = subprocess.Popen([sys.executable, "-m", "promptlint", "emulate", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), proc.stderr.read()
    yield url
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0  # a clean shutdown on SIGTERM


def smoke(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SMOKE), *args], capture_output=True, text=True, timeout=120,
                          env=CLEAN_ENV, cwd=ROOT)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_clean_contract_is_read_from_cache_on_turn_two(emulator, provider):
    run = smoke("--provider", provider, "--base-url", emulator, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    first, second = report["turns"]
    assert second["cache_read"] > 0
    assert report["cached"] is True and report["total_cost_usd"] <= 0.05
    if provider == "anthropic":
        assert first["cache_write"] > 0 or first["cache_read"] > 0


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_timestamp_in_a_stable_layer_fails_the_smoke_and_says_where(emulator, provider):
    run = smoke("--provider", provider, "--base-url", emulator, "--break-prefix")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "NOT cached on turn 2: prefix bytes differed" in run.stdout
    assert "Current time:" in run.stdout


def test_without_an_api_key_or_base_url_the_smoke_skips_with_exit_2():
    run = smoke()
    assert run.returncode == 2
    assert "ANTHROPIC_API_KEY is not set" in run.stderr


def test_an_unreachable_server_is_a_bounded_network_error():
    run = smoke("--base-url", "http://127.0.0.1:9", "--timeout", "2")
    assert run.returncode == 2
    assert "network error" in run.stderr


def test_dry_run_predicts_a_read_without_sending():
    run = smoke("--dry-run", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert len(report["requests"]) == 2 and report["predicted"][1]["cache_read"] > 0


def test_bad_arguments_exit_2():
    assert smoke("--provider", "nope").returncode == 2


def test_emulator_answers_errors_in_the_anthropic_shape(emulator):
    import anthropic

    client = anthropic.Anthropic(api_key="x", base_url=emulator, max_retries=0, timeout=10)
    mark = {"type": "ephemeral"}
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}],
                               system=[{"type": "text", "text": str(i), "cache_control": mark} for i in range(5)])
    assert info.value.body["error"]["type"] == "invalid_request_error"


def test_simulate_names_the_block_and_byte_of_a_miss(tmp_path):
    big = "policy line. " * 2500
    bodies = [{"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
               "system": [{"type": "text", "text": big + stamp, "cache_control": {"type": "ephemeral"}}]}
              for stamp in ("t=1", "t=1", "t=2")]
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(b) for b in bodies) + "\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "promptlint", "simulate", str(path), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert rows[1]["cache_read"] > 0 and rows[2]["cache_read"] == 0
    diff = rows[2]["first_difference"]
    assert diff["block"] == "system[0]" and diff["byte_offset"] == len('{"text":"' + big + "t=")
