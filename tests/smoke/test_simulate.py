"""`promptlint simulate`: recorded request bodies in, per-turn cache prediction and miss location out."""

from __future__ import annotations

import json
import subprocess
import sys

from promptlint.caching.simulate import detect_provider, simulate

BIG = "policy line. " * 2500
RULES = "rule. " * 900


def anthropic_turn(stamp: str) -> dict:
    return {"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
            "system": [{"type": "text", "text": BIG + stamp, "cache_control": {"type": "ephemeral"}}]}


def openai_turn(stamp: str) -> dict:
    return {"model": "gpt-4o", "prompt_cache_key": "k",
            "messages": [{"role": "system", "content": stamp + RULES}, {"role": "user", "content": "hi"}]}


def run_simulate(tmp_path, lines: list[str], *args: str) -> subprocess.CompletedProcess:
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "promptlint", "simulate", str(path), *args],
                          capture_output=True, text=True, timeout=60)


def test_an_openai_miss_names_the_message_and_the_byte():
    rows = simulate([openai_turn("v1 "), openai_turn("v2 ")])
    assert rows[1]["cache_read"] == 0
    diff = rows[1]["first_difference"]
    assert diff["block"] == "messages[0]" and diff["byte_offset"] == len('{"part":{"text":"v')


def test_a_turn_after_the_ttl_misses_when_the_interval_is_long():
    rows = simulate([anthropic_turn(""), anthropic_turn("")], interval=301.0)
    assert rows[1]["cache_read"] == 0 and rows[1]["cache_write"] > 0


def test_a_request_the_api_would_reject_is_reported_as_an_error_turn():
    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    body = {"model": "claude-haiku-4-5", "max_tokens": 5, "system": [marked] * 5,
            "messages": [{"role": "user", "content": "hi"}]}
    assert "A maximum of 4 blocks" in simulate([body])[0]["error"]


def test_the_provider_is_detected_from_the_body():
    assert detect_provider(anthropic_turn("")) == "anthropic"
    assert detect_provider(openai_turn("")) == "openai"
    assert detect_provider({"model": "gpt-4o", "input": "hi"}) == "openai"


def test_the_table_prints_the_miss_location_and_exits_1(tmp_path):
    run = run_simulate(tmp_path, [json.dumps(anthropic_turn("t=1")), json.dumps(anthropic_turn("t=2"))])
    assert run.returncode == 1
    assert "miss: differs from turn 1 at system[0]" in run.stdout
    assert "total $" in run.stdout


def test_all_turns_reading_exits_0(tmp_path):
    run = run_simulate(tmp_path, [json.dumps(openai_turn("v1 "))] * 2, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[1])["cache_read"] >= 1024


def test_a_line_that_is_not_json_exits_2_naming_the_file(tmp_path):
    run = run_simulate(tmp_path, ["{not json"])
    assert run.returncode == 2 and "cannot read" in run.stderr and "Traceback" not in run.stderr


def test_an_empty_file_exits_2(tmp_path):
    run = run_simulate(tmp_path, [""])
    assert run.returncode == 2 and "holds no request" in run.stderr


def test_a_miss_names_the_prefix_level_of_the_differing_block():
    rows = simulate([anthropic_turn("t=1"), anthropic_turn("t=2")])
    assert rows[1]["first_difference"]["level"] == "system"


def test_a_turn_after_the_ttl_says_the_entry_expired():
    rows = simulate([anthropic_turn(""), anthropic_turn("")], interval=400.0)
    assert rows[1]["note"] == "the entry at system[0] expired 100 s ago (TTL 5m)"


def test_a_miss_is_compared_with_the_previous_request_to_the_same_provider():
    rows = simulate([anthropic_turn("t=1"), openai_turn("v1 "), anthropic_turn("t=2")])
    assert rows[2]["previous_turn"] == 1
    assert rows[2]["first_difference"]["block"] == "system[0]"
