"""LangChain system templates built from ``SystemMessagePromptTemplate`` and kept in a registry
of prompts by name (issue 14, a blind field batch): what a later ``.format(...)`` fills into a
placeholder of the system part reaches the stable prefix; a placeholder of the human part, of a
system message after the history, or a name the system text does not have, does not. Each case
is a small example written for this suite."""

from __future__ import annotations

import pytest

from promptlint.lint.diagnostic import Settings
from promptlint.lint.engine import lint_paths, lint_source

PROMPTS = '''import types
from enum import Enum

from langchain_core.prompts import (ChatPromptTemplate, HumanMessagePromptTemplate, MessagesPlaceholder,
                                    SystemMessagePromptTemplate)


class Name(str, Enum):
    TICKETS = "TICKETS"
    SPLIT = "SPLIT"


def _define():
    prompts = {}
    system = "You answer support tickets. The time is {current_time}."
    prompts[Name.TICKETS] = ChatPromptTemplate.from_messages([
        SystemMessagePromptTemplate.from_template(system),
        HumanMessagePromptTemplate.from_template("{question}"),
    ])
    split = (
        "Split the user input into tasks. "
        "Use the chat history."
    )
    prompts[Name.SPLIT] = ChatPromptTemplate.from_messages([
        SystemMessagePromptTemplate.from_template(split),
        MessagesPlaceholder(variable_name="chat_history"),
        SystemMessagePromptTemplate.from_template("Context: {context}"),
        HumanMessagePromptTemplate.from_template("Input: {question}"),
    ])
    return prompts


_registry = _define()
PROMPTS = types.MappingProxyType(_registry)
'''

RAG = '''import datetime

from pkg.prompts import PROMPTS, Name


class Rag:
    def answer(self, state):
        template = PROMPTS[Name.TICKETS]
        inputs = {"question": state["question"], "current_time": FILL}
        return self.llm.invoke(template.format_prompt(**inputs))

    def split(self, state):
        message = PROMPTS[Name.SPLIT].format(chat_history=state["chat_history"], question=state["question"],
                                             context=datetime.datetime.now().isoformat())
        return self.llm.invoke(message)
'''


def _lint_tree(tmp_path, fill: str):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "prompts.py").write_text(PROMPTS)
    (pkg / "rag.py").write_text(RAG.replace("FILL", fill))
    return lint_paths([str(tmp_path)], Settings(), use_cache=False, jobs=1).diagnostics


def test_a_clock_filled_into_a_registry_template_of_another_module_is_reported(tmp_path):
    found = _lint_tree(tmp_path, 'datetime.datetime.now().strftime("%H:%M:%S")')
    assert [(d.code, d.path.rsplit("/", 1)[-1], d.line) for d in found] == [("PC101", "rag.py", 10)]
    assert found[0].trace[0].line == 9 and "rag.py" in found[0].trace[0].path


def test_a_fixed_value_in_the_same_place_reports_nothing(tmp_path):
    """(and the split prompt: chat history and question fill the human part, the context a
    system message after the history, and its first system text has no placeholder at all)"""
    assert _lint_tree(tmp_path, '"09:00"') == []


@pytest.mark.parametrize("spread", [True, False])
def test_a_system_message_template_filled_in_one_module(spread):
    call = "P.format_prompt(**{'q': q, 'now': now})" if spread else "P.format_prompt(q=q, now=now)"
    text = f'''import datetime
from langchain_core.prompts import ChatPromptTemplate, HumanMessagePromptTemplate, SystemMessagePromptTemplate

P = ChatPromptTemplate.from_messages([SystemMessagePromptTemplate.from_template("Now: {{now}}"),
                                      HumanMessagePromptTemplate.from_template("{{q}}")])


def answer(llm, q):
    now = datetime.datetime.now()
    return llm.invoke({call})
'''
    assert [(d.code, d.line) for d in lint_source(text, "one.py")] == [("PC101", 4)]


def test_a_template_built_once_at_import_keeps_the_date_it_was_built_with(tmp_path):
    """A date read in the function that builds the registry once, at import: frozen (the
    template's factory method builds, it does not send a request)."""
    (tmp_path / "prompts.py").write_text('''import datetime
from langchain_core.prompts import ChatPromptTemplate, SystemMessagePromptTemplate


def _define():
    today = datetime.date.today().isoformat()
    return {"chat": ChatPromptTemplate.from_messages([SystemMessagePromptTemplate.from_template(f"Today is {today}.")])}


PROMPTS = _define()
''')
    assert lint_paths([str(tmp_path)], Settings(), use_cache=False, jobs=1).diagnostics == []


@pytest.mark.parametrize(("name", "reported"), [("preferences", True), ("Preferences", False)])
def test_a_template_joined_from_pieces_in_another_module_is_read_whole(tmp_path, name, reported):
    """A template concatenated from string pieces and a date: the placeholders of every piece
    count; a name the text has only as a word (`Preferences` in a heading) is not one."""
    (tmp_path / "prompts.py").write_text('''import datetime

SYSTEM = """You triage email.
Background: {background}
""" + datetime.date(2024, 1, 1).isoformat() + """
< Preferences >
{preferences}
"""
''')
    (tmp_path / "agent.py").write_text(f'''from prompts import SYSTEM


def respond(llm, store, email):
    found = store.search(("prefs",), query=email)
    content = SYSTEM.format(background="fixed", {name}=found)
    return llm.invoke([{{"role": "system", "content": content}}, {{"role": "user", "content": email}}])
''')
    found = lint_paths([str(tmp_path)], Settings(), use_cache=False, jobs=1).diagnostics
    assert [d.code for d in found] == (["PC401"] if reported else [])
