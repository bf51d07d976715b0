"""What a loop carries from one request to the next (issue 14, blind batch 2026-11-25d: a retry loop
that feeds failed attempts back into the system prompt, a ReAct loop that renders its call history
into the system message, a tool loop that counts down its turns). Each case is a small example
written for this suite."""

from __future__ import annotations

import pytest

from promptlint.lint.engine import lint_source

HEAD = '''import anthropic

client = anthropic.Anthropic()


def ask(system, text):
    return client.messages.create(model="m", max_tokens=64, system=system,
                                  messages=[{"role": "user", "content": text}])
'''


def found(body: str):
    return [(d.line, d.code, d.trace[0].line) for d in lint_source(HEAD + body)]


def line_of(body: str, text: str) -> int:
    return (HEAD + body).splitlines().index(text) + 1


RETRY = '''

def run(query):
    previous_attempts = ""
    for attempt in range(3):
        answer = ask(f"Write a query. Failed so far:\\n{previous_attempts}", query)
        if answer:
            return answer
        previous_attempts += f"{answer} gave nothing\\n"
'''

REACT = '''

def react(task, tools):
    history = []
    chat = [{"role": "system", "content": ""}, {"role": "user", "content": task}]
    while True:
        chat[0]["content"] = "Calls so far:\\n" + "\\n".join(history)
        reply = client.messages.create(model="m", max_tokens=64, messages=chat)
        history.append(str(reply))
'''

COUNTDOWN = '''

def loop(text):
    remaining_turns = 5
    while remaining_turns > 0:
        ask(f"You have {remaining_turns} turns left.", text)
        remaining_turns -= 1
'''

REBUILT = '''

def loop(text):
    total = 0
    for turn in range(3):
        total = total + 1
        ask(f"Turn {total}.", text)
'''


@pytest.mark.parametrize("body, grows", [
    (RETRY, '        previous_attempts += f"{answer} gave nothing\\n"'),
    (REACT, "        history.append(str(reply))"),
    (COUNTDOWN, "        remaining_turns -= 1"),
    (REBUILT, "        total = total + 1"),
])
def test_a_value_the_loop_grows_reaches_the_next_passs_system_prompt(body, grows):
    findings = found(body)
    assert [(code, source) for _, code, source in findings] == [("PC401", line_of(body, grows))]


def test_the_trace_names_the_loop():
    finding = lint_source(HEAD + COUNTDOWN)[0]
    assert "changes on each pass of the loop at line" in finding.trace[0].note


@pytest.mark.parametrize("body", [
    # Built by the loop, sent once after it.
    '''

def build(sections, text):
    prompt = "You are a helper."
    for section in sections:
        prompt += section
    return ask(prompt, text)
''',
    # Started afresh on every pass.
    '''

def each(items, text):
    for item in items:
        buf = "Item: "
        buf += item
        ask(buf, text)
''',
    # Grown in a loop that sends nothing, then returned once.
    '''

def collect(rows):
    parts = []
    for row in rows:
        parts.append(row)
    return "\\n".join(parts)


def answer(rows, text):
    return ask(collect(rows), text)
''',
    # Returned from inside the loop: what was built so far goes out once.
    '''

def first_good(rows):
    seen = ""
    for row in rows:
        seen += row
        if len(seen) > 100:
            return seen
    return seen


def answer(rows, text):
    return ask(first_good(rows), text)
''',
    # A loop that sends nothing (a provider adapter merging messages of the same role).
    '''

class Provider:
    @staticmethod
    def _alternate(messages):
        merged = []
        for msg in messages:
            role = msg.get("role")
            if merged and role != "system" and merged[-1].get("role") == role:
                previous = merged[-1]
                text = previous.get("content") or ""
                previous["content"] = text + "\\n" + msg["content"]
            else:
                merged.append(dict(msg))
        return merged

    def chat(self, messages):
        return client.messages.create(model="m", max_tokens=64, messages=self._alternate(messages))
''',
    # The system message picked out of a history that grows is the same message on every pass.
    '''

def agent(history):
    while True:
        history.append(Message(role="user", content=input()))
        for message in history:
            if message.role == "system":
                system = message.content
        turns = [{"role": m.role, "content": m.content} for m in history if m.role != "system"]
        reply = client.messages.create(model="m", max_tokens=64, system=system, messages=turns)
        history.append(Message(role="assistant", content=reply.content[0].text))
''',
    # The history grows; the system prompt does not.
    '''

def chat(system):
    messages = []
    while True:
        messages.append({"role": "user", "content": input()})
        reply = client.messages.create(model="m", max_tokens=64, system=system, messages=messages)
        messages.append({"role": "assistant", "content": reply.content[0].text})
''',
])
def test_what_a_loop_only_builds_or_keeps_after_the_prefix_is_not_reported(body):
    assert found(body) == []


def test_the_finding_points_at_the_call_that_passes_the_value_not_where_it_was_first_bound():
    body = RETRY.replace('answer = ask(f"Write a query. Failed so far:\\n{previous_attempts}", query)',
                         "answer = ask(previous_attempts, query)")
    assert [line for line, _, _ in found(body)] == [line_of(body, "        answer = ask(previous_attempts, query)")]


def test_a_helper_that_adds_to_the_loops_tool_list_grows_it():
    body = '''

def add_found_tools(found, tools):
    for tool in found:
        tools.append(tool)


def run(text, registry):
    tools = [registry["search_tools"]]
    messages = [{"role": "user", "content": text}]
    while True:
        reply = client.messages.create(model="m", max_tokens=64, tools=tools, messages=messages)
        if reply.stop_reason != "tool_use":
            return reply
        add_found_tools(registry["found"], tools)
'''
    assert [(code, source) for _, code, source in found(body)] == [
        ("PC401", line_of(body, '        add_found_tools(registry["found"], tools)'))]


def test_a_record_returned_from_inside_a_loop_is_returned_once():
    # The counter is read once, when the loop ends: the fields of the record do not keep it per pass.
    assert lint_source('''from dataclasses import dataclass


@dataclass
class Outcome:
    status: str
    reason: str


def run_loop(step):
    repeats = 0
    while True:
        if step():
            return Outcome(status="done", reason=f"finished after {repeats} repeats")
        repeats += 1


def summarize(client, step):
    outcome = run_loop(step)
    system = f"The last task ended: {outcome.reason}"
    return client.chat.completions.create(model="m", messages=[{"role": "system", "content": system}])
''') == []


PER_CALL = '''import anthropic

KB_TOOL = {"name": "kb", "description": "search the files", "input_schema": {"type": "object"}}


class Agent:
    def __init__(self, tools):
        self.tools = tools
        self.index = None

    def register(self, tool):
        self.tools.append(tool)

    def reply(self, question):
%s
        return anthropic.Anthropic().messages.create(model="m", max_tokens=9, tools=%s,
                                                     messages=[{"role": "user", "content": question}])
'''


def test_a_method_that_grows_its_objects_tool_list_sends_a_longer_list_each_call():
    body = "        tools = self.tools\n        if self.index is not None:\n            tools.append(KB_TOOL)"
    [found] = lint_source(PER_CALL % (body, "tools"))
    assert found.code == "PC401" and "grows on each call of reply()" in found.trace[0].note


@pytest.mark.parametrize("body, sent", [
    ("        pass", "self.tools"),  # `register()` adds once, at set-up: not this call's growth
    ("        self.tools = [KB_TOOL]\n        self.tools.append(KB_TOOL)", "self.tools"),  # reset per call
    ("        if KB_TOOL not in self.tools:\n            self.tools.append(KB_TOOL)", "self.tools"),  # added once
])
def test_a_tool_list_set_up_once_or_rebuilt_per_call_does_not_grow(body, sent):
    assert lint_source(PER_CALL % (body, sent)) == []


# ------------------------------------------- what a block that ends the loop grows goes nowhere
ENDS = '''

def run(query):
    notes = ""
    for attempt in range(3):
        answer = ask(f"Answer. Notes so far:\\n{notes}", query)
        if answer.ok:
            notes += answer.text
            %s
'''


@pytest.mark.parametrize("ending", ["break", "return answer", "raise StopIteration"])
def test_what_a_block_that_ends_the_loop_adds_never_reaches_another_pass(ending):
    assert found(ENDS % ending) == []


def test_what_a_block_that_goes_on_to_the_next_pass_adds_is_still_carried():
    body = ENDS % "continue"
    assert found(body) == [(line_of(body, '        answer = ask(f"Answer. Notes so far:\\n{notes}", query)'), "PC401",
                            line_of(body, "            notes += answer.text"))]


def test_a_retry_nested_in_a_block_that_returns_is_still_carried():
    body = (ENDS % "return answer").replace(
        "            notes += answer.text\n",
        "            if answer.partial:\n                notes += answer.text\n                continue\n")
    assert [code for _, code, _ in found(body)] == ["PC401"]


# ------------------------------------------------- a parameter rebound to a copy is not the caller's
RUNNER = '''

def send(agent, history, context):
    return ask(agent.instructions(context), history[-1])


def run(agent, history, context):
    context = %s
    while True:
        result = send(agent, history, context)
        if result.done:
            context.update(result.context)
            return result


def main(agent):
    context = {"env": "prod"}
    history = []
    while True:
        history.append(input("> "))
        run(agent, history, context)
'''


@pytest.mark.parametrize("copy", ["dict(context)", "context.copy()", "{**context}"])
def test_what_a_function_adds_to_its_own_copy_of_an_argument_stays_with_it(copy):
    assert found(RUNNER % copy) == []


def test_what_a_function_adds_to_the_argument_itself_grows_it_for_the_caller():
    body = (RUNNER % "context or {}").replace("            context.update(result.context)\n            return result",
                                                "            context.update(result.context)\n            return result\n"
                                                "        context.update(result.context)")
    assert [code for _, code, _ in found(body)] == ["PC401", "PC401"]


# ------------------------------------------------- the model's reply put into the next request
PLAN = '''

def run(task):
    plan = "none yet"
    while True:
        reply = client.messages.create(model="m", max_tokens=64, system=f"Follow the plan: {plan}",
                                       messages=[{"role": "user", "content": task}])
        %s
'''


@pytest.mark.parametrize(("keep", "reported"), [
    ("plan = reply.content[0].text", True),  # the next pass's system prompt holds this reply
    ("print(reply.content[0].text)", False),  # shown to the user only
    ("plan = reply.content[0].text\n        break", False),  # the loop ends with it
])
def test_a_reply_put_into_the_next_passs_system_prompt_is_per_turn(keep, reported):
    body = PLAN % keep
    expected = [(line_of(body, "        reply = client.messages.create(model=\"m\", max_tokens=64, "
                               "system=f\"Follow the plan: {plan}\","), "PC401",
                 line_of(body, "        reply = client.messages.create(model=\"m\", max_tokens=64, "
                               "system=f\"Follow the plan: {plan}\","))]
    assert found(body) == (expected if reported else [])


def test_a_loop_that_returns_at_the_end_of_its_body_still_carries_what_its_continue_branches_grow():
    body = '''

def run(query):
    previous_attempts = ""
    for attempt in range(3):
        try:
            answer = ask(f"Write a query. Failed so far:\\n{previous_attempts}", query)
            checked = validate(answer)
        except ValueError as error:
            previous_attempts += f"{error}\\n"
            continue
        return checked
'''
    assert [(code, source) for _, code, source in found(body)] == [
        ("PC401", line_of(body, '            previous_attempts += f"{error}\\n"'))]


def test_a_reply_a_helper_returns_into_the_loop_is_per_turn_there_and_nowhere_else():
    body = '''

def orchestrate(task):
    reply = client.messages.create(model="m", max_tokens=64, system="Plan the next step.",
                                   messages=[{"role": "user", "content": task}])
    return reply.content[0].text


def run(task):
    while True:
        plan = orchestrate(task)
        ask(f"Follow: {plan}", task)


def once(task):
    plan = orchestrate(task)
    return ask(f"Follow: {plan}", task)
'''
    # In the loop, each pass's system prompt holds a new plan; a one-off request's does not repeat.
    assert [(line, code) for line, code, _ in found(body)] == [(line_of(body, '        ask(f"Follow: {plan}", task)'), "PC401")]


@pytest.mark.parametrize(("write", "reported"), [
    ('prompt["Main Instructions"] = {}\n    prompt["Main Instructions"] |= extra', False),  # the same key set again
    ("prompt[len(prompt)] = extra", True),  # a new key on each call
    ('prompt["Notes"] += [extra]', True),  # a list under a key, one longer on each call
])
def test_a_helper_that_sets_a_key_it_names_does_not_grow_its_argument(write, reported):
    body = f'''

def query(prompt, extra):
    {write}
    return ask(str(prompt), "go")


def retry(prompt):
    for _ in range(3):
        answer = query(prompt, {{"format": "json"}})
'''
    assert bool(found(body)) == reported


# ------------------------------------------- the model's reply kept in the object for its next call
ASSISTANT = '''from collections import deque


def parse_facts(text):
    return [line[9:] for line in text.splitlines() if line.startswith("remember:")]


class Assistant:
    def __init__(self):
        self.facts = []
        self.history = deque([{"role": "system", "content": self.system_prompt()}])

    def system_prompt(self):
        return "You are a voice assistant. Facts you know: " + "; ".join(self.facts)

    def respond(self, text):
        self.history[0] = {"role": "system", "content": self.system_prompt()}
        self.history.append({"role": "user", "content": text})
        reply = client.messages.create(model="m", max_tokens=64, messages=list(self.history))
        %s
        return reply

    def nightly_reset(self):
        self.respond("Anything else to remember before I forget this conversation?")
        self.history = deque([{"role": "system", "content": self.system_prompt()}])
'''


@pytest.mark.parametrize(("keep", "reported"), [
    ("self.facts += parse_facts(reply.content[0].text)", True),  # the next turn's system prompt holds it
    ("print(parse_facts(reply.content[0].text))", False),  # shown only
])
def test_a_reply_a_method_keeps_in_its_object_reaches_its_next_calls_system_prompt(keep, reported):
    body = ASSISTANT % keep
    sink = line_of(body, '        self.history[0] = {"role": "system", "content": self.system_prompt()}')
    source = line_of(body, '        reply = client.messages.create(model="m", max_tokens=64, messages=list(self.history))')
    # (The reset builds its system message after this call's reply was kept: the same call's reply,
    # whose request went out already; its next request is the next turn's `respond`, reported there.)
    assert found(body) == ([(sink, "PC401", source)] if reported else [])


def test_a_reply_a_method_keeps_is_no_source_for_a_method_that_never_asks():
    body = '''

class Notes:
    def summarise(self, text):
        self.summary = client.messages.create(model="m", max_tokens=64, messages=[{"role": "user", "content": text}])

    def messages(self, text):
        return [{"role": "system", "content": f"Summary so far: {self.summary}"}, {"role": "user", "content": text}]
'''
    # Whether the summary is redone per turn or once per session is not said here: not reported.
    assert found(body) == []


def test_what_a_method_builds_from_the_reply_it_just_received_is_this_calls_not_the_last_ones():
    body = '''

class Planner:
    def plan(self, task):
        reply = client.messages.create(model="m", max_tokens=64, messages=[{"role": "user", "content": task}])
        record = [{"role": "system", "content": "Plan the task."}, {"role": "system", "content": reply.content[0].text}]
        self.usage += count(record)
        return reply
'''
    # The record holds this call's reply (asked for above it), whatever `self.usage` keeps.
    assert found(body) == []


def test_a_reply_asked_through_a_helper_that_is_handed_the_conversation_is_kept_too():
    # `self.call_llm(ctx)` sends its `messages` parameter: the conversation this method built.
    body = '''import re


class Persona:
    def __init__(self):
        self.mood = "calm"
        self.log = []

    def system_prompt(self):
        return f"You are Ada. You feel %s."

    def ask(self, clients, messages):
        return clients.get("chat").chat(messages)

    def turn(self, clients, text):
        self.log.append({"role": "user", "content": text})
        out = self.ask(clients, [{"role": "system", "content": self.system_prompt()}, *self.log])
        if found := re.search(r"Mood: (.*)", out):
            self.mood = found.group(1)
        return out
'''
    assert [code for _, code, _ in found(body % "{self.mood}")] == ["PC401"]
    assert found(body % "glad") == []


def test_a_reply_a_method_hands_its_own_setter_is_kept_as_if_it_stored_it():
    body = (ASSISTANT % "self.remember(parse_facts(reply.content[0].text))") + '''
    def remember(self, facts):
        self.facts = self.facts + facts
'''
    sink = line_of(body, '        self.history[0] = {"role": "system", "content": self.system_prompt()}')
    assert [(line, code) for line, code, _ in found(body)] == [(sink, "PC401")]
    # What the setter is handed that is no reply (a fixed list) changes nothing.
    assert found(body.replace("self.remember(parse_facts(reply.content[0].text))", 'self.remember(["tea"])')) == []
