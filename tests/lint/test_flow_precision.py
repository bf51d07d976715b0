"""Flow precision on real code shapes (issue 14): a finding is reported once, for a flow that
exists, and its trace starts at the source. Each case is a small example written for this suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from promptlint.lint.diagnostic import Settings
from promptlint.lint.engine import lint_paths, lint_source


def lint_tree(root: Path, files: dict[str, str]):
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    report = lint_paths([str(root)], Settings(root=str(root)), use_cache=False, jobs=1)
    return [(Path(d.path).name, d.line, d.code) for d in report.diagnostics], report.diagnostics


# ------------------------------------------------------------- objects built in other modules
MESSAGE_CLASS = '''from dataclasses import dataclass


@dataclass
class Message:
    role: str
    content: str

    def text(self):
        return self.content
'''


def test_a_field_given_to_one_instance_does_not_reach_every_instance_of_the_class(tmp_path):
    # `a_notes.py` is analysed first: its clock-stamped Message must not make the Message
    # objects another module reads (`m.text()`) carry the clock.
    found, _ = lint_tree(tmp_path, {
        "models.py": MESSAGE_CLASS,
        "a_notes.py": '''from datetime import datetime

from models import Message


def system_note():
    return Message(role="system", content=f"Today is {datetime.now()}")
''',
        "builder.py": '''from models import Message


def transcript(messages):
    return "\\n".join(m.text() for m in messages)


def build(messages):
    system_prompt = "Summarise:\\n" + transcript(messages)
    return [{"role": "system", "content": system_prompt}]
''',
    })
    assert found == [("a_notes.py", 7, "PC101")]


def test_a_field_of_an_instance_built_here_is_still_followed():
    assert [d.code for d in lint_source('''from dataclasses import dataclass
from datetime import datetime


@dataclass
class Context:
    today: str
    name: str


def build():
    ctx = Context(today=str(datetime.now()), name="bot")
    return [{"role": "system", "content": f"You are {ctx.name}. Today is {ctx.today}."}]
''')] == ["PC101"]


def test_an_unused_field_of_an_instance_built_here_is_not_a_flow():
    assert lint_source('''from dataclasses import dataclass
from datetime import datetime


@dataclass
class Context:
    created: str
    name: str


def build():
    ctx = Context(created=str(datetime.now()), name="bot")
    return [{"role": "system", "content": f"You are {ctx.name}."}]
''') == []
