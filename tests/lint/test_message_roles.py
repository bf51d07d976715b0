"""Provider adapters split a message list by role (issue 14): ``system=`` gets the system
messages only, so what the newest user message carries does not reach it, and what the system
message carries still does. Each case is a small example written for this suite."""

from __future__ import annotations

import pytest

from promptlint.lint.engine import lint_source

HEAD = '''import datetime
import anthropic

client = anthropic.Anthropic()


def build(history, question):
    now = datetime.datetime.now()
    messages = [{"role": "system", "content": SYSTEM}]
    messages.extend(history)
    messages.append({"role": "user", "content": USER})
    return messages
'''
#: Where the clock goes: into the newest user message (no leak) or into the system message.
STAMPED = {False: ("'You are terse.'", "f'{now}: {question}'"), True: ("f'Today is {now}.'", "question")}


def _source(split: str, stamp_system: bool, inline: bool = False) -> str:
    system, user = STAMPED[stamp_system]
    head = HEAD.replace("SYSTEM", system).replace("USER", user)
    if inline:  # one function: the list is built and split in place
        body = head.split("    now = ", 1)[1].rsplit("    return messages", 1)[0]
        return head + split.replace("    messages = build(history, question)\n", "    now = " + body)
    return head + split


#: A provider adapter's loop over the message list; BODY is what it does with each message `m`.
LOOP_SPLIT = '''
def send(history, question):
    messages = build(history, question)
    system, rest = None, []
    for m in messages:
BODY
    return client.messages.create(model="m", max_tokens=9, system=system, messages=rest)
'''
LOOP_BODIES = {
    "loop": '''        if m["role"] == "system":
            system = m["content"]
        else:
            rest.append(m)''',
    "alias": '''        role = m.get("role", "")
        if role in ("system", "developer"):
            system = m["content"]
        else:
            rest.append(dict(m))''',
    "continue": '''        if m["role"] == "system":
            system = m["content"]
            continue
        rest.append(m)''',
}

SPLITS = {
    **{name: LOOP_SPLIT.replace("BODY", body) for name, body in LOOP_BODIES.items()},
    "comprehension": '''
def send(history, question):
    messages = build(history, question)
    system = "\\n".join(m["content"] for m in messages if m.get("role") == "system")
    rest = [m for m in messages if m.get("role") != "system"]
    return client.messages.create(model="m", max_tokens=9, system=system, messages=rest)
''',
    "helper": '''
def split(messages):
    system = [m["content"] for m in messages if m["role"] in ("system", "developer")]
    return "\\n".join(system), [m for m in messages if m["role"] not in ("system", "developer")]


def send(history, question):
    system, rest = split(build(history, question))
    return client.messages.create(model="m", max_tokens=9, system=system, messages=rest)
''',
}


def _request_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "client.messages.create" in line)


@pytest.mark.parametrize("shape", sorted(SPLITS))
def test_the_newest_user_message_does_not_reach_the_system_split_off_it(shape):
    text = _source(SPLITS[shape], stamp_system=False)
    assert [d.code for d in lint_source(text, "adapter.py")] == []


@pytest.fixture
def every_sink(monkeypatch):
    """Each sink a flow reaches, as the analysis found them: the system message dict and the
    request that sends it are one leak, reported once, but these tests ask about the request."""
    monkeypatch.setattr("promptlint.lint.engine.one_per_flow", list)


@pytest.mark.parametrize("shape", sorted(SPLITS))
def test_a_clock_in_the_system_message_still_reaches_system(shape, every_sink):
    text = _source(SPLITS[shape], stamp_system=True)
    assert ("PC101", _request_line(text)) in [(d.code, d.line) for d in lint_source(text, "adapter.py")]


@pytest.mark.parametrize("shape", ["loop", "comprehension", "alias", "continue"])
@pytest.mark.parametrize("stamp_system", [False, True])
def test_a_list_built_and_split_in_one_function(shape, stamp_system, every_sink):
    text = _source(SPLITS[shape], stamp_system, inline=True)
    found = [(d.code, d.line) for d in lint_source(text, "adapter.py")]
    assert (("PC101", _request_line(text)) in found) if stamp_system else found == []


def test_a_converter_that_dispatches_on_the_message_class_keeps_roles_apart():
    # `isinstance(message, SystemMessage)` is a role test: a human message's content reaches the
    # converter's user branch only; a system message's content still reaches its system branch.
    text = '''from datetime import datetime

import anthropic
from langchain_core.messages import HumanMessage, SystemMessage


def convert(message):
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    raise ValueError(message)


def send(history, question, system_text):
    messages = [convert(SystemMessage(content=system_text)), *history,
                convert(HumanMessage(content=f"({datetime.now()}) {question}"))]
    return anthropic.Anthropic().messages.create(model="m", max_tokens=9, messages=messages)
'''
    assert lint_source(text, "convert.py") == []
    stamped = text.replace("SystemMessage(content=system_text)", "SystemMessage(content=f\"Today {datetime.now()}\")")
    assert "PC101" in [d.code for d in lint_source(stamped, "convert.py")]



@pytest.mark.parametrize("before, after, reported", [
    ("", "*history, ", True),  # the conversation follows it: each turn's prefix differs there
    ("", "", False),  # only this turn's question follows it: nothing cached comes after it
    ("*history, ", "", False),
    ('{"role": "user", "content": q}, ', "", False),
])
def test_a_system_message_after_the_history_in_a_list_display_is_late(before, after, reported):
    # Displayed or appended, a system message after the history sits late in the request.
    text = ("from datetime import datetime\n\nfrom openai import OpenAI\n\n\ndef turn(history, q):\n"
            "    messages = [{'role': 'system', 'content': 'Be brief.'}, " + before +
            "{'role': 'system', 'content': f'Now {datetime.now()}'}, " + after + "{'role': 'user', 'content': q}]\n"
            "    return OpenAI().chat.completions.create(model='m', messages=messages)\n")
    assert bool(lint_source(text, "late.py")) == reported


RESPONSES_ADAPTER = '''import datetime
import httpx


def to_payload(messages):
    instructions, items = None, []
    for msg in messages:
        role = msg.get("role", "")
        if role in ("system", "developer"):
            instructions = msg.get("content", "")
        else:
            item = dict(msg)
            items.append(item)
    return {"model": "m", "instructions": instructions, "input": items}


def ask(question):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    return httpx.post("https://api.example.invalid/v1/responses", json=to_payload(messages))
'''


@pytest.mark.parametrize("stamp_system", [False, True])
def test_an_adapter_sets_the_other_roles_aside_from_its_instructions(stamp_system):
    """`role = msg.get("role")` then `if role in ("system", "developer"): ... else:` (a Responses
    API adapter): the else branch holds the other messages, so a per-turn value of the user
    message goes to `input`, not to `instructions`."""
    system, user = ("f'Today is {datetime.datetime.now()}.'", "'hi'") if stamp_system else (
        "'You are terse.'", "f'{datetime.datetime.now()}: hi'")
    text = RESPONSES_ADAPTER.replace("SYSTEM", system).replace("USER", user)
    codes = [d.code for d in lint_source(text, "adapter.py")]
    assert ("PC101" in codes) if stamp_system else codes == []


@pytest.mark.parametrize(("listed", "reported"), [("conversation_history", True), ("history", True), ("rows", False)])
def test_the_head_of_a_conversation_rewritten_in_place_is_its_system_message(listed, reported):
    # A server that takes the conversation back from its client and rewrites its first message.
    text = f'''from datetime import datetime


def first_turn(question):
    return [{{"role": "system", "content": "You are an SRE."}}, {{"role": "user", "content": question}}]


def follow_up(request):
    {listed} = request.conversation_history
    {listed}[0]["content"] = f"You are an SRE. Now: {{datetime.now()}}"
    return {listed}
'''
    assert [(d.line, d.code) for d in lint_source(text, "chat.py")] == ([(10, "PC101")] if reported else [])


@pytest.mark.parametrize(("role", "reported"), [("tool", False), ("system", True)])
def test_a_head_built_here_with_another_role_is_that_message(role, reported):
    # A reply for the UI: its first record is a tool-role citations record, serialised in place.
    text = f'''import json


def parse(question, answer):
    messages = [{{"role": "{role}", "content": {{"citations": [], "intent": question}}}}]
    messages.append({{"role": "assistant", "content": answer}})
    messages[0]["content"] = json.dumps(messages[0]["content"])
    return messages


def reply(user_message, answer):
    return parse(question=user_message, answer=answer)
'''
    assert bool(lint_source(text, "parser.py")) is reported



MEASURED = '''import time


def count_message_tokens(messages):
    return sum(len(m["content"]) for m in messages)


def chat_with_ai(system_prompt, history, user_input, plugin_note):
    sequence = [{"role": "system", "content": system_prompt}, *history, {"role": "user", "content": user_input}]
    budget = count_message_tokens([{"role": "system", "content": f"{plugin_note} at {time.time()}"}])
    return sequence, budget
'''


def test_a_message_built_inside_a_measuring_call_is_not_sent():
    # `count_message_tokens([{"role": "system", ...}])`: measured, never sent.
    assert lint_source(MEASURED, "chat.py") == []
    sent = MEASURED.replace("count_message_tokens([", "send([")
    assert [d.code for d in lint_source(sent, "chat.py")] == ["PC101"]


PICKED = '''import datetime


def send(client, messages):
    today = datetime.date.today().strftime("%A, %Y-%m-%d")
    system_msg = None
    for m in messages:
        if m.get("role") == "system":
            system_msg = m
            break
    if system_msg:
        old = system_msg.get("content")
        system_msg["content"] = f"Today is {today}.\\n\\n{old}"
    return client.chat.completions.create(model="x", messages=messages)
'''


@pytest.mark.parametrize(("test", "expected"), [('m.get("role") == "system"', [("PC101", 13)]),
                                                ('m.get("role") == "user"', [])])
def test_a_message_picked_by_its_system_role_is_edited_in_place_later(test, expected):
    # The loop keeps the system message in a local; the edit after the loop is the sink.
    source = PICKED.replace('m.get("role") == "system"', test)
    assert [(d.code, d.line) for d in lint_source(source, "client.py")] == expected


LATE = '''def build(history, user_message, style):
    system_message_content = f"Reply in the {style} style."
    if user_message.startswith("!"):
        system_message_content += f"\\n[SPECIAL INSTRUCTION]: {user_message}"
    history.append({"role": "system", "content": system_message_content})
    return history
'''


@pytest.mark.parametrize(("append", "expected"), [(True, []), (False, [("PC401", 5)])])
def test_a_local_named_for_a_system_message_appended_after_the_history_is_not_stable(append, expected):
    # Named for a system message, but added at the end of the conversation: nothing cached follows.
    source = LATE if append else LATE.replace("history.append(", "history.insert(0, ")
    assert [(d.code, d.line) for d in lint_source(source, "bot.py")] == expected


@pytest.mark.parametrize(("position", "reported"), [(-1, False), (0, True)])
def test_a_message_made_by_a_factory_with_a_role_is_placed_where_it_is_inserted(position, reported):
    # (blind batch 2026-11-26bd) A voice agent's hook makes `ChatMessage.create(role="system", ...)`
    # with this turn's retrieval and inserts it right before the newest message: late, not stable.
    source = f'''from livekit.agents import llm


async def before_llm_cb(agent, chat_ctx, fetch):
    context = await fetch(chat_ctx.messages[-1].content)
    rag_msg = llm.ChatMessage.create(role="system", text=f"Context:\\n{{context}}")
    chat_ctx.messages.insert({position}, rag_msg)
    return agent.llm.chat(chat_ctx=chat_ctx)
'''
    assert [d.code for d in lint_source(source)] == (["PC401"] if reported else [])
