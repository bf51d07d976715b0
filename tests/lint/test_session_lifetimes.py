"""Values made once per conversation (issue 14, docs/field.md "frozen per session"): computed
before the loop that reads the user's next message, or stored under a conversation's key the
first time it is seen. Each case is a small example written for this suite."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from promptlint.lint.diagnostic import Settings, TraceStep
from promptlint.lint.engine import lint_paths, lint_source
from promptlint.lint.lifetimes import Lifetimes

LOOP = '''from datetime import datetime

import anthropic

client = anthropic.Anthropic()


def chat(websocket, reader):
    system = f"Be brief. {{STAMP}}"
    history = []
    while True:
        text = {read}
        history.append({{"role": "user", "content": text}})
        reply = client.messages.create(model="m", max_tokens=99, system=system, messages=history)
        history.append({{"role": "assistant", "content": reply.content[0].text}})
'''


@pytest.mark.parametrize("read", ["input('> ')", "websocket.receive_text()", "reader.readline()"])
def test_a_value_made_before_the_loop_that_reads_each_turn_is_frozen_for_the_conversation(read):
    assert lint_source(LOOP.format(read=read).replace("{STAMP}", "{datetime.now()}"), "chat.py") == []


def test_a_value_a_helper_made_before_that_loop_is_frozen_too_and_not_when_it_is_called_in_it():
    helper = 'def stamp():\n    return f"Be brief. {datetime.now()}"\n\n\n'
    text = LOOP.format(read="input('> ')").replace('f"Be brief. {STAMP}"', "stamp()").replace("def chat(", helper + "def chat(")
    assert lint_source(text, "chat.py") == []
    inside = text.replace("    system = stamp()\n", "").replace("        text = input('> ')\n",
                                                                  "        text = input('> ')\n        system = stamp()\n")
    assert [d.code for d in lint_source(inside, "chat.py")] == ["PC101"]


def test_a_value_made_inside_that_loop_still_changes_every_turn():
    text = LOOP.format(read="input('> ')").replace('    system = f"Be brief. {STAMP}"\n', "")
    text = text.replace("        history.append({\"role\": \"user\"", "        system = f\"Be brief. {datetime.now()}\"\n"
                                                                      "        history.append({\"role\": \"user\"", 1)
    assert [d.code for d in lint_source(text, "chat.py")] == ["PC101"]


def test_a_loop_that_reads_no_input_is_a_tool_loop_inside_one_turn():
    # A function called per turn that loops over tool calls: each turn recomputes the value.
    text = LOOP.format(read="reader.next_tool_result()").replace("{STAMP}", "{datetime.now()}")
    assert [d.code for d in lint_source(text, "chat.py")] == ["PC101"]


KEYED = '''from datetime import datetime

from openai import OpenAI

client = OpenAI()


class Bot:
    def __init__(self):
        self.histories = {{}}

    def on_message(self, channel, text):
        if {test}:
            self.histories[channel] = [{{"role": "system", "content": f"Started {{datetime.now().isoformat()}}"}}]
        self.histories[channel].append({{"role": "user", "content": text}})
        return client.chat.completions.create(model="m", messages=self.histories[channel])
'''


def test_a_history_created_the_first_time_a_conversation_key_is_seen_is_made_once():
    assert lint_source(KEYED.format(test="channel not in self.histories"), "bot.py") == []


def test_a_local_dict_filled_per_call_is_not_kept():
    text = KEYED.replace("self.histories", "histories").replace("        histories = {{}}\n", "        pass\n").replace(
        "    def on_message(self, channel, text):\n", "    def on_message(self, channel, text):\n        histories = {{}}\n")
    assert [d.code for d in lint_source(text.format(test="channel not in histories"), "bot.py")] == ["PC101"]


def test_a_history_replaced_on_every_message_is_not():
    assert [d.code for d in lint_source(KEYED.format(test="text"), "bot.py")] == ["PC101"]


def test_streamlits_session_state_is_filled_once_per_session():
    text = ('from datetime import datetime\n\nimport streamlit as st\nfrom openai import OpenAI\n\nclient = OpenAI()\n\n'
            'if "messages" not in st.session_state:\n'
            '    st.session_state.messages = [{"role": "system", "content": f"Today is {datetime.now():%A}."}]\n\n'
            'if prompt := st.chat_input("Ask"):\n'
            '    st.session_state.messages.append({"role": "user", "content": prompt})\n'
            '    client.chat.completions.create(model="gpt-4o", messages=st.session_state.messages)\n')
    assert lint_source(text, "app.py") == []


@pytest.mark.parametrize("decorator, once", [("@functools.lru_cache(maxsize=1)", True), ("@functools.cache", True),
                                             ("@functools.wraps(print)", False)])
def test_a_memoized_prompt_is_computed_once(decorator, once):
    text = ("import functools\nfrom datetime import date\n\nimport anthropic\n\n\n" + decorator +
            "\ndef system_prompt():\n    return f'You help. Today is {date.today()}.'\n\n\n"
            "def turn(history):\n    return anthropic.Anthropic().messages.create(model='m', max_tokens=9, "
            "system=system_prompt(), messages=history)\n")
    assert [d.code for d in lint_source(text, "app.py")] == ([] if once else ["PC101"])


CHAT_MODEL = '''from datetime import datetime

import google.generativeai as genai


def make_model():
    model = genai.GenerativeModel("gemini-2.0-flash", system_instruction=f"Today is {datetime.now():%A}.")
    return model.start_chat(history=[])


def run_cli():
{body}
'''


def test_a_helper_called_once_before_the_loop_that_reads_each_turn_opens_the_conversation(tmp_path):
    # The call graph's lifetimes (lifetimes.py): every call of make_model() comes before that loop.
    from promptlint.lint.diagnostic import Settings
    from promptlint.lint.engine import lint_paths

    def lint(body):
        (tmp_path / "cli.py").write_text(CHAT_MODEL.replace("{body}", body))
        return [d.code for d in lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1).diagnostics]

    assert lint("    chat = make_model()\n    while True:\n        chat.send_message(input('> '))") == []
    assert lint("    while True:\n        chat = make_model()\n        chat.send_message(input('> '))") == ["PC101"]


CACHED_PROPERTY = '''import datetime
import anthropic

client = anthropic.Anthropic()


class Agent:
    def __init__(self):
        self._system = None

    @property
    def system_message(self):
GUARD        self._system = f"Today is {datetime.datetime.now():%Y-%m-%d}."
        return self._system

    def step(self, question):
        return client.messages.create(model="m", max_tokens=9, system=self.system_message,
                                      messages=[{"role": "user", "content": question}])
'''


@pytest.mark.parametrize(("guard", "reported"), [
    ("        if self._system is not None:\n            return self._system\n", False),
    ("        if self._system:\n            return self._system\n", False),
    ("        if self.use_plan:\n            return self.plan()\n", True),  # a switch, not a cache
    ("", True),  # built on every call
])
def test_a_value_cached_on_the_object_after_an_early_return_is_made_once(guard, reported):
    found = lint_source(CACHED_PROPERTY.replace("GUARD", guard), "agent.py")
    assert [d.code for d in found] == (["PC101"] if reported else [])


@pytest.mark.parametrize(("guard", "reported"), [
    ("        if self._cached is not None:\n            return self._cached\n", False),
    ("        if self.use_plan:\n            return self.plan()\n", True),  # a switch: the rest runs per call
    ("", True),
])
def test_a_builder_called_only_behind_an_object_cache_runs_once(tmp_path, guard, reported):
    """The system message is built in another module's `Context.system()`, called only from a
    property that caches it on the agent: the call graph says it runs once per agent."""
    (tmp_path / "context.py").write_text('''import datetime


class Context:
    def system(self, mode):
        content = f"Today is {datetime.datetime.now():%Y-%m-%d}. Mode {mode}."
        return {"role": "system", "content": content}
''')
    (tmp_path / "agent.py").write_text(f'''from context import Context


class Agent:
    def __init__(self):
        self.context = Context()
        self._cached = None

    def system_message(self):
{guard}        self._cached = self.context.system(mode="normal")
        return self._cached
''')
    found = lint_paths([str(tmp_path)], Settings(), use_cache=False, jobs=1).diagnostics
    assert bool(found) is reported


@pytest.mark.parametrize(("name", "reported"), [("run_bot", False), ("bot", False), ("entrypoint", False),
                                               ("on_message", True)])
def test_pipecats_session_entry_builds_its_context_once(name, reported):
    """Pipecat's runner calls `bot()` once per session; its examples build the system message
    with the date in `run_bot` and hand it to the context the whole call uses. A LiveKit worker
    runs `entrypoint` once per job (a room's session)."""
    text = f'''import datetime
from openai import OpenAI

client = OpenAI()


async def {name}(transport):
    system_prompt = f"Today is {{datetime.date.today()}}."
    messages = [{{"role": "system", "content": system_prompt}}]
    return client.chat.completions.create(model="m", messages=messages + transport.history)
'''
    assert bool(lint_source(text, "bot.py")) is reported


AGENT_RUN = '''import datetime
from openai import OpenAI

client = OpenAI()


def run_task(task, history):
    system = f"You are a worker. Today is {datetime.datetime.now():%Y-%m-%d %H:%M}."
    messages = MESSAGES
    for _ in range(10):
        reply = client.chat.completions.create(model="m", messages=messages)
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
    return messages[-1]["content"]
'''


@pytest.mark.parametrize(("messages", "reported"), [
    # the run's own conversation: its system message is made once for the run and every request of
    # the loop shares it
    ('[{"role": "system", "content": system}, {"role": "user", "content": task}]', False),
    # a conversation carried over from earlier calls: each call's clock lands before that history
    ('[{"role": "system", "content": system}, *history, {"role": "user", "content": task}]', True),
])
def test_an_agent_loop_over_its_own_fresh_conversation_makes_its_system_message_once(messages, reported):
    found = lint_source(AGENT_RUN.replace("MESSAGES", messages), "worker.py")
    assert bool(found) is reported


@pytest.mark.parametrize(("also", "reported"), [
    ("", False),  # the run's messages, made as names first: the same fresh conversation
    # the system message is also sent ahead of a history carried over from earlier calls
    ('    client.chat.completions.create(model="m", messages=[system_message, *history])\n', True),
])
def test_a_fresh_conversation_made_of_named_messages_is_the_runs_own(also, reported):
    text = AGENT_RUN.replace("    messages = MESSAGES\n", (
        '    system_message = {"role": "system", "content": system}\n'
        '    user_message = {"role": "user", "content": task}\n'
        '    messages = [system_message, user_message]\n') + also)
    assert bool(lint_source(text, "worker.py")) is reported


LOCAL_RUN = '''import datetime

from openai import OpenAI

client = OpenAI()


def research(model, tokenizer, query):
    messages = [{"role": "system", "content": f"Today is {datetime.datetime.now():%H:%M:%S}."},
                {"role": "user", "content": query}]
    trace = tokenizer.apply_chat_template(messages, tokenize=False)
    for _ in range(8):
        output = model.generate(trace)[0].outputs[0].text
        messages.append({"role": "assistant", "content": output})
        trace = trace + output
    SEND
    return {"messages": messages, "trace": trace}
'''


@pytest.mark.parametrize(("send", "reported"), [
    ("", False),  # the loop grows the run's own list and sends text rendered from it
    # a request sent after the loop is one more request of the same run
    ('client.chat.completions.create(model="m", messages=messages)', False),
])
def test_an_agent_loop_that_grows_its_own_conversation_and_sends_it_rendered(send, reported):
    assert bool(lint_source(LOCAL_RUN.replace("SEND", send), "research.py")) is reported


TASKS = '''import datetime
from openai import OpenAI

client = OpenAI()


def run_all(tasks):
    for task in tasks:
        messages = [{"role": "system", "content": f"Now: {datetime.datetime.now():%H:%M:%S}"},
                    {"role": "user", "content": task}]
BODY'''
ONE_REQUEST = '''        reply = client.chat.completions.create(model="m", messages=messages)
        print(reply.choices[0].message.content)
'''
AGENT_LOOP = '''        for _ in range(3):
            reply = client.chat.completions.create(model="m", messages=messages)
            messages.append({"role": "assistant", "content": reply.choices[0].message.content})
'''


@pytest.mark.parametrize(("body", "reported"), [
    (AGENT_LOOP, False),  # each task's own agent loop: its system message is made once for it
    (ONE_REQUEST, True),  # one request per task, each with its pass's clock: the tasks' requests differ
])
def test_a_conversation_made_on_each_pass_of_a_loop_over_tasks(body, reported):
    assert bool(lint_source(TASKS.replace("BODY", body), "tasks.py")) is reported


def test_a_fresh_conversation_kept_on_the_object_is_not_the_runs_own():
    text = AGENT_RUN.replace("MESSAGES", '[{"role": "system", "content": system}, {"role": "user", "content": task}]').replace(
        "def run_task(task, history):", "def run_task(self, task, history):").replace(
        "    return messages[-1][\"content\"]", "    self.messages = messages\n    return messages[-1][\"content\"]")
    assert lint_source(text, "worker.py")


def test_a_loop_over_tasks_that_makes_each_conversation_afresh_is_not_an_agent_loop():
    text = '''import datetime
from openai import OpenAI

client = OpenAI()


def evaluate(questions, memory):
    for question in questions:
        found = memory.search(query=question)
        messages = [{"role": "system", "content": f"Memories: {found}"}, {"role": "user", "content": question}]
        client.chat.completions.create(model="m", messages=messages)
'''
    assert [d.code for d in lint_source(text, "evaluate.py")] == ["PC401"]


@pytest.mark.parametrize(("caller", "once"), [("_init_prompt_enhancement", True), ("handle_turn", False)])
def test_a_value_that_passes_through_a_function_run_once_is_made_once(tmp_path, caller, once):
    """The call graph reads every step of a trace, not only its source: `today()` is called on
    every turn elsewhere, but the prompt a set-up method builds with it once keeps its date."""
    clock = tmp_path / "clock.py"
    clock.write_text("import datetime\n\n\ndef today():\n    return datetime.date.today().isoformat()\n")
    conn = tmp_path / "connection.py"
    conn.write_text(f'''from clock import today


class Connection:
    def {caller}(self):
        self.prompt = f"Today is {{today()}}."

    def handle_audio(self, text):
        for chunk in text:
            self.log(today(), chunk)
''')
    trace = (TraceStep(str(clock), 5, 12, "wall-clock time"), TraceStep(str(clock), 5, 12, "returned by today()"),
             TraceStep(str(conn), 6, 32, "via today()"), TraceStep(str(conn), 6, 9, "stored in `self.prompt`"),
             TraceStep(str(conn), 6, 9, "reaches system prompt"))
    finding = SimpleNamespace(code="PC101", trace=trace, sent=False)
    files = [str(clock), str(conn)]
    assert Lifetimes(files, lambda p: open(p).read()).computed_once(finding) is once


CACHED_BUILDER = '''import platform
from datetime import datetime

from app.messages import SystemMessage


class Context:
    def system(self, max_steps=25):
        text = f"Today is {datetime.now():%A %d %B %Y}. You run on {platform.system()}. At most {max_steps} steps."
        return SystemMessage(content=text)
'''
CACHING_AGENT = '''from app.context import Context


class Agent:
    def __init__(self, llm):
        self.llm, self.context, self.steps, self._system = llm, Context(), [], None

    @property
    def system_message(self):
        if self._system is None:
            self._system = self.context.system(max_steps=10)
        return self._system

    def loop(self, task):
        for _ in range(10):
            messages = [self.system_message, task, *self.steps]
            self.steps.append(self.llm.invoke(messages))
'''
PROVIDER = '''def convert(messages):
    out = []
    for m in messages:
        out.append({"role": "system", "content": m.content})  # system = the role's name, not the method
    return out
'''


@pytest.mark.parametrize(("caching", "codes"), [(True, []), (False, ["PC101"])])
def test_a_method_with_a_common_name_is_looked_up_as_an_attribute(tmp_path, caching, codes):
    """`Context.system()` builds the system message once, behind the agent's cache. The word
    "system" is in a dozen provider files (a role name in strings) and in `platform.system()`
    inside the method itself: none of them is a call of the method, so its one caller decides."""
    agent = CACHING_AGENT if caching else CACHING_AGENT.replace("if self._system is None:", "if True:")
    files = {"app/__init__.py": "", "app/messages.py": "class SystemMessage:\n    def __init__(self, content):\n"
             "        self.content = content\n", "app/context.py": CACHED_BUILDER, "app/agent.py": agent,
             **{f"app/providers/p{i}.py": PROVIDER for i in range(14)}}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert [d.code for d in report.diagnostics] == codes


# A system message put at the head of the conversation a caller passed in, only while it has
# none: the caller sends the same list back next turn, so it is made once per conversation.
GIVEN = '''from datetime import datetime
from litellm import completion


def house_rules():
    return f"You help. It is {datetime.now()}."


def converse(messages, model):
    if {TEST}:
        {HEAD}
    reply = completion(model=model, messages=messages)
    messages.append({"role": "assistant", "content": reply.choices[0].message.content})
    return messages
'''


@pytest.mark.parametrize("test, head", [
    ('not any(m["role"] == "system" for m in messages)', 'messages.insert(0, {"role": "system", "content": house_rules()})'),
    ('not messages', 'messages = [{"role": "system", "content": house_rules()}]'),
    ('messages is None or len(messages) == 0', 'messages = [{"role": "system", "content": house_rules()}]'),
    ('messages[0]["role"] != "system"', 'messages.insert(0, {"role": "system", "content": house_rules()})'),
])
def test_a_system_message_added_only_while_the_given_conversation_has_none_is_made_once(test, head):
    assert lint_source(GIVEN.replace("{TEST}", test).replace("{HEAD}", head), "converse.py") == []


def test_a_system_message_put_at_the_head_on_every_call_is_still_per_turn():
    text = GIVEN.replace("    if {TEST}:\n        {HEAD}\n",
                         '    messages = [{"role": "system", "content": house_rules()}, *messages]\n')
    assert [d.code for d in lint_source(text, "converse.py")] == ["PC101"]
    # (a test of another list, or of a value that is not the conversation, is no such guard)
    text = GIVEN.replace("{TEST}", "model").replace("{HEAD}", 'messages.insert(0, {"role": "system", "content": house_rules()})')
    assert [d.code for d in lint_source(text, "converse.py")] == ["PC101"]


SPOOL = '''from datetime import datetime
from litellm import completion


def spool(context, model):
    system = f"You help. It is {datetime.now()}."
    if len(context) > 0:
        if context[0]["role"] != "system":
            context.insert(0, {"role": "system", "content": system})
    else:
        context.append({"role": "system", "content": system})
    while True:
        text = input("> ")
        context.append({"role": "user", "content": text})
        reply = completion(model=model, messages=context)
        context.append({"role": "assistant", "content": reply.choices[0].message.content})
'''


def test_a_system_message_placed_before_the_loop_that_holds_the_conversation_is_made_once():
    assert lint_source(SPOOL, "spool.py") == []
    # Made in that loop, it is made each turn.
    inside = SPOOL.replace('        text = input("> ")\n', '        text = input("> ")\n'
                           '        context.insert(0, {"role": "system", "content": f"It is {datetime.now()}."})\n')
    assert [d.code for d in lint_source(inside, "spool.py")] == ["PC101"]
    # Without that loop (and without a test that the list has one), each call of the function is a
    # turn: its system message is made per turn.
    start = SPOOL.index("    if len(context)")
    once = SPOOL[:start] + '''    context.insert(0, {"role": "system", "content": system})
    reply = completion(model=model, messages=context)
    return reply.choices[0].message.content
'''
    assert [d.code for d in lint_source(once, "spool.py")] == ["PC101"]
