"""How real agents put volatile bytes into stable layers (issue 14), each reduced to a small example
written for this suite: prompts built where no SDK is imported, recognised by shape or by name,
builders that keep state, lifetimes, newer syntax."""

from __future__ import annotations

import os

import pytest

from promptlint.lint.engine import lint_paths, lint_source
from promptlint.lint.diagnostic import Settings
from tests.lint.opt_in import ORDERING


def codes(source: str, settings: Settings | None = None) -> list[str]:
    return sorted(d.code for d in lint_source(source, settings=settings))


def messages(source: str) -> list[str]:
    return [d.message for d in lint_source(source)]


def diags(source: str):
    return lint_source(source)


# ------------------------------------------------------------------ shapes, no SDK imported
@pytest.mark.parametrize("message", [
    '{"role": "system", "content": text}',
    'dict(role="system", content=text)',
    'Message(role="system", content=text)',
    'ChatMessage(role=MessageRole.SYSTEM, content=text)',
    'SystemMessage(content=text)',
    '{"role": "developer", "content": [{"type": "text", "text": text}]}',
    '{"role": MessageRole.SYSTEM.value, "content": text}',
])
def test_a_system_message_is_a_sink_in_a_builder_that_imports_no_sdk(message):
    source = f'''from datetime import datetime

class ContextBuilder:
    def build_messages(self, history):
        text = "You are helpful. Now: " + datetime.now().isoformat()
        return [{message}, *history]
'''
    found = lint_source(source)
    assert [d.code for d in found] == ["PC101"]
    assert "recognised by its shape" in found[0].message


def test_a_leading_system_pair_is_a_sink():
    assert codes('''import time

def messages(question):
    return [("system", f"Started {time.time()}"), ("human", question)]
''') == ["PC101"]


def test_a_request_payload_sent_through_httpx_is_a_sink():
    found = lint_source('''import uuid
import httpx

def ask(text):
    payload = {"model": "m", "max_tokens": 10, "system": f"Request {uuid.uuid4()}",
               "messages": [{"role": "user", "content": text}]}
    return httpx.post("https://example.invalid/v1/messages", json=payload)
''')
    assert [d.code for d in found] == ["PC201"] and "request shape" in found[0].message


def test_a_provider_adapter_call_with_system_and_model_keywords_is_a_sink():
    assert codes('''from datetime import date

class Adapter:
    def chat(self, text):
        return self.provider.complete(model=self.model, system=f"Today is {date.today()}", messages=[text])
''') == ["PC101"]


def test_a_stored_record_with_tools_and_messages_keys_is_not_a_request():
    assert codes('''import time

def record(run):
    return {"tools": run.tools, "messages": run.messages, "created_at": time.time()}
''') == []


def test_a_tool_definition_shape_is_a_sink():
    assert codes('''from datetime import datetime

def get_spec():
    return [{"name": "weather", "description": f"Today is {datetime.today():%A}",
             "parameters": {"type": "object", "properties": {}}}]
''') == ["PC101"]


def test_a_system_message_appended_after_history_is_volatile_by_position():
    assert codes('''from datetime import datetime

def build(history, user):
    messages = [{"role": "system", "content": "Be brief."}]
    messages.extend(history)
    messages.append({"role": "user", "content": user})
    messages.append({"role": "system", "content": f"Reminder at {datetime.now()}"})
    return messages
''') == []


# ------------------------------------------------------------------ names
def test_a_function_named_for_the_system_prompt_returns_a_stable_layer():
    found = lint_source('''import random

def build_system_prompt(persona):
    return f"You are {persona}. Lucky number {random.randint(1, 9)}."
''')
    assert [d.code for d in found] == ["PC201"] and "recognised by the name `build_system_prompt()`" in found[0].message


def test_an_attribute_named_for_the_instructions_written_per_request():
    assert codes('''from datetime import datetime

class Agent:
    def turn(self, text):
        self.instructions = f"Be brief. {datetime.now():%H:%M}"
        return self.run(text)
''') == ["PC101"]


@pytest.mark.parametrize(("sent", "reported"), [
    ('messages=[{"role": "user", "content": full_prompt}]', False),  # folded into the user's message
    ('messages=[{"role": "system", "content": system_prompt}, {"role": "user", "content": text}]', True),
    ('system=system_prompt, messages=[{"role": "user", "content": text}]', True),
])
def test_a_local_named_for_the_system_prompt_is_what_the_request_makes_of_it(sent, reported):
    # (blind batch 2026-11-27ak) An NPC's "system prompt" written at the head of its one user message.
    found = codes(f'''import random
from openai import OpenAI

def respond(persona, text, articles):
    system_prompt = f"You are {{persona}}. "
    system_prompt += f"Talk about {{random.choice(articles)}}. "
    full_prompt = f"{{system_prompt}}\\n\\n{{text}}"
    return OpenAI().chat.completions.create(model="m", {sent})
''')
    assert found == (["PC201"] if reported else [])


# ------------------------------------------------------------------ builders keep state
def test_gather_unpacking_keeps_each_result_to_its_own_name():
    assert codes('''import asyncio
from datetime import datetime

async def stable():
    return "Rules."

async def clock():
    return datetime.now().isoformat()

async def build():
    rules, stamp = await asyncio.gather(stable(), clock())
    return [{"role": "system", "content": rules}, {"role": "user", "content": stamp}]
''') == []


@pytest.mark.parametrize("call", ["await detect()", "(await asyncio.gather(detect(), other()))[0]"])
def test_a_nested_function_reads_the_enclosing_functions_values(call):
    source = f'''import asyncio

class Chat:
    async def reply(self, user_message):
        async def detect():
            mood = await self.classifier.classify(text=user_message)
            return {{"mood": mood}}

        async def other():
            return None

        detected = {call}
        system = f"You are kind. The user seems {{detected['mood']}}."
        return [{{"role": "system", "content": system}}, {{"role": "user", "content": user_message}}]
'''
    assert codes(source) == ["PC401"]
    # what the nested function reads of the enclosing one is per turn only because it is
    assert codes(source.replace("text=user_message", "text=self.persona")) == []


def test_a_clock_after_a_format_with_many_helper_arguments_is_kept():
    assert codes('''from datetime import datetime

def a(x): return x
def b(x): return x
def c(x): return x

def build(p, q, r, s, t, u, v):
    text = "{}{}{}{}{}{}{}".format(a(p), b(q), c(r), a(s), b(t), c(u), a(v))
    text += f" Now {datetime.now()}"
    return [{"role": "system", "content": text}]
''') == ["PC101"]


def test_ainvoke_fills_a_system_template_like_invoke():
    assert codes('''from datetime import datetime, timezone
from langchain_core.prompts import ChatPromptTemplate

async def respond(config, state, model):
    prompt = ChatPromptTemplate.from_messages([("system", config.system_prompt), ("placeholder", "{messages}")])
    value = await prompt.ainvoke({"messages": state.messages, "system_time": datetime.now(tz=timezone.utc).isoformat()})
    return await model.ainvoke(value)
''') == ["PC101"]


def test_a_clock_that_only_chooses_constant_text_is_a_source():
    assert codes('''from datetime import datetime

def build_system_prompt():
    now = datetime.now()
    if now.hour < 12:
        greeting = "Good morning."
    else:
        greeting = "Good evening."
    return "You are a concierge. " + greeting
''') == ["PC101"]


def test_a_clock_that_chooses_which_text_a_helper_returns_is_a_source():
    assert codes('''from datetime import datetime

def greeting():
    if datetime.now().hour < 12:
        return "Good morning."
    return "Good evening."

def build_system_prompt():
    return "You are a concierge. " + greeting()
''') == ["PC101"]


def test_path_glob_as_a_method_is_an_ordering_source():
    assert codes('''from pathlib import Path

def build_system_prompt(root: Path):
    return "\\n".join(p.read_text() for p in root.glob("skills/*.md"))
''', ORDERING) == ["PC501"]


# ------------------------------------------------------------------ lifetimes (FIELD.md)
def test_a_value_computed_in_init_is_frozen_for_the_object():
    assert codes('''from datetime import datetime

class Assistant:
    def __init__(self):
        self.started = datetime.now().isoformat()

    def build_messages(self, history):
        return [{"role": "system", "content": f"Session started {self.started}"}, *history]
''') == []


def test_a_value_computed_at_import_is_frozen_for_the_process():
    assert codes('''from datetime import date

SYSTEM = f"Deployed {date.today()}"

def build_messages(history):
    return [{"role": "system", "content": SYSTEM}, *history]
''') == []


def test_a_parameter_stored_by_init_is_not_another_methods_parameter():
    assert codes('''from datetime import datetime

class Builder:
    def __init__(self, persona):
        self.persona = persona

    def build(self, stamp):
        return [{"role": "system", "content": self.persona}, {"role": "user", "content": stamp}]

def turn():
    return Builder("Ada").build(datetime.now().isoformat())
''') == []


def test_a_volatile_key_selects_it_does_not_become_the_value():
    assert codes('''CACHE = {}

def build(agent):
    text = CACHE[id(agent)]
    return [{"role": "system", "content": text}]
''') == []


# ------------------------------------------------------------------ newer syntax
NEWER = '''from datetime import datetime

type Messages = list[dict]

class Builder[T]:
    def build(self, data: dict) -> Messages:
        return [{"role": "system", "content": f"{data["persona"]} at {datetime.now()}"}]
'''


def test_python_312_syntax_is_analysed_on_any_interpreter():
    found = lint_source(NEWER)
    assert [d.code for d in found] == ["PC101"]


def test_a_pep_701_f_string_in_an_implicit_concatenation_is_analysed_on_the_same_lines():
    # `f"...{d["k"]}..." "more"` spread over lines: the finding keeps its line after the rewrite.
    source = '''from datetime import datetime


def build(data: dict) -> list:
    system = (
        f"You are {data["persona"]}. "  # a comment between the parts
        "Be brief. "
        f"Now: {datetime.now()}"
    )
    return [{"role": "system", "content": system}]
'''
    assert [(d.code, d.trace[0].line) for d in lint_source(source)] == [("PC101", 8)]


@pytest.mark.parametrize("handler", ["except ValueError, KeyError:", "except* ValueError, KeyError:"])
def test_python_314_except_without_brackets_is_analysed_on_any_interpreter(handler):
    # (blind batch 2026-11-27ab) PEP 758: a project that requires Python 3.14 writes `except A, B:`.
    source = f'''from datetime import datetime


def build(history):
    try:
        stamp = datetime.now().isoformat()
    {handler}
        stamp = ""
    return [{{"role": "system", "content": f"Now: {{stamp}}"}}, *history]
'''
    assert [(d.code, d.line) for d in lint_source(source)] == [("PC101", 9)]


def test_code_no_python_accepts_is_pc001_alone_and_in_its_folder(tmp_path):
    (tmp_path / "broken.py").write_text('def f(:\n    return {"role": "system", "content": 1}\n')
    (tmp_path / "newer.py").write_text(NEWER)
    alone = lint_paths([str(tmp_path / "broken.py")], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    folder = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert [d.code for d in alone.diagnostics] == ["PC001"]
    assert sorted((d.path.rsplit("/", 1)[-1], d.code) for d in folder.diagnostics) == [
        ("broken.py", "PC001"), ("newer.py", "PC101")]


def test_a_template_that_calls_a_builder_is_not_pc001_in_its_folder_either(tmp_path):
    # A project generator's `{{name}}` template names the builder, but holds no sink itself:
    # linted alone it is not analysed, so in its folder it gets no verdict either.
    (tmp_path / "agents.py").write_text(
        "import anthropic\n\n\ndef ask(system_text, q):\n"
        "    return anthropic.Anthropic().messages.create(model='m', max_tokens=9, system=system_text,\n"
        "                                                 messages=[{'role': 'user', 'content': q}])\n")
    (tmp_path / "main.py").write_text("from agents import ask\n\n\ndef {{name}}(q):\n    return ask('Be brief.', q)\n")
    for target in (tmp_path / "main.py", tmp_path):
        report = lint_paths([str(target)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
        assert report.diagnostics == []


def test_a_template_module_read_as_a_helper_is_not_pc001(tmp_path):
    # An analysed file may reach a template module as a helper (a method looked up by name in
    # what it imports): the template does not parse, and gets no verdict that way either.
    from promptlint.lint.catalog import load_catalog, rule_files
    from promptlint.lint.project import Project

    package = tmp_path / "{{cookiecutter.slug}}"
    package.mkdir()
    (package / "names.py").write_text("{%- if cookiecutter.x %}\nNAME = 'x'\n{%- endif %}\n")
    (tmp_path / "broken.py").write_text("NAME = (\n")
    settings = Settings(root=str(tmp_path))
    project = Project(load_catalog(rule_files(settings), settings.memory_files), [str(tmp_path)])
    assert project.analysis(str(package / "names.py")) is None
    assert project.analysis(str(tmp_path / "broken.py")) is None
    assert [os.path.basename(path) for path in project.failed] == ["broken.py"]


# ------------------------------------------------------------ system message edited in place
@pytest.mark.parametrize("write", ['messages[0]["content"] += "\\n" + stamp',
                                   'messages[0][CONTENT] = messages[0][CONTENT] + stamp',
                                   'messages[0].content += stamp'])
@pytest.mark.parametrize("test", ['messages[0]["role"] == "system"', "messages[0][ROLE] == SYSTEM",
                                  "messages[0].role == Role.SYSTEM"])
def test_a_system_message_edited_in_place_under_a_role_test_is_a_sink(write, test):
    source = f'''import time
from .schema import CONTENT, ROLE, SYSTEM, Role

def prepend(messages):
    stamp = str(time.time())
    if messages and {test}:
        {write}
    return messages
'''
    found = diags(source)
    assert [d.code for d in found] == ["PC101"]
    assert "edited in place" in found[0].message


def test_a_user_message_edited_in_place_is_not_a_stable_layer():
    source = '''import time

def stamp_user(messages):
    if messages[-1]["role"] == "user":
        messages[-1]["content"] += f" (sent {time.time()})"
    return messages
'''
    assert diags(source) == []


def test_a_message_built_as_system_then_appended_to_is_a_sink():
    source = '''import time

def build(history):
    system = {"role": "system", "content": "You are terse."}
    system["content"] += f" It is {time.time()}."
    return [system, *history]
'''
    assert [d.code for d in diags(source)] == ["PC101"]



def test_sources_a_helper_writes_into_its_argument_reach_the_callers_object():
    source = '''from datetime import datetime


def enrich_context(context, tz):
    now = datetime.now(tz)
    context["current_time"] = now.strftime("%H:%M")


def rebinds(context):
    context = dict(context)
    context["t"] = datetime.now()


def build_messages(prompt, tz):
    variables = {"name": "x"}
    enrich_context(variables, tz)
    other = {"a": 1}
    rebinds(other)
    return [{"role": "system", "content": prompt.format(**variables)},
            {"role": "system", "content": prompt.format(**other)}]
'''
    found = diags(source)
    assert [(d.code, d.line) for d in found] == [("PC101", 19)]


def test_a_keyword_named_for_the_system_prompt_is_a_sink_whatever_the_callee():
    source = '''from datetime import datetime

SYSTEM_PROMPT = "You are {role_info}."


class Role:
    def _get_prefix(self):
        return "an engineer. Now: " + datetime.now().strftime("%H:%M:%S")

    async def act(self, req):
        system_prompt = SYSTEM_PROMPT.format(role_info=self._get_prefix())
        return await self.llm.aask(req, system_msgs=[system_prompt])

    def __init__(self):
        self.client = make_client(system_prompt=f"Booted {datetime.now()}")  # once per object
        log(extra=f"{datetime.now()}")  # not named for a layer
'''
    found = diags(source)
    assert [d.code for d in found] == ["PC101"]
    assert "recognised by the name `system_msgs=`" in found[0].message


def test_a_system_message_added_to_a_history_is_late_not_stable():
    source = '''import time

def step(conversation, agent):
    conversation.add(role="System", content=f"Round finished at {time.time()}")
    conversation.add_message(role="system", content=f"Status: {time.time()}")
    return agent.run(conversation.get_str())
'''
    assert diags(source) == []


@pytest.mark.parametrize("store", ["model_context.add_message", "memory.add_to_memory", "self.remember",
                                   "memory.add_history"])  # (blind batch 2026-11-27ac: a voice assistant's sleep notice)
def test_a_system_message_object_stored_in_a_history_is_late_not_stable(store):
    source = f'''import time
from autogen_core.models import SystemMessage

async def on_turn(self, model_context, memory):
    await {store}(SystemMessage(content=f"Relevant now: {{time.time()}}"))
    return [SystemMessage(content=f"Built at {{time.time()}}")]  # returned to be sent: still a sink
'''
    assert [(d.code, d.line) for d in diags(source)] == [("PC101", 6)]


def test_a_system_message_object_appended_after_the_history_is_late():
    source = '''import time
from langchain_core.messages import SystemMessage

async def build(self, history, instruction):
    messages = []
    messages.append(SystemMessage(content=f"{instruction} at {time.time()}"))  # leads: stable
    messages.extend(history)
    messages.append(SystemMessage(content=f"status: back after {time.time()}"))  # after the history
    await self.remember(message=SystemMessage(content=f"back after {time.time()}"))  # stored: late
    return messages
'''
    assert [(d.code, d.line) for d in diags(source)] == [("PC101", 6)]


@pytest.mark.parametrize(("system_list", "log", "expected"), [("system_messages", "chat_log", ["PC101"]),
                                                             ("system_messages", "chat_log.content", ["PC101"]),
                                                             ("others", "chat_log.content", [])])
def test_system_content_added_to_a_log_leads_the_request_when_a_converter_gathers_it_first(system_list, log, expected):
    # (a Home Assistant chat log: this turn's system content is appended at its end, and a converter
    # that gathers the system messages into a list of their own sends them ahead of the history)
    source = f'''from homeassistant.components import conversation
from homeassistant.util import dt as dt_util

class Agent:
    def prepare(self, chat_log):
        {log}.append(conversation.SystemContent(content=f"Now: {{dt_util.now():%H:%M}}"))

    async def handle(self, chat_log):
        self.prepare(chat_log)
        return await self.answer(chat_log)

    async def answer(self, chat_log):
        return await self.client.chat(messages=self.to_messages(chat_log))

    def to_messages(self, chat_log):
        system_messages, others = [], []
        for content in {log}:
            if isinstance(content, conversation.SystemContent):
                {system_list}.append({{"role": "system", "content": content.content}})
            else:
                others.append({{"role": "user", "content": content.content}})
        return system_messages + others
'''
    assert codes(source) == expected


def test_an_object_stored_in_a_field_of_the_callers_log_is_not_written_into_its_other_fields():
    # (the log keeps this turn's API object; its tools are not made of the prompt it also holds)
    source = '''from homeassistant.util import dt as dt_util
from openai import AsyncOpenAI

client = AsyncOpenAI()

class Agent:
    def update_llm_data(self, chat_log):
        chat_log.llm_api = self.make_api()

    def make_api(self):
        return APIInstance(prompt=f"Now: {dt_util.now()}", tools=self.tools)

    async def handle(self, chat_log):
        self.update_llm_data(chat_log)
        tools = [{"type": "function", "function": {"name": t.name}} for t in chat_log.llm_api.tools]
        return await client.chat.completions.create(model="m", tools=tools, messages=chat_log.messages)
'''
    assert codes(source) == []


def test_a_system_message_built_by_keywords_elsewhere_is_still_a_sink():
    source = '''import time

def build(Message):
    return [Message(role="system", content=f"Now: {time.time()}")]
'''
    assert [d.code for d in diags(source)] == ["PC101"]


def test_a_template_fill_or_a_record_with_a_layer_keyword_is_not_a_sink():
    source = '''import time
from pydantic import BaseModel


class Preview(BaseModel):
    system_prompt: str


def preview(template):
    shown = Preview(system_prompt=f"Rendered at {time.time()}")
    text = template.format(instructions=f"Rendered at {time.time()}")
    return shown, text
'''
    assert diags(source) == []


def test_writes_through_an_alias_of_a_part_of_the_argument_reach_the_caller():
    source = '''from datetime import datetime


def enrich(context):
    data = context.setdefault("recipient_data", {})
    data["current_time"] = datetime.now().strftime("%H:%M:%S")


def build_messages(prompt):
    context = {"recipient_data": {"name": "x"}}
    enrich(context)
    return [{"role": "system", "content": prompt.format(**context["recipient_data"])}]
'''
    assert [(d.code, d.line) for d in diags(source)] == [("PC101", 12)]


def test_content_appended_to_the_system_message_in_place_is_a_sink():
    source = '''from datetime import datetime
from .schema import SYSTEM, ContentItem


def preprocess(messages, template):
    today = datetime.now().strftime("%B %d, %Y")
    tool_system = template.format(today=today)
    if messages and messages[0].role == SYSTEM:
        messages[0].content.append(ContentItem(text="\\n\\n" + tool_system))
    if messages[-1].role == "user":
        messages[-1].content.append(ContentItem(text=today))  # the user turn: not a stable layer
    return messages
'''
    assert [(d.code, d.line) for d in diags(source)] == [("PC101", 9)]


TRANSCRIPT = '''def history_text(message_history):
    lines = []
    for msg in message_history:
        lines.append(f"{msg.source}: {msg.content}")
    return "\\n".join(lines)


def select_speaker(messages, template):
    prompt = template.format(history=history_text(messages))
    return [{placement}]
'''


@pytest.mark.parametrize("placement, expected", [
    ('{"role": "system", "content": prompt}', ["PC401"]),  # the transcript in the system message
    ('{"role": "user", "content": prompt}', []),  # in the user turn: volatile by design
])
def test_a_transcript_of_the_conversation_in_the_system_message_is_per_turn(placement, expected):
    assert [d.code for d in diags(TRANSCRIPT.replace("{placement}", placement))] == expected


@pytest.mark.parametrize("window", ["message_history[-20:]", "message_history[::-1]", "reversed(message_history)"])
def test_a_transcript_of_a_window_of_the_conversation_is_one_too(window):
    source = f'''async def system_blocks(channel):
    message_history = [m async for m in channel.history(limit=20)]
    lines = [f"{{msg.author.name}}: {{msg.content}}" for msg in {window}]
    return [{{"role": "system", "content": "History:\\n" + "\\n".join(lines)}}]
'''
    assert [d.code for d in diags(source)] == ["PC401"]


def test_converting_a_history_message_by_message_is_not_a_transcript():
    source = '''def to_provider(messages):
    out = [{"role": "system", "content": "You are helpful."}]
    for m in messages:
        out.append({"role": m.role, "content": m.content})
    system = "\\n".join(m.content for m in messages if m.role == "system")
    return {"system": system, "messages": out, "model": "m"}
'''
    assert diags(source) == []



# --------------------------------------------------------------- a chain that starts with the prompt
def test_a_chain_piped_from_a_system_template_fills_it_on_invoke():
    source = '''from datetime import datetime, timezone

from langchain_core.prompts import ChatPromptTemplate

prompt = ChatPromptTemplate.from_messages([("system", "Time: {current_time}"), ("placeholder", "{messages}")])


async def agent(state, llm, tools):
    bound = prompt | llm.bind_tools(tools)
    return await bound.ainvoke({"messages": state["messages"],
                                "current_time": datetime.now(tz=timezone.utc).isoformat()})
'''
    found = lint_source(source)
    assert [(d.code, d.trace[0].line) for d in found] == [("PC101", 11)]


@pytest.mark.parametrize("wrap", ["RunnableWithMessageHistory(prompt | model, get_history, history_messages_key='history')",
                                  "(prompt | model).with_config(run_name='turn')",
                                  "(prompt | model).with_retry(stop_after_attempt=2)"])
def test_a_wrapped_chain_still_fills_its_system_template(wrap):
    # The chain is wrapped for its history (or configured) before it is invoked.
    source = f'''from datetime import datetime

from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory


async def turn(model, get_history, message):
    prompt = ChatPromptTemplate.from_messages([("system", "It is {{{{now}}}}."), MessagesPlaceholder("history"),
                                               ("human", "{{{{message}}}}")], template_format="jinja2")
    chain = {wrap}
    return await chain.ainvoke({{"now": datetime.now(), "message": message}})
'''
    assert [(d.code, d.trace[0].line) for d in lint_source(source)] == [("PC101", 11)]



def test_a_system_template_a_helper_returns_is_filled_where_it_is_invoked():
    # The chain is built in one function (a "chains" module) and invoked in a graph node.
    source = '''from datetime import datetime

from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

CARD = "You are Ava. It is {current_time}."


def get_chain(model):
    prompt = ChatPromptTemplate.from_messages([("system", CARD), MessagesPlaceholder(variable_name="messages")])
    return prompt | model


async def conversation_node(state, model):
    chain = get_chain(model)
    return await chain.ainvoke({"messages": state["messages"], "current_time": datetime.now().isoformat()})
'''
    assert [(d.code, d.trace[0].line) for d in lint_source(source)] == [("PC101", 15)]


def test_a_regular_expression_is_not_the_template_it_edits():
    # `re.sub` returns the edited text: its pattern's `{x}` is not a placeholder of the prompt.
    source = '''import re
from datetime import datetime


class Command:
    def build_prompt(self, template: str) -> str:
        template = re.sub(r"\\{(!\\w+)_model\\}", "a model", template)
        return template.format(current_time=datetime.now().strftime("%H:%M"))

    async def handle(self, context):
        return await self.agent.run_actor(context, system_prompt=self.build_prompt(self.template))
'''
    assert [(d.code, d.trace[0].line) for d in lint_source(source)] == [("PC101", 8)]


# ----------------------------------- a conversation's history rendered into a classifier's prompt
CLASSIFIER = '''import re


class Classifier:
    def __init__(self):
        self.history = ""
        self.prompt_template = "Pick an agent. Conversation so far:\\n{{HISTORY}}"
        self.system_prompt = ""

    def set_template(self, template):
        self.prompt_template = template
        self.update_system_prompt()

    def set_history(self, messages):
        self.history = "\\n".join(f"{m.role}: {' '.join([m.content[0]['text']])}" for m in messages)

    async def classify(self, text, chat_history):
        self.set_history(chat_history)
        self.update_system_prompt()

    def update_system_prompt(self):
        variables = {"HISTORY": self.history}
        self.system_prompt = re.sub(r"{{(\\w+)}}", lambda m: variables.get(m.group(1), ""), self.prompt_template)
'''


def test_history_stored_by_one_method_reaches_the_prompt_another_method_built_before():
    # `update_system_prompt()` is first summarised from `set_template()`, before any history is
    # stored; `set_history()` must make the class's methods be summarised again. The transcript
    # line reads the words deeper in the expression, and `re.sub`'s lambda renders `variables`.
    found = lint_source(CLASSIFIER)
    assert [(d.code, d.line, d.trace[0].line) for d in found] == [("PC401", 23, 15)]


# --------------------------------------------------- "instructions" names a layer only for an agent
@pytest.mark.parametrize("source, reported", [
    ('''import datetime
import anthropic


class ResearchAgent:
    def refresh(self):
        self.instructions = f"Research. Now: {datetime.datetime.now()}"
''', True),
    ('''import datetime
import anthropic


class FileChangeRequest:
    def refresh(self):
        self.instructions = f"Edit the file. Requested at {datetime.datetime.now()}"
''', False),
    ('''import datetime
import anthropic


SYSTEM_PROMPT = "You research."


def handle(repo, text):
    return repo.open_change(title=text, instructions=f"Due {datetime.datetime.now()}", system=SYSTEM_PROMPT)
''', False),
])
def test_instructions_names_a_layer_only_for_an_agent(source, reported):
    assert bool(lint_source(source)) is reported


# ----------------------------------------------- a whole conversation written into a system prompt
CONVERSATION = '''import anthropic

client = anthropic.Anthropic()
REPHRASE = "Conversation:\\n{history}\\nRephrase the question."


class Retriever:
    def rephrase(self, question):
        prompt = f"Given the following conversation history:\\n{self.chat_history}\\n\\nRephrase."
        return client.messages.create(model="m", max_tokens=64, system=prompt,
                                      messages=[{"role": "user", "content": question}])

    def rephrase_with_template(self, question, chat_history):
        history = "\\n".join(f"Q: {q}\\nA: {a}" for q, a in chat_history)
        return client.messages.create(model="m", max_tokens=64, system=REPHRASE.format(history=history),
                                      messages=[{"role": "user", "content": question}])

    def answer(self, question, history, transcript):
        # The history as messages, a video's transcript as a document: neither is written in.
        return client.messages.create(model="m", max_tokens=64, system=f"Summarise: {transcript}",
                                      messages=[*history, {"role": "user", "content": question}])
'''


def test_a_whole_conversation_rendered_into_a_system_prompt_is_per_turn():
    found = lint_source(CONVERSATION)
    assert sorted((d.code, d.trace[0].line) for d in found) == [("PC401", 9), ("PC401", 15)]
    assert all("the conversation so far" in d.trace[0].note for d in found)


@pytest.mark.parametrize("holder", ["self", "agent_settings"])
def test_a_name_sink_message_names_the_object_written(holder):
    source = f'''from datetime import datetime


def prepare({holder}):
    {holder}.system_prompt += f"Now: {{datetime.now()}}"
'''
    [found] = lint_source(source)
    assert f"(recognised by the name `{holder}.system_prompt`)" in found.message


@pytest.mark.parametrize("grow", [
    'by_kind["lights" if state.domain == "light" else "other"].append(state)',  # a list held under a key
    'by_kind["all"]["now"].append(state)',  # two levels down
])
def test_what_a_builder_adds_to_a_list_held_in_a_dict_is_in_the_dict(grow):
    source = f'''def device_list(hass):
    by_kind = {{"lights": [], "other": [], "all": {{"now": []}}}}
    for state in hass.states.async_all():
        {grow}
    return "\\n".join(f"{{kind}}: {{states}}" for kind, states in by_kind.items())


def messages(hass, text):
    return [{{"role": "system", "content": "Devices:\\n" + device_list(hass)}}, {{"role": "user", "content": text}}]
'''
    assert codes(source) == ["PC401"]


@pytest.mark.parametrize(("model", "codes"), [
    ("SessionSystemPromptResponse", []),  # an API's response: shown to a client, not sent to a model
    ("ContextWindowOverview", []),
    ("AgentConfig", ["PC101"]),  # a configuration the agent is built from
])
def test_a_layer_named_keyword_of_a_response_model_is_shown_not_sent(model, codes):
    source = f'''from datetime import datetime


def preview():
    return {model}(system_prompt=f"You are a helper. It is {{datetime.now()}}.")
'''
    assert [d.code for d in lint_source(source)] == codes


@pytest.mark.parametrize(("read", "codes"), [
    ("self.memory.get_facts()", ["PC401"]),  # what earlier turns wrote into the memory
    ("self.long_term_memory.list_recent_notes(5)", ["PC401"]),
    ("self.memory.get_user_by_id(user_id)", []),  # one record looked up by its id
    ("self.memory.get_tools()", []),  # the memory's own tool definitions
])
def test_a_memory_read_named_for_what_it_holds_is_per_turn(read, codes):
    source = f'''class Companion:
    def messages(self, user_id, text):
        known = {read}
        return [{{"role": "system", "content": f"You know: {{known}}"}}, {{"role": "user", "content": text}}]
'''
    assert [d.code for d in lint_source(source)] == codes


@pytest.mark.parametrize(("companion", "reported"), [('"prompt": question', True), ('"input": question', False)])
def test_an_ollama_generate_payload_with_system_and_prompt_is_a_sink(companion, reported):
    # (blind batch 2026-11-26bc) Ollama's `/api/generate` takes `system` beside `prompt`.
    found = lint_source(f'''import json
from datetime import datetime, timezone
import requests


def ask(question):
    system = f"Now: {{datetime.now(timezone.utc)}}"
    payload = {{"model": "llama3", "format": "json", {companion}, "system": system, "stream": False}}
    return requests.post("http://localhost:11434/api/generate", data=json.dumps(payload)).json()
''')
    assert [d.code for d in found] == (["PC101"] if reported else [])


@pytest.mark.parametrize(("where", "reported"), [("module", False), ("turn", True)])
def test_an_agent_made_by_a_factory_at_import_keeps_the_date_it_was_made_with(where, reported):
    # (field corpus) `create_react_agent(prompt=TEMPLATE.format(date=today()))` at module level makes
    # the agent once per process: the factory sends nothing, and the fill happens at import.
    body = '''from datetime import datetime
from langgraph.prebuilt import create_react_agent

TEMPLATE = "You research. Today is {date}."


def today():
    return datetime.now().strftime("%a %b %d, %Y")


'''
    if where == "module":
        body += 'agent = create_react_agent("openai:gpt-4o", [], prompt=TEMPLATE.format(date=today()))\n'
    else:
        body += ('def answer(question):\n'
                 '    agent = create_react_agent("openai:gpt-4o", [], prompt=TEMPLATE.format(date=today()))\n'
                 '    return agent.invoke({"messages": [("user", question)]})\n')
    assert [d.code for d in lint_source(body)] == (["PC101"] if reported else [])


# ------------------------------------------------------------------ values kept per session key
SESSIONS = '''from datetime import datetime
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables.history import RunnableWithMessageHistory


class Bot:
    def __init__(self, llm):
        prompt = ChatPromptTemplate.from_messages([
            ("system", "You help. It is {now}."),
            ("placeholder", "{chat_history}"),
            ("human", "{input}"),
        ])
        self.chain = prompt | llm
        self.sessions = {}

    def reply(self, text, session_id):
        if session_id not in self.sessions:
            self.sessions[session_id] = {"chain": RunnableWithMessageHistory(self.chain, self.history_for)}
        chain = self.sessions[session_id]["chain"]
        return chain.invoke({"input": text, "now": NOW})
'''


@pytest.mark.parametrize("now, expected", [("datetime.now().isoformat()", ["PC101"]), ('"today"', [])])
def test_what_is_stored_under_a_session_key_is_what_a_read_under_that_key_gets(now, expected):
    # The chain kept per conversation (`self.sessions[session_id]`) is the template's chain: the
    # clock filled in at each turn reaches its system message.
    assert codes(SESSIONS.replace("NOW", now)) == expected


def test_gather_of_a_list_of_tasks_gives_each_result_its_own_task():
    source = '''import asyncio
from datetime import datetime
import anthropic

client = anthropic.AsyncAnthropic()


async def stamped(text):
    return f"{text} (sent {datetime.now()})"


async def recall(text):
    return await client.beta.memory.search(text)


async def turn(text, history):
    tasks = [recall(text), stamped(text)]
    memories, stamped_text = await asyncio.gather(*tasks)
    return await client.messages.create(model="m", max_tokens=9, system=f"Known: {memories}",
                                        messages=[*history, {"role": "user", "content": stamped_text}])
'''
    # The memories reach the system prompt; the stamped text only the newest user message.
    assert codes(source) == ["PC401"]


def test_files_in_a_memory_folder_read_through_the_project_helpers_are_per_turn(tmp_path):
    (tmp_path / "fs.py").write_text('''from pathlib import Path


class Files:
    def __init__(self, root="storage"):
        self.root = Path(root)

    def read(self, path):
        target = self.root / path.strip("/")
        if not target.exists():
            return f"{path} not found"
        return target.read_text(encoding="utf-8")

    def names(self, path):
        return [p.name for p in (self.root / path.strip("/")).iterdir()]
''')
    (tmp_path / "agent.py").write_text('''from pydantic_ai import Agent
from fs import Files

agent = Agent("openai:gpt-4o")
files = Files()


@agent.instructions
def memory_files() -> str:
    return "\\n".join(files.read(f"/memory/{name}") for name in sorted(files.names("/memory")))


@agent.instructions
def readme() -> str:
    return files.read("docs/README.md")
''')
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    found = [(os.path.basename(d.path), d.line, d.code) for d in report.diagnostics]
    assert found == [("agent.py", 10, "PC401")]
    assert "/memory/" in report.diagnostics[0].trace[0].note


def test_names_a_star_import_of_a_project_module_brings_are_what_that_module_imports(tmp_path):
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "imports.py").write_text("import os\nfrom datetime import datetime\nfrom utils.text import *\n")
    (tmp_path / "utils" / "text.py").write_text("import uuid\n\n\ndef stamp():\n    return str(uuid.uuid4())\n")
    (tmp_path / "prompt.py").write_text('''from utils.imports import *
from langchain_core.messages import SystemMessage


def system_prompt(history):
    return [SystemMessage(f"Now is {datetime.now()}. Run {stamp()}."), *history]
''')
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert sorted(d.code for d in report.diagnostics) == ["PC101", "PC201"]


# ------------------------------------- what a tool the model calls stores on the object
TOOL_STATE = '''import json
from openai import OpenAI


class Tool:
    def __init__(self, func, name):
        self.func, self.name = func, name


class Agent:
    def __init__(self):
        self.client = OpenAI()
        self.system_prompt = "You plan and then act."
        self.tasks = []
        self.tools = {}

        def %s(tasks):
            self.tasks = json.loads(tasks)
            return "Tasks pinned to your system prompt."

        self.tools["manage_tasks"] = %s

    def run(self, history):
        system = self.system_prompt
        for t in self.tasks:
            system += f"\\n- {t}"
        messages = [{"role": "system", "content": system}, *history]
        return self.client.chat.completions.create(model="m", messages=messages)
'''


@pytest.mark.parametrize(("name", "registered", "reported"), [
    ("manage_tasks", 'Tool(func=manage_tasks, name="manage_tasks")', True),
    ("manage_tasks", "None", False),  # defined, never handed to the model
])
def test_what_a_tool_the_model_calls_stores_on_the_object_changes_its_prompt(name, registered, reported):
    # (blind batch 2026-11-27ax) The model's manage_tasks call rewrites the task list the next
    # request's system prompt pins: it changes between requests of one conversation.
    found = [d.code for d in lint_source(TOOL_STATE % (name, registered))]
    assert found == (["PC401"] if reported else [])


LEADING = '''import anthropic
from datetime import datetime

client = anthropic.Anthropic()


def reply(conversation):
    first = {"role": "%s", "content": f"Context as of {datetime.now()}"}
    return client.messages.create(model="m", max_tokens=10, messages=[first] + %s)
'''
STARRED = LEADING.replace("[first] + %s", "[first, *%s]")


@pytest.mark.parametrize(("role", "rest", "reported"), [
    ("user", "conversation", True),  # ahead of the history: in every request's prefix
    ("assistant", "conversation", True),
    ("user", "[]", False),  # a one-message request has no history after it
])
def test_a_message_put_ahead_of_the_history_is_in_every_prefix(role, rest, reported):
    # (blind batch 2026-11-27ar) A coding agent re-reads the file it edits into a user message it
    # puts before the conversation on every request.
    assert codes(LEADING % (role, rest)) == (["PC101"] if reported else [])
    if rest != "[]":
        assert codes(STARRED % (role, rest)) == (["PC101"] if reported else [])
