"""Bad input gets one clear diagnostic for that file, and every other file is still linted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from promptlint.lint.engine import lint_paths
from promptlint.lint.diagnostic import Settings

LEAK = '''import anthropic
from datetime import datetime

anthropic.Anthropic().messages.create(model="m", max_tokens=9, system=f"{datetime.now()}", messages=[])
'''


def tree(tmp_path: Path) -> Path:
    (tmp_path / "good_leak.py").write_text(LEAK, encoding="utf-8")
    (tmp_path / "binary.py").write_bytes(b"import anthropic\x00\x01\x02")
    (tmp_path / "latin1.py").write_bytes("import anthropic\nname = 'café'\n".encode("latin-1"))
    (tmp_path / "cookie_ok.py").write_bytes("# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1"))
    (tmp_path / "broken.py").write_text("import anthropic\nanthropic.Anthropic().messages.create(system=\n",
                                        encoding="utf-8")
    (tmp_path / "huge.py").write_text("import anthropic\n" + "x = 1\n" * 40_000, encoding="utf-8")
    # A project generator's templates are not Python: a Jinja block, or a file under `{{...}}`.
    (tmp_path / "jinja_agent.py").write_text("import anthropic\n{%- if cookiecutter.use_claude %}\n"
                                             "anthropic.Anthropic().messages.create(system=\n{%- endif %}\n")
    (tmp_path / "{{cookiecutter.slug}}").mkdir()
    (tmp_path / "{{cookiecutter.slug}}" / "app.py").write_text("import anthropic\nsystem = {{ cookiecutter.system }}\n"
                                                              "anthropic.Anthropic().messages.create(system=\n")
    return tmp_path


def test_each_bad_file_gets_its_own_code_and_the_leak_is_still_found(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.promptlint]\nmax-file-bytes = 100000\n")
    run = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache", "--format", "json", "."],
                         cwd=tree(tmp_path), capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    by_file = {(Path(d["path"]).name, d["code"]) for d in json.loads(run.stdout)}
    assert by_file == {
        ("good_leak.py", "PC101"),
        ("binary.py", "PC003"),
        ("latin1.py", "PC002"),
        ("broken.py", "PC001"),
        ("huge.py", "PC003"),
    }


def test_an_internal_error_on_one_file_is_reported_for_that_file_only(tmp_path, monkeypatch):
    from promptlint.lint import analysis

    (tmp_path / "good_leak.py").write_text(LEAK, encoding="utf-8")
    (tmp_path / "explodes.py").write_text(LEAK.replace("datetime.now()", "datetime.utcnow()"), encoding="utf-8")
    original = analysis.ModuleAnalysis.run

    def run(self, *args, **kwargs):
        if self.path.endswith("explodes.py"):
            raise RuntimeError("boom")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(analysis.ModuleAnalysis, "run", run)
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    found = {(Path(d.path).name, d.code) for d in report.diagnostics}
    assert found == {("good_leak.py", "PC101"), ("explodes.py", "PC004")}
    message = next(d.message for d in report.diagnostics if d.code == "PC004")
    assert "RuntimeError: boom" in message


def test_a_broken_rule_file_on_a_tree_big_enough_for_workers_is_one_line_exit_2(tmp_path):
    """Workers load the rule files too: their failure is reported once, the run never hangs."""
    for i in range(60):
        (tmp_path / f"m{i:02d}.py").write_text(f"x = {i}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.promptlint]\nrule-files = ["bad.yaml"]\n')
    (tmp_path / "bad.yaml").write_text("sinks:\n  - id: x\n    bogus: 1\n")
    proc = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache", "-j", "2", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"promptlint: error: {tmp_path / 'bad.yaml'}: sinks[0]: unknown key(s) bogus"]
