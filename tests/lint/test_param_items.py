"""A helper that reads one item of a list or dict it is given (issue 14, blind batch
2026-11-26l): `prompt[0]` becomes the system message, `prompt[1]` the user's. The caller's other
items do not reach the system message. Each case is a small example written for this suite."""

from __future__ import annotations

import pytest

from promptlint.lint.engine import lint_source

HELPER = '''from datetime import datetime

from openai import OpenAI

client = OpenAI()


def generate(prompt, history):
    system = prompt[{system}]
    user = prompt[{user}]
    return client.chat.completions.create(model="m", messages=[{{"role": "system", "content": system}}, *history,
                                                                {{"role": "user", "content": user}}])


def step(task, history):
    return generate({argument}, history)
'''


@pytest.mark.parametrize("system, user, argument, reported", [
    ("0", "1", '["You are a web agent.", f"{task} at {datetime.now()}"]', False),
    ("0", "1", '[f"You are a web agent. {datetime.now()}", task]', True),
    ('"system"', '"user"', '{"system": "Be brief.", "user": f"{task} at {datetime.now()}"}', False),
    ('"system"', '"user"', '{"system": f"Now {datetime.now()}", "user": task}', True),
    ("0", "1", 'list_of(task)', False),  # structure unknown: nothing to attribute the clock to
])
def test_only_the_item_the_helper_reads_reaches_its_sink(system, user, argument, reported):
    text = HELPER.format(system=system, user=user, argument=argument) + "\n\ndef list_of(task):\n    return [task]\n"
    assert bool(lint_source(text, "agent.py")) == reported


def test_an_item_of_unknown_structure_still_carries_the_whole_argument():
    text = HELPER.format(system="0", user="1", argument="opaque(task, datetime.now())")
    assert [d.code for d in lint_source(text, "agent.py")] == ["PC101"]


def test_a_node_shaped_helper_called_with_a_dict_reads_the_callers_fields():
    """`_build_final_messages(state)` takes a state dict like a LangGraph node, but the caller
    builds that dict and calls it directly: the system prompt it reads is the caller's."""
    text = '''import datetime
from langchain_core.messages import HumanMessage, SystemMessage


def _build_final_messages(state):
    context = state.get("context", {})
    system_prompt = context.get("system_prompt", "")
    return [SystemMessage(content=system_prompt), *state["messages"], HumanMessage(content=state["request"])]


def answer(llm, history, question):
    now = datetime.datetime.now().strftime("%H:%M:%S")
    system_prompt = f"You are Fay. The time is {now}."
    state = {"request": question, "messages": history, "context": {"system_prompt": system_prompt}}
    return llm.stream(_build_final_messages(state))
'''
    found = lint_source(text, "stream.py")
    assert [d.code for d in found] == ["PC101"]
    assert found[0].trace[0].line == 12
