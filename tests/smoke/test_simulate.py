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
    assert "miss (prefix_changed) against turn 1: the prefix differs at system[0] (system level)" in run.stdout
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


def anthropic_conversation(turns: int) -> list[dict]:
    """A growing conversation over a cached system prompt, one body per turn."""
    history, bodies = [], []
    for n in range(turns):
        history = [*history, {"role": "user", "content": f"question {n}"}]
        bodies.append({**anthropic_turn(""), "messages": list(history)})
        history.append({"role": "assistant", "content": f"answer {n}"})
    return bodies


def test_bad_json_is_named_by_its_own_line_number(tmp_path):
    lines = [json.dumps(anthropic_turn(""))] * 36 + ['{"model": "claude-haiku-4-5", "messages": [}']
    run = run_simulate(tmp_path, lines)
    assert run.returncode == 2 and "line 37 column " in run.stderr and "Traceback" not in run.stderr


def test_deeply_nested_json_is_a_clear_exit_2(tmp_path):
    run = run_simulate(tmp_path, ["[" * 100_000 + "]" * 100_000])
    assert run.returncode == 2 and "line 1: JSON nested too deeply" in run.stderr and "Traceback" not in run.stderr


def test_an_unknown_shape_is_exit_2_naming_the_line(tmp_path):
    run = run_simulate(tmp_path, [json.dumps(anthropic_turn("")), json.dumps({"prompt": "hi"})])
    assert run.returncode == 2 and "line 2: not a request body of a known API" in run.stderr


def test_wrong_typed_fields_are_error_turns_with_the_apis_message(tmp_path):
    bodies = [{**anthropic_turn(""), "tools": 5}, {"model": "gpt-4o", "messages": 5},
              {"model": "gpt-4o", "input": 5}, {**anthropic_turn(""), "system": 5}]
    run = run_simulate(tmp_path, [json.dumps(b) for b in bodies])
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    for message in ("tools: Input should be a valid list", "Invalid type for 'messages'",
                    "Invalid type for 'input'", "system: Input should be a valid string or a valid list"):
        assert message in run.stdout


def test_a_non_finite_interval_is_a_usage_error(tmp_path):
    for value in ("nan", "inf", "-1"):
        run = run_simulate(tmp_path, [json.dumps(anthropic_turn(""))], "--interval", value)
        assert run.returncode == 2 and "Traceback" not in run.stderr, value


def test_a_long_gap_is_blamed_on_the_ttl_not_on_a_block_after_the_breakpoint():
    rows = simulate(anthropic_conversation(2), interval=400.0)
    assert rows[1]["miss"]["cause"] == "ttl_expired"
    assert rows[1]["miss"]["detail"] == "the entry at system[0] expired 100 s ago (TTL 5m)"


def test_a_model_switch_is_named_as_the_cause():
    first, second = anthropic_conversation(2)
    rows = simulate([first, {**second, "model": "claude-sonnet-4-5"}])
    assert rows[1]["miss"]["cause"] == "model_changed" and rows[1]["conversation"] == rows[0]["conversation"]


def test_a_prefix_change_names_the_block_and_byte():
    rows = simulate([anthropic_turn("t=1"), anthropic_turn("t=2")])
    miss = rows[1]["miss"]
    assert miss["cause"] == "prefix_changed" and miss["first_difference"]["block"] == "system[0]"
    assert miss["first_difference"]["byte_offset"] > 0 and not miss["partial"]


def test_a_partial_read_is_explained_too():
    cached_tools = [{"name": "lookup", "description": "rule. " * 3000, "input_schema": {"type": "object"},
                     "cache_control": {"type": "ephemeral"}}]
    first, second = ({**anthropic_turn(stamp), "tools": cached_tools} for stamp in ("t=1", "t=2"))
    rows = simulate([first, second])
    assert rows[1]["cache_read"] > 0 and rows[1]["miss"]["partial"] is True
    assert rows[1]["miss"]["cause"] == "prefix_changed" and rows[1]["first_difference"]["level"] == "system"


def test_hit_rate_and_write_share_for_the_run_and_each_conversation(tmp_path):
    rows = [json.dumps(b) for b in anthropic_conversation(4)] + [json.dumps(openai_turn("v1 "))] * 2
    run = run_simulate(tmp_path, rows, "--json")
    assert run.returncode == 0, run.stdout
    totals = json.loads(run.stdout.splitlines()[-1])["summary"]
    first = totals["conversations"]["c1"]
    assert first["turns"] == 4 and first["hit_rate"] > 0.5
    assert first["cache_write_share"] <= 1 / 4  # a stable prefix is written once
    assert set(totals["conversations"]) == {"c1", "c2"} and totals["run"]["turns"] == 6


def test_gemini_bodies_are_simulated_not_read_as_openai():
    body = {"model": "gemini-2.5-flash", "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "config": {"system_instruction": "policy line. " * 3000}}
    assert detect_provider(body) == "gemini"
    rows = simulate([body, body])
    assert rows[0]["provider"] == "gemini" and rows[0]["input_tokens"] > 2048
    assert rows[1]["cache_read"] >= 2048 and "miss" not in rows[1]


def test_the_html_report_is_laid_out_by_a_real_browser(tmp_path):
    import shutil

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        import pytest

        pytest.skip("no headless browser installed (apt-get install chromium)")
    report = tmp_path / "report.html"
    bodies = anthropic_conversation(4)
    bodies[3]["system"] = anthropic_turn("Now: 12:00")["system"]  # a leak on the fourth turn
    run = run_simulate(tmp_path, [json.dumps(b) for b in bodies], "--html", str(report))
    assert report.exists(), run.stderr
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    bars = dom.count('class="bar"')
    assert bars >= 4 and f'data-bars="{bars}"' in dom  # every bar has a laid-out height
    assert "Missed turns" in dom and "prefix_changed" in dom
