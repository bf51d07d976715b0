"""The real console script in a subprocess: exit codes, formats, options (docs/cli.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.lint.opt_in import ORDERING_PYPROJECT

LEAK = textwrap.dedent('''\
    import datetime

    import anthropic

    client = anthropic.Anthropic()


    def ask(question):
        return client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            system=f"Today is {datetime.datetime.now()}",
            messages=[{"role": "user", "content": question}],
        )
    ''')

CLEAN = LEAK.replace('f"Today is {datetime.datetime.now()}"', '"You are a helpful assistant."')

UNORDERED = textwrap.dedent('''\
    import anthropic

    client = anthropic.Anthropic()
    TOOLS = {"search", "open"}


    def ask(question):
        return client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            system="Tools: " + ", ".join(TOOLS),
            messages=[{"role": "user", "content": question}],
        )
    ''')


def promptlint(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PROMPTLINT_DEBUG"}
    return subprocess.run([sys.executable, "-m", "promptlint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture()
def project(tmp_path):
    """A project folder with its own (empty) [tool.promptlint] so no outer config applies."""
    (tmp_path / "pyproject.toml").write_text("[tool.promptlint]\n", encoding="utf-8")
    return tmp_path


def test_clean_project_exits_0_with_all_clear(project):
    (project / "agent.py").write_text(CLEAN, encoding="utf-8")
    result = promptlint("lint", "--no-cache", cwd=project)
    assert (result.returncode, result.stdout) == (0, "All clear.\n")


def test_finding_exits_1_and_prints_location_code_and_trace(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "agent.py", cwd=project)
    assert result.returncode == 1
    first, *rest = result.stdout.splitlines()
    assert first.startswith("agent.py:12:")
    assert " PC101 " in first
    assert rest[0].startswith("  source agent.py:12:")
    assert rest[-1] == "Found 1 finding (0 fixable with --fix)."


def test_exit_zero_keeps_the_report_but_exits_0(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--exit-zero", cwd=project)
    assert result.returncode == 0 and "PC101" in result.stdout


def test_quiet_prints_findings_without_summary(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "-q", cwd=project)
    assert result.returncode == 1 and "Found" not in result.stdout and "PC101" in result.stdout


def test_ignore_on_the_command_line_hides_the_code(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--ignore", "PC1", cwd=project)
    assert (result.returncode, result.stdout) == (0, "All clear.\n")


def test_select_on_the_command_line_reports_only_those_codes(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--select", "PC5,PC6", cwd=project)
    assert result.returncode == 0


def test_per_file_ignores_from_pyproject_apply(project):
    (project / "pyproject.toml").write_text("[tool.promptlint.per-file-ignores]\n'agent.py' = ['PC101']\n")
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    assert promptlint("lint", "--no-cache", cwd=project).returncode == 0


def test_json_format_has_the_documented_fields(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--format", "json", cwd=project)
    assert result.returncode == 1
    [item] = json.loads(result.stdout)
    assert set(item) >= {"path", "line", "column", "end_line", "end_column", "code", "name", "message", "severity",
                         "fix", "trace"}
    assert (item["path"], item["line"], item["code"], item["severity"]) == ("agent.py", 12, "PC101", "error")
    assert all(set(step) == {"path", "line", "column", "note", "kind"} for step in item["trace"])
    kinds = [step["kind"] for step in item["trace"]]
    assert kinds[0] == "source" and kinds[-1] == "sink" and set(kinds[1:-1]) <= {"step"}
    assert item["related"] == []
    assert item["trace"][-1]["line"] == 12


def test_github_format_prints_one_error_command_per_finding(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--format", "github", cwd=project)
    [line] = result.stdout.splitlines()
    assert line.startswith("::error file=agent.py,line=12,col=")
    assert ",title=PC101 time-in-stable-layer::" in line


def test_statistics_counts_per_code(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--statistics", cwd=project)
    assert result.returncode == 1
    assert result.stdout.split() == ["1", "PC101", "time-in-stable-layer"]


def test_output_file_receives_the_report_and_stdout_stays_empty(project):
    (project / "agent.py").write_text(LEAK, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--format", "sarif", "--output-file", "out.sarif", cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    assert json.loads((project / "out.sarif").read_text())["version"] == "2.1.0"


def test_suppression_comment_is_honoured_end_to_end(project):
    text = LEAK.replace('now()}",', 'now()}",  # promptlint: ignore[PC101] date belongs to the session')
    (project / "agent.py").write_text(text, encoding="utf-8")
    assert promptlint("lint", "--no-cache", cwd=project).returncode == 0


def test_unknown_config_key_exits_2_with_one_line_naming_the_key(project):
    (project / "pyproject.toml").write_text("[tool.promptlint]\nselct = ['PC1']\n")
    result = promptlint("lint", cwd=project)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "'selct'" in result.stderr and "Traceback" not in result.stderr


def test_unknown_code_on_the_command_line_exits_2(project):
    result = promptlint("lint", "--select", "PC999", cwd=project)
    assert result.returncode == 2 and "PC999" in result.stderr


def test_missing_path_exits_2_naming_it(project):
    result = promptlint("lint", "missing.py", cwd=project)
    assert result.returncode == 2 and "missing.py" in result.stderr and "Traceback" not in result.stderr


def test_bad_option_value_is_a_usage_error_exit_2(project):
    assert promptlint("lint", "--format", "xml", cwd=project).returncode == 2


def test_rules_lists_every_code_with_name_and_fixable(project):
    result = promptlint("rules", "--format", "json", cwd=project)
    rows = {row["code"]: row for row in json.loads(result.stdout)}
    assert result.returncode == 0
    assert rows["PC501"]["name"] == "unordered-collection-in-stable-layer" and rows["PC501"]["fixable"] is True
    assert rows["PC101"]["fixable"] is False and rows["PC101"]["family"]


def test_explain_prints_the_fixed_sections(project):
    result = promptlint("explain", "PC101", cwd=project)
    assert result.returncode == 0
    sections = [line for line in result.stdout.splitlines() if line and not line.startswith(" ")]
    assert sections[1:] == ["What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"]


def test_explain_names_the_family_of_a_framework_checks_values(project):
    assert promptlint("explain", "PC602", cwd=project).stdout.splitlines()[0] == (
        "PC602 retrieval-in-system-message (framework: per-turn values, error)")
    assert promptlint("explain", "PC101", cwd=project).stdout.splitlines()[0] == "PC101 time-in-stable-layer (time, error)"


def test_explain_unknown_code_exits_2_and_suggests_close_codes(project):
    result = promptlint("explain", "PC10", cwd=project)
    assert result.returncode == 2 and "did you mean" in result.stderr and "PC101" in result.stderr


def test_diff_shows_the_fix_and_changes_nothing(project):
    pytest.importorskip("promptlint.lint.fix")
    (project / "pyproject.toml").write_text(ORDERING_PYPROJECT, encoding="utf-8")
    (project / "agent.py").write_text(UNORDERED, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--diff", cwd=project)
    assert result.returncode == 1
    assert "+" in result.stdout and "sorted(TOOLS)" in result.stdout
    assert (project / "agent.py").read_text() == UNORDERED


def test_fix_rewrites_the_file_and_exits_0_when_nothing_remains(project):
    pytest.importorskip("promptlint.lint.fix")
    (project / "pyproject.toml").write_text(ORDERING_PYPROJECT, encoding="utf-8")
    (project / "agent.py").write_text(UNORDERED, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--fix", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sorted(TOOLS)" in (project / "agent.py").read_text()
