"""Every ```python and ```sh block of README.md and docs/*.md runs as a user would paste it.

Blocks run in a temporary folder where ``fixtures`` and ``scripts`` point into the checkout, with
this interpreter's bin folder first on PATH (``.venv/bin/`` prefixes are dropped). A python block
must exit 0; one that defines ``test_*`` functions is a test a user copies into a suite, so it
runs under pytest and its tests must pass. A sh block runs whole as one bash script and every
command in it must exit 0 or 1 (promptlint's documented outcomes; 2 is a usage error) without a
traceback; processes it leaves behind are ended. A block preceded by
``<!-- docs-test: in DIR -->`` runs in the checkout's DIR, which is also importable (an example
with its own modules). A block preceded by ``<!-- docs-test: skip (reason) -->``
is skipped with that reason: only a live API key, the network or a package install. ``text`` blocks
are output samples and never run. Every other block must run: a failure fails.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<reason>[^)]*)\)\s*-->")
FOLDER = re.compile(r"<!--\s*docs-test:\s*in\s+(?P<folder>[\w./-]+)\s*-->")
TEST_FUNCTION = re.compile(r"^def test_\w+\(", re.M)
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


def blocks():
    """(page, line, language, code, skip reason or None, folder or None) of every fenced block."""
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
                skip, folder = SKIP.search(before), FOLDER.search(before)
                yield (page.relative_to(ROOT).as_posix(), start + 1, match["lang"], "\n".join(body),
                       skip["reason"] if skip else None, folder["folder"] if folder else None)
            i += 1


CASES = [b for b in blocks() if b[2] in ("python", "sh")]


def sandbox(tmp_path: Path) -> dict[str, str]:
    for name in ("fixtures", "scripts"):
        (tmp_path / name).symlink_to(ROOT / name)
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PYTHONPATH": str(ROOT), "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


# Runs before a sh block: any command exiting above 1 (promptlint's usage error, a crash) stops the
# block with its line; 0 and 1 (findings, a mismatch) are documented outcomes and go on.
SH_PRELUDE = """trap 'rc=$?; if [ $rc -gt 1 ]; then echo "docs-test: exit $rc at block line $LINENO" >&2; exit $rc; fi' ERR
"""


def run_sh(code: str, cwd: Path, env: dict[str, str], scratch: Path) -> subprocess.CompletedProcess:
    """The whole block as one bash script, as a user pastes it; then every process it left is ended."""
    script = code.replace(".venv/bin/", "")
    out, err = scratch / "block.stdout", scratch / "block.stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        # Output goes to files, not pipes: a server the block leaves running would hold a pipe open.
        process = subprocess.Popen(["bash", "-c", SH_PRELUDE + script], cwd=cwd, env=env, stdout=stdout,
                                   stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code_ = process.wait(timeout=240)
        except subprocess.TimeoutExpired:
            code_ = -1
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    return subprocess.CompletedProcess("bash", code_, out.read_text("utf-8", "replace"),
                                       err.read_text("utf-8", "replace"))


@pytest.mark.parametrize("page,line,lang,code,skip,directory", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_code_block_runs(page, line, lang, code, skip, directory, tmp_path):
    if skip:
        pytest.skip(skip)
    cwd = ROOT / directory if directory else tmp_path
    env = sandbox(tmp_path)
    if directory:
        env["PYTHONPATH"] = str(cwd) + os.pathsep + env["PYTHONPATH"]
    if lang == "python" and TEST_FUNCTION.search(code):
        # a test a user copies into their suite: run it with pytest, so its body runs too (the file
        # is written to the temporary folder, never into the checkout)
        (tmp_path / "test_block.py").write_text(code + "\n", encoding="utf-8")
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_block.py"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        ok = result.returncode == 0 and " passed" in result.stdout
        result.stderr += result.stdout
    elif lang == "python":
        result = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                                capture_output=True, text=True, timeout=120)
        ok = result.returncode == 0
    else:
        result = run_sh(code, cwd, env, tmp_path)
        # promptlint's documented exit codes: 0 clean, 1 findings/mismatch; 2 is a usage error
        ok = result.returncode in (0, 1) and "Traceback" not in result.stderr
    if not ok:
        detail = f"exit {result.returncode}: {result.stderr[-1500:]}"
        pytest.fail(f"{page}:{line} ({lang}) does not run:\n{code}\n---\n{detail}")
