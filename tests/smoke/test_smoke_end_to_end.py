"""The smoke script, run for real against the emulator (a real server on loopback, real SDKs)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.loading import import_file

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "scripts" / "smoke_cache.py"
SDK_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in SDK_VARIABLES}


def smoke(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SMOKE), *args], capture_output=True, text=True, timeout=120,
                          env=CLEAN_ENV, cwd=ROOT)


APIS = {"anthropic": ("--provider", "anthropic"), "openai-chat": ("--provider", "openai"),
        "openai-responses": ("--provider", "openai", "--openai-api", "responses")}


@pytest.mark.parametrize("api", sorted(APIS))
def test_clean_contract_is_read_from_cache_on_turn_two(emulator, api):
    run = smoke(*APIS[api], "--base-url", emulator, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    first, second = report["turns"]
    assert second["cache_read"] > 0
    assert report["cached"] is True and report["total_cost_usd"] <= 0.05
    if api == "anthropic":
        assert first["cache_write"] > 0 or first["cache_read"] > 0


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_timestamp_in_a_stable_layer_fails_the_smoke_and_says_where(emulator, api):
    run = smoke(*APIS[api], "--base-url", emulator, "--break-prefix")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "NOT cached on turn 2: prefix bytes differed" in run.stdout
    assert "Current time:" in run.stdout
    assert "(layer 'identity')" in run.stdout  # the contract layer the timestamp went into


def test_without_an_api_key_or_base_url_the_smoke_skips_with_exit_2():
    run = smoke()
    assert run.returncode == 2
    assert "ANTHROPIC_API_KEY is not set" in run.stderr


def test_an_unreachable_server_is_a_bounded_network_error():
    run = smoke("--base-url", "http://127.0.0.1:9", "--timeout", "2")
    assert run.returncode == 2
    assert "network error" in run.stderr


def test_a_server_that_never_answers_is_a_network_error_within_the_deadline():
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts connections, never replies
        port = silent.getsockname()[1]
        started = time.monotonic()
        run = smoke("--base-url", f"http://127.0.0.1:{port}", "--timeout", "1")
    assert run.returncode == 2 and "network error" in run.stderr
    assert time.monotonic() - started < 30  # two 1 s attempts and a short backoff, not a hang


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


def test_the_table_shows_each_turn_and_the_budget(emulator):
    run = smoke("--base-url", emulator)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[1].split() == ["turn", "input", "cache", "write", "cache", "read", "output", "cost", "USD"]
    assert [line.split()[0] for line in lines[2:4]] == ["1", "2"]
    assert "within the $0.05 budget" in run.stdout and "cached from turn 2 on: yes" in run.stdout


def test_gpt_5_6_breakpoints_are_read_on_turn_two_through_the_emulator(emulator):
    run = smoke("--provider", "openai", "--model", "gpt-5.6-luna", "--base-url", emulator, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    first, second = json.loads(run.stdout)["turns"]
    assert first["cache_write"] > 0 and second["cache_read"] > 0


def test_a_skip_with_json_still_prints_one_json_object():
    run = smoke("--json")
    assert run.returncode == 2
    report = json.loads(run.stdout)
    assert report["cached"] is None and report["error"].startswith("skipped: ANTHROPIC_API_KEY is not set")


def test_without_an_openai_key_or_base_url_the_smoke_skips_with_exit_2():
    run = smoke("--provider", "openai")
    assert run.returncode == 2
    assert "OPENAI_API_KEY is not set" in run.stderr


def test_a_model_that_could_exceed_the_budget_is_refused_before_sending():
    run = smoke("--model", "claude-opus-4-1", "--dry-run")
    assert run.returncode == 2
    assert "over the $0.05 budget" in run.stderr


def test_an_out_of_range_max_tokens_exits_2():
    run = smoke("--max-tokens", "0", "--dry-run")
    assert run.returncode == 2 and "--max-tokens" in run.stderr


def load_smoke_module():
    return import_file("smoke_cache", SMOKE)


def test_the_reason_names_a_missing_breakpoint():
    smoke_cache = load_smoke_module()
    bodies = [{"model": "claude-haiku-4-5", "max_tokens": 5, "system": "policy line. " * 2500,
               "messages": [{"role": "user", "content": q}]} for q in ("a", "b")]
    why = smoke_cache.reason("anthropic", bodies, smoke_cache.predict("anthropic", bodies))
    assert why.startswith("no cache breakpoint")


def test_the_reason_names_a_prefix_under_the_floor():
    smoke_cache = load_smoke_module()
    bodies = [{"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": q}],
               "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]}
              for q in ("a", "b")]
    why = smoke_cache.reason("anthropic", bodies, smoke_cache.predict("anthropic", bodies))
    assert "under the 4096-token minimum for claude-haiku-4-5" in why


def test_the_responses_api_reports_which_api_ran(emulator):
    run = smoke("--provider", "openai", "--openai-api", "responses", "--base-url", emulator, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["api"] == "responses"


def test_gpt_5_6_writes_are_billed_once_in_the_smoke_table(start_emulator):
    from promptlint import providers

    proc, url = start_emulator()  # a cold cache of its own: turn one must write
    try:
        run = smoke("--provider", "openai", "--model", "gpt-5.6-luna", "--base-url", url, "--json")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    first = json.loads(run.stdout)["turns"][0]
    # the contract's prefix is written; only the short tail after the implicit breakpoint is fresh input
    assert 0 < first["input"] < first["cache_write"]
    price = providers.price("openai", "gpt-5.6-luna")
    billed_once = (first["input"] * price.input + first["cache_write"] * price.cache_write
                   + first["output"] * (price.output or 0.0)) / 1e6
    assert first["cost_usd"] == pytest.approx(billed_once)


def test_openai_api_with_the_anthropic_provider_is_a_bad_argument():
    run = smoke("--openai-api", "responses", "--dry-run")
    assert run.returncode == 2 and "--openai-api applies to --provider openai only" in run.stderr


RENDERERS = {"anthropic": ("--provider", "anthropic"), "openai": ("--provider", "openai"),
             "openai-responses": ("--provider", "openai-responses"), "gemini": ("--provider", "gemini"),
             "gemini-explicit": ("--provider", "gemini", "--gemini-cache", "explicit")}
CONTRACTS = ("fixtures/contracts/support_bot.py:contract", "fixtures/contracts/research_assistant.py:contract")


@pytest.mark.parametrize("contract", CONTRACTS)
@pytest.mark.parametrize("renderer", sorted(RENDERERS))
def test_any_contract_is_cached_offline_on_every_renderer(start_emulator, renderer, contract):
    proc, url = start_emulator()  # a cold emulator: turn one must write (or, for Gemini explicit, read)
    try:
        run = smoke(*RENDERERS[renderer], "--contract", contract, "--base-url", url, "--json")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["cached"] is True and all(t["cache_read"] > 0 for t in report["turns"][1:])
    assert 0 < report["hit_rate"] <= 1 and report["cache_write_share"] <= 1 / len(report["turns"])


@pytest.mark.parametrize("renderer", ["gemini", "openai-responses"])
def test_break_prefix_names_the_byte_on_other_renderers_and_contracts(emulator, renderer):
    run = smoke(*RENDERERS[renderer], "--contract", CONTRACTS[1], "--base-url", emulator, "--break-prefix")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "prefix bytes differed between turns at" in run.stdout and "byte " in run.stdout
    assert "Current time:" in run.stdout


def test_more_turns_report_the_seeds_metrics(start_emulator):
    proc, url = start_emulator()
    try:
        run = smoke("--turns", "5", "--base-url", url, "--json")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    report = json.loads(run.stdout)
    assert run.returncode == 0 and len(report["turns"]) == 5
    written = sum(t["cache_write"] for t in report["turns"])
    prompt = sum(t["input"] + t["cache_write"] + t["cache_read"] for t in report["turns"])
    assert report["cache_write_share"] == pytest.approx(written / prompt, abs=1e-3)
    assert report["cache_write_share"] <= 1 / 5  # the stable prefix is written once in five turns


@pytest.mark.parametrize("args,message", [
    (("--model", "claude-nonexistent-9"), "unknown anthropic model 'claude-nonexistent-9'"),
    (("--provider", "openai", "--model", "gpt-4o-mini"), "no price recorded for openai model 'gpt-4o-mini'"),
    (("--contract", "fixtures/contracts/support_bot.py:nothing"), "has no PromptContract named 'nothing'"),
    (("--contract", "no/such/file.py:contract"), "no such file"),
    (("--turns", "1"), "--turns must be between 2 and 20"),
])
def test_bad_models_and_contracts_are_refused_before_sending(args, message):
    run = smoke(*args, "--base-url", "http://127.0.0.1:9")  # nothing listens there: nothing may be sent
    assert run.returncode == 2 and message in run.stderr and "network error" not in run.stderr


def test_a_gpt_5_6_write_is_billed_once(start_emulator):
    from promptlint import providers

    proc, url = start_emulator()
    try:
        run = smoke("--provider", "openai", "--model", "gpt-5.6-luna", "--base-url", url, "--json")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    first = json.loads(run.stdout)["turns"][0]
    price = providers.price("openai", "gpt-5.6-luna")
    assert first["cache_write"] > 1000
    billed = (first["input"] * price.input + first["cache_write"] * price.cache_write) / 1e6
    assert first["cost_usd"] == pytest.approx(billed)  # not input + write rates on the written tokens


def test_a_reader_that_goes_away_gets_no_traceback():
    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before the script writes: its first write meets a broken pipe
    try:
        run = subprocess.run([sys.executable, str(SMOKE), "--dry-run"], stdout=write_end, stderr=subprocess.PIPE,
                             text=True, timeout=120, env=CLEAN_ENV, cwd=ROOT)
    finally:
        os.close(write_end)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 2
    assert run.stderr == "smoke_cache: the output was closed before the report was written\n"
