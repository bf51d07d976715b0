"""scripts/bench.py runs and reports; it never times anything in a way a test asserts on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "scripts" / "bench.py"

pytestmark = pytest.mark.slow


def run_bench(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_help_documents_the_options_and_exit_codes():
    proc = run_bench("--help")
    assert proc.returncode == 0
    for option in ("--runs", "--json", "--with-fixit", "--selftest", "--corpus"):
        assert option in proc.stdout
    assert "Exit codes" in proc.stdout


@pytest.fixture(scope="module")
def selftest(tmp_path_factory):
    """One --selftest run shared by the tests below: (its JSON report, its --cache-dir)."""
    cache_dir = tmp_path_factory.mktemp("bench-cache")
    proc = run_bench("--selftest", "--runs", "1", "--json", "--cache-dir", str(cache_dir))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), cache_dir


def test_selftest_reports_the_three_file_corpus_and_every_promptlint_row(selftest):
    report, _ = selftest
    assert (report["corpus"]["files"], report["corpus"]["lines"]) == (3, 17)
    names = [tool["name"] for tool in report["tools"]]
    assert names[:4] == ["promptlint cold", "promptlint cache fill", "promptlint warm",
                         "promptlint one file"]
    assert set(report["ratios"]) == {"cold_over_cachedrift", "warm_over_cold", "warm_over_ruff_warm",
                                     "single_file_seconds"}


def test_selftest_installs_no_peer(selftest):
    report, cache_dir = selftest
    names = {tool["name"] for tool in report["tools"]}
    assert not names & {"cachedrift", "pcdlint", "fixit"}
    assert not (cache_dir / "peers-venv").exists()


def test_selftest_promptlint_rows_are_timed_or_say_why_not(selftest):
    report, _ = selftest
    for tool in report["tools"][:4]:
        if tool["status"] == "ok":
            assert tool["seconds"] > 0 and len(tool["all_seconds"]) == 1
        else:
            assert tool["status"] == "not available" and tool["detail"]


def test_unreachable_pypi_is_a_clear_error_with_exit_2(tmp_path):
    # A closed port on loopback stands in for "no network": pip fails at once.
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_CACHE_DIR": "1",
           "PIP_FIND_LINKS": ""}
    proc = run_bench("--cache-dir", str(tmp_path), env=env)
    assert proc.returncode == 2
    assert "bench: error: cannot download the corpus wheels" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_corpus_that_is_not_a_directory_is_a_usage_error(tmp_path):
    proc = run_bench("--corpus", str(tmp_path / "missing"))
    assert proc.returncode == 2
    assert "not a directory" in proc.stderr


def test_a_corpus_without_python_files_is_a_clear_error(tmp_path):
    proc = run_bench("--corpus", str(tmp_path), "--no-peers")
    assert proc.returncode == 2
    assert "no .py files to time" in proc.stderr
    assert "Traceback" not in proc.stderr
