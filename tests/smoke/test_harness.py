"""The harness catches a timestamp leak in an agent's own code, through the real SDKs, offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from promptlint.caching.harness import PrefixChanged, PrefixHarness

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "fixtures"))

from agents.desk_agent import DeskAgent  # noqa: E402


def two_turns(harness: PrefixHarness, provider: str, leaky: bool) -> None:
    client = harness.anthropic() if provider == "anthropic" else harness.openai()
    agent = DeskAgent(client, provider, leaky=leaky)
    agent.respond("My March invoice looks doubled.")
    harness.advance(90)  # the customer answers a minute and a half later
    agent.respond("It is account acc_123.")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_timestamp_leak_fails_and_names_field_block_and_byte(provider):
    with PrefixHarness() as harness:
        two_turns(harness, provider, leaky=True)
        with pytest.raises(PrefixChanged) as failure:
            harness.assert_stable_prefix()
    message = str(failure.value)
    where = "field 'system', block system[0]" if provider == "anthropic" else "field 'messages', block messages[0]"
    assert where in message and "byte " in message and "Current time: 2026-01-01 00:0" in message


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_fixed_agent_passes_and_reads_from_turn_two(provider):
    with PrefixHarness() as harness:
        two_turns(harness, provider, leaky=False)
        harness.assert_stable_prefix()
        assert [r.cache_read > 0 for r in harness.requests] == [False, True]


def test_without_advancing_the_clock_the_leak_hides_which_is_why_advance_exists():
    with PrefixHarness() as harness:
        agent = DeskAgent(harness.anthropic(), leaky=True)
        agent.respond("one")
        agent.respond("two")  # the same frozen minute: same bytes
        harness.assert_stable_prefix()


def test_one_request_is_not_enough_to_judge():
    with PrefixHarness() as harness:
        DeskAgent(harness.anthropic()).respond("one")
        with pytest.raises(PrefixChanged, match="at least 2 turns"):
            harness.assert_stable_prefix()


def test_the_pytest_fixture_works_in_a_users_test_file(tmp_path):
    (tmp_path / "test_agent.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'fixtures')!r})\n"
        "from agents.desk_agent import DeskAgent\n\n"
        "def test_fixed(prompt_harness):\n"
        "    agent = DeskAgent(prompt_harness.anthropic())\n"
        "    agent.respond('a'); prompt_harness.advance(120); agent.respond('b')\n"
        "    prompt_harness.assert_stable_prefix()\n\n"
        "def test_leaky(prompt_harness):\n"
        "    agent = DeskAgent(prompt_harness.anthropic(), leaky=True)\n"
        "    agent.respond('a'); prompt_harness.advance(120); agent.respond('b')\n"
        "    prompt_harness.assert_stable_prefix()\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "1 failed, 1 passed" in run.stdout, run.stdout + run.stderr
    assert "the stable prefix changed at field 'system', block system[0]" in run.stdout
