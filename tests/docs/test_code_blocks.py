"""Every ```python and ```sh block of README.md and docs/*.md that a user would copy runs.

Python blocks run in a temporary folder where ``fixtures`` and ``scripts`` point into the
checkout; sh blocks run the lines that call ``promptlint`` or ``scripts/`` as subprocesses with
this interpreter's bin folder on PATH. A block preceded by ``<!-- docs-test: skip (reason) -->``
is skipped with that reason (a live API key, the network, a package install). ``text`` blocks
are output samples and never run. Pages other engineers own are checked too, but a failure
there is an xfail naming the block, so parallel edits do not break this suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OWNED = {"README.md", "docs/contract.md", "docs/golden.md", "docs/index.md"}
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<reason>[^)]*)\)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


def blocks():
    """(page, line, language, code, skip reason or None) of every fenced block."""
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = page.read_text("utf-8").splitlines()
        i = 0
        while i < len(lines):
            match = FENCE.match(lines[i])
            if match and match["lang"]:
                start, body = i, []
                i += 1
                while i < len(lines) and not lines[i].startswith("```"):
                    body.append(lines[i])
                    i += 1
                before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
                skip = SKIP.search(before)
                yield (page.relative_to(ROOT).as_posix(), start + 1, match["lang"], "\n".join(body),
                       skip["reason"] if skip else None)
            i += 1


CASES = [b for b in blocks() if b[2] in ("python", "sh")]


def sandbox(tmp_path: Path) -> dict[str, str]:
    for name in ("fixtures", "scripts"):
        (tmp_path / name).symlink_to(ROOT / name)
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PYTHONPATH": str(ROOT), "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


def run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=sandbox(tmp_path),
                          capture_output=True, text=True, timeout=120)


def run_sh(code: str, tmp_path: Path) -> list[subprocess.CompletedProcess]:
    env = sandbox(tmp_path)
    results = []
    for line in code.splitlines():
        command = line.split("  #")[0].strip()
        if not command or command.startswith("#"):
            continue
        command = command.replace(".venv/bin/", "")
        if not re.match(r"^(promptlint|python3? scripts/|pre-commit)\b", command):
            continue
        if command.endswith("&") or "PORT" in command:  # a server left running, or a placeholder port
            raise AssertionError(f"line {command!r} starts a background server or needs a port: mark the block "
                                 "with <!-- docs-test: skip (reason) --> or make it self-contained")
        results.append(subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                                      capture_output=True, text=True, timeout=180))
    return results


@pytest.mark.parametrize("page,line,lang,code,skip", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_code_block_runs(page, line, lang, code, skip, tmp_path):
    if skip:
        pytest.skip(skip)
    if lang == "python":
        results = [run_python(code, tmp_path)]
        ok = results[0].returncode == 0
    else:
        try:
            results = run_sh(code, tmp_path)
        except AssertionError as exc:
            results = [subprocess.CompletedProcess("", 2, "", str(exc))]
        # promptlint's documented exit codes: 0 clean, 1 findings/mismatch; 2 is a usage error
        ok = all(r.returncode in (0, 1) and "Traceback" not in r.stderr for r in results)
    if not ok:
        detail = "\n".join(f"exit {r.returncode}: {r.stderr[-800:]}" for r in results)
        if page not in OWNED:
            pytest.xfail(f"{page}:{line} fails (page edited by another engineer): {detail[:300]}")
        pytest.fail(f"{page}:{line} ({lang}) does not run:\n{code}\n---\n{detail}")
