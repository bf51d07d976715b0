"""Jupyter notebooks are linted like modules, with positions that are lines of the .ipynb file.
Each notebook here is written for this suite with the layout Jupyter saves (indent 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from promptlint.lint.notebook import notebook_source
from tests.lint.opt_in import ORDERING_PYPROJECT

CLOCK_CELL = [
    "def chat(messages):\n",
    "    system = f\"Today is {datetime.datetime.now()}\"\n",
    "    return client.chat.completions.create(model=\"m\", messages=[{\"role\": \"system\", \"content\": system}, *messages])",
]
SETUP_CELL = ["%pip install openai\n", "import datetime\n", "from openai import OpenAI\n", "client = OpenAI()"]


def notebook(*cells, language="python", as_string=False) -> str:
    def cell(kind, source):
        return {"cell_type": kind, "metadata": {}, "source": "".join(source) if as_string else source,
                **({"execution_count": None, "outputs": []} if kind == "code" else {})}

    return json.dumps({"cells": [cell(kind, source) for kind, source in cells],
                       "metadata": {"kernelspec": {"name": "k", "display_name": "k", "language": language}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def lint(tmp_path: Path, *args: str, **files: str) -> tuple[int, list[dict]]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache", "--format", "json", *args, "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if fragment in line)


def test_a_clock_in_a_notebook_cell_is_reported_at_the_notebook_line(tmp_path):
    text = notebook(("markdown", ["# A chat demo\n", "Run the cells in order."]), ("code", SETUP_CELL),
                    ("code", CLOCK_CELL))
    code, found = lint(tmp_path, **{"demo.ipynb": text})
    assert code == 1
    [finding] = found
    clock = line_of(text, "datetime.datetime.now()")
    assert (finding["path"], finding["code"], finding["line"]) == ("demo.ipynb", "PC101", clock)
    assert finding["trace"][0]["line"] == clock and f"(line {clock})" in finding["message"]


def test_ipython_syntax_keeps_the_notebook_parsable(tmp_path):
    cell = [*CLOCK_CELL[:2], "    files = !ls\n", "    %time x = 1\n", CLOCK_CELL[2] + "\n", "chat?"]
    code, found = lint(tmp_path, **{"demo.ipynb": notebook(("code", SETUP_CELL), ("code", cell))})
    assert code == 1 and [f["code"] for f in found] == ["PC101"]


def test_a_cell_saved_as_one_string_is_placed_from_its_source_line(tmp_path):
    text = notebook(("code", SETUP_CELL), ("code", CLOCK_CELL), as_string=True)
    code, found = lint(tmp_path, **{"demo.ipynb": text})
    assert code == 1 and [f["code"] for f in found] == ["PC101"]
    assert found[0]["line"] == line_of(text, "def chat(messages)") + 1  # the cell's second line


def test_a_cell_in_another_language_and_a_non_python_notebook_are_left_out():
    shell = notebook(("code", ["%%bash\n", "date > now.txt"]), ("code", SETUP_CELL))
    assert "date > now.txt" not in notebook_source(shell.encode())
    assert notebook_source(notebook(("code", ["now <- Sys.time()"]), language="R").encode()) == ""


def test_a_broken_notebook_is_a_clear_pc001_and_the_rest_is_still_linted(tmp_path):
    good = notebook(("code", SETUP_CELL), ("code", CLOCK_CELL))
    broken = '{"cells": [{"source": "client.messages.create(system=prompt)"'
    code, found = lint(tmp_path, **{"broken.ipynb": broken, "good.ipynb": good})
    assert code == 1
    assert [(f["path"], f["code"]) for f in found] == [("broken.ipynb", "PC001"), ("good.ipynb", "PC101")]
    assert "not a notebook" in found[0]["message"]


@pytest.mark.parametrize("text", ["", "\n", '{"cells": [{"source": "print(1)"'])
def test_an_empty_notebook_or_a_broken_one_with_no_prompt_in_it_hides_no_finding(tmp_path, text):
    # As for a .py file: what cannot hold a prompt is not read, so it cannot fail to parse.
    code, found = lint(tmp_path, **{"empty.ipynb": text, "good.ipynb": notebook(("code", SETUP_CELL), ("code", CLOCK_CELL))})
    assert [(f["path"], f["code"]) for f in found] == [("good.ipynb", "PC101")]


def test_a_fix_is_never_applied_to_a_notebook(tmp_path):
    cell = ["import os\n", "from openai import OpenAI\n",
            "system = \"Skills: \" + \", \".join(os.listdir(\"skills\"))\n",
            "OpenAI().chat.completions.create(model=\"m\", messages=[{\"role\": \"system\", \"content\": system}])"]
    text = notebook(("code", cell))
    code, found = lint(tmp_path, "--fix", **{"demo.ipynb": text, "pyproject.toml": ORDERING_PYPROJECT})
    assert code == 1 and [f["code"] for f in found] == ["PC501"] and found[0]["fix"] is None
    assert (tmp_path / "demo.ipynb").read_text() == text


def test_a_suppression_comment_in_a_cell_is_honoured(tmp_path):
    cell = [CLOCK_CELL[0], CLOCK_CELL[1].rstrip("\n") + "  # promptlint: ignore[PC101] demo only\n", CLOCK_CELL[2]]
    code, found = lint(tmp_path, **{"demo.ipynb": notebook(("code", SETUP_CELL), ("code", cell))})
    assert (code, found) == (0, [])


def test_the_copies_editors_keep_of_a_notebook_are_not_linted_twice(tmp_path):
    """Jupyter's autosave (`.ipynb_checkpoints/demo-checkpoint.ipynb`) and jupyterlab-lsp's shadow
    document (`.virtual_documents/demo.ipynb`, Python text under a notebook's name) are copies:
    the notebook itself is the one finding."""
    text = notebook(("code", SETUP_CELL), ("code", CLOCK_CELL))
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "demo-checkpoint.ipynb").write_text(text)
    (tmp_path / ".virtual_documents").mkdir()
    (tmp_path / ".virtual_documents" / "demo.ipynb").write_text(notebook_source(text.encode()))
    code, found = lint(tmp_path, **{"demo.ipynb": text})
    assert code == 1 and [f["path"] for f in found] == ["demo.ipynb"]
