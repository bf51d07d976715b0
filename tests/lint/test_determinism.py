"""One tree, one output: full, incremental (cached) and every ``-j`` agree (issue 13).

What ``import helpers`` or ``import anthropic`` resolves to depends on the import roots; they
are computed from the whole file list before analysis, never grown by whatever a worker met
first.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CALLER = textwrap.dedent('''\
    import anthropic
    import helpers

    client = anthropic.Anthropic()


    def ask(question):
        return client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            system=f"Today is {helpers.now()}",
            messages=[{"role": "user", "content": question}],
        )
    ''')


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Two folders with a module of the same name (one returns a clock, one a constant), callers in
    both, and a local package named like the installed SDK, last in file order."""
    root = tmp_path_factory.mktemp("same-names")
    (root / "pyproject.toml").write_text("[tool.promptlint]\n")
    for folder, helper in (("app", "def now():\n    return 1\n"),
                           ("svc", "import time\n\n\ndef now():\n    return time.time()\n")):
        (root / folder).mkdir()
        (root / folder / "helpers.py").write_text(helper)
        for i in range(30):  # enough files for a worker pool
            (root / folder / f"m{i:02d}.py").write_text(CALLER)
    (root / "zz" / "anthropic").mkdir(parents=True)
    (root / "zz" / "anthropic" / "__init__.py").write_text(
        "class Anthropic:\n    def __init__(self):\n        self.messages = self\n\n    def create(self, **kw):\n"
        "        return kw\n")
    return root


def lint(tree, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--format", "json", *args], cwd=tree,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def test_full_incremental_and_every_jobs_setting_give_one_output(tree):
    reference = lint(tree, "--no-cache", "-j", "1")
    outputs = {"-j 1": reference}
    for run in range(10):
        outputs[f"default jobs #{run}"] = lint(tree, "--no-cache")
        if run < 3:
            outputs[f"-j 2 #{run}"] = lint(tree, "--no-cache", "-j", "2")
    outputs["cold cache"] = lint(tree)
    for name in ("svc/m07.py", "app/m03.py", "svc/helpers.py"):  # edits: an incremental run each
        os.utime(tree / name, ns=(os.stat(tree / name).st_atime_ns, os.stat(tree / name).st_mtime_ns + 10**9))
        outputs[f"incremental after touching {name}"] = lint(tree)
    outputs["warm cache"] = lint(tree)
    differing = sorted(name for name, out in outputs.items() if out != reference)
    assert differing == [], differing


def test_import_roots_come_from_the_whole_file_list(tmp_path):
    from promptlint.lint.project import import_roots

    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/mod.py", "tests/test_a.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    files = [str(tmp_path / "pkg" / "sub" / "mod.py"), str(tmp_path / "tests" / "test_a.py")]
    assert import_roots(files) == sorted([str(tmp_path), str(tmp_path / "tests")])
    assert import_roots(list(reversed(files))) == import_roots(files)


def test_jobs_are_clamped_to_the_cores_and_to_the_work():
    from promptlint.lint.engine import PARALLEL_THRESHOLD, usable_cores, worker_count

    cores = usable_cores()
    assert worker_count(1000, 60) <= cores
    assert worker_count(1000, 10_000) == cores
    assert worker_count(None, 10_000) == cores
    assert worker_count(1000, PARALLEL_THRESHOLD - 1) == 1  # too little work for a pool
    assert worker_count(1000, PARALLEL_THRESHOLD) <= 2  # at least PARALLEL_THRESHOLD // 2 files a worker
    assert worker_count(1, 10_000) == 1


def test_files_are_dealt_to_workers_by_the_file_list_alone():
    from promptlint.lint.engine import CHUNKS_PER_JOB, deal

    files = [f"f{i:04d}.py" for i in range(1000)]
    shares = deal(files, 3)
    assert shares == deal(list(files), 3)  # nothing but the list and the worker count decides
    dealt = [f for share in shares for batch in share for f in batch]
    assert sorted(dealt) == files and len(dealt) == len(files)  # each file exactly once
    assert all(batch == sorted(batch) for share in shares for batch in share)  # neighbours together
    sizes = [sum(len(b) for b in share) for share in shares]
    assert max(sizes) - min(sizes) <= len(files) // (3 * CHUNKS_PER_JOB)  # balanced within one batch
