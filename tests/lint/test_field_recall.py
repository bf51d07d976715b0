"""Recall patterns from the field corpus (issue 14), each reduced to a small example written for
this suite: frameworks that put a source into the system message themselves, time read through
helpers and library constants, retrieval and memory read back each turn."""

from __future__ import annotations

import pytest

from promptlint.lint.diagnostic import Settings
from promptlint.lint.engine import lint_paths, lint_source


def found(source: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in lint_source(source))


# ------------------------------------------------------------ framework flags
@pytest.mark.parametrize("flag, code", [
    ("add_datetime_to_instructions=True", "PC101"),
    ("add_datetime_to_context=True", "PC101"),
    ("add_memories_to_context=True", "PC401"),
    ("enable_agentic_memory=True", "PC401"),
    ("enable_user_memories=True", "PC401"),
])
def test_an_agno_flag_that_fills_the_system_message_is_reported_at_the_keyword(flag, code):
    source = f'''from agno.agent import Agent

def make_agent(model):
    return Agent(
        model=model,
        instructions="Answer briefly.",
        {flag},
    )
'''
    diagnostics = lint_source(source)
    assert [(d.line, d.code) for d in diagnostics] == [(7, code)]
    assert "agno system message" in diagnostics[0].message and flag.split("=")[0] in diagnostics[0].message


def test_agno_session_state_in_the_system_message_is_per_turn_when_the_model_rewrites_it():
    source = '''from agno.agent import Agent

agent = Agent(instructions="Track the portfolio.", session_state={"ticker": None},
              add_session_state_to_context=True, enable_agentic_state=True)
'''
    assert found(source) == [(4, "PC401")]
    # Rendered each run but written by nothing in the conversation, it is the same on every turn.
    assert found(source.replace(", enable_agentic_state=True", "")) == []


def test_agno_flags_off_or_memories_explicitly_left_out_are_clean():
    assert found('''from agno.agent import Agent

agent = Agent(add_datetime_to_context=False, enable_agentic_memory=True, add_memories_to_context=False)
''') == []


def test_an_agno_agent_given_its_own_system_message_ignores_the_flags():
    # agno sends a given system_message as it is, before it reads any flag that adds to its own.
    source = '''from agno.agent import Agent

def make_agent(model, text):
    return Agent(model=model, system_message=text, add_datetime_to_instructions=True, enable_user_memories=True)
'''
    assert found(source) == []
    assert found(source.replace("system_message=text, ", "")) == [(4, "PC101"), (4, "PC401")]


# ------------------------------------------------------------ a late system message reversed to the front
@pytest.mark.parametrize("order", ["messages[::-1]", "list(reversed(messages))", None])
def test_a_system_message_appended_last_leads_once_the_list_is_reversed(order):
    sent = order or "messages"
    source = f'''import openai
from datetime import datetime

async def reply(client: openai.AsyncOpenAI, newest_first, template):
    messages = [dict(role="user", content=newest_first)]
    now = datetime.now()
    messages.append(dict(role="system", content=template.replace("{{time}}", now.strftime("%H:%M"))))
    return await client.chat.completions.create(model="m", messages={sent})
'''
    # Not reversed, the system message sits after the history: volatile by position, no finding.
    assert [code for _, code in found(source)] == (["PC101"] if order else [])


def test_reverse_in_place_moves_the_system_message_first():
    assert [code for _, code in found('''import openai
import time

def ask(client: openai.OpenAI, text):
    messages = [{"role": "user", "content": text}]
    messages.append({"role": "system", "content": f"Epoch {time.time()}"})
    messages.reverse()
    return client.chat.completions.create(model="m", messages=messages)
''')] == ["PC101"]


@pytest.mark.parametrize("before, late", [
    ('    if summary:\n        messages.append({"role": "assistant", "content": summary})\n', False),
    ('    messages.append({"role": "assistant", "content": summary})\n', True),
    # a history kept on some paths only (when there is a session): where it is, it comes first
    ('    if summary:\n        for m in summary:\n            messages.append(m)\n', True),
    ('    if summary:\n        messages.extend(summary)\n', True),
    ('    if summary:\n        messages.append({"role": "assistant", "content": summary})\n'
     '    messages.append({"role": "user", "content": "Go on."})\n', True),
])
def test_a_message_appended_on_some_paths_only_does_not_make_the_system_message_late(before, late):
    # On the paths where nothing was appended first, the system message leads the request.
    source = f'''import datetime
import openai

def reply(client: openai.OpenAI, summary, text):
    messages = []
{before}    messages.append({{"role": "system", "content": f"Now: {{datetime.datetime.now():%H:%M}}"}})
    messages.append({{"role": "user", "content": text}})
    return client.chat.completions.create(model="m", messages=messages)
'''
    assert [code for _, code in found(source)] == ([] if late else ["PC101"])


# ------------------------------------------------------------ time through helpers and library constants
@pytest.mark.parametrize("imports, call", [
    ("from homeassistant.util import dt as dt_util", "dt_util.now()"),
    ("from django.utils import timezone", "timezone.localtime()"),
    ("import pendulum", "pendulum.now()"),
    ("import arrow", "arrow.get()"),
    ("import time", "time.ctime()"),
    ("import time", "time.asctime(time.localtime())"),
])
def test_clock_helpers_of_frameworks_are_wall_clock_sources(imports, call):
    assert [code for _, code in found(f'''{imports}

def build_system_prompt(name):
    return f"You are {{name}}. Now: {{{call}}}"
''')] == ["PC101"]


@pytest.mark.parametrize("imports, call", [
    ("from django.utils import timezone", "timezone.localtime(created):%Y-%m-%d"),
    ("import time", "time.strftime('%Y-%m-%d', time.gmtime(created))"),
    ("import time", "time.ctime(created)"),
])
def test_converting_a_given_time_does_not_read_the_clock(imports, call):
    assert found(f'''{imports}

def build_system_prompt(created):
    return f"Account created {{{call}}}"
''') == []


@pytest.mark.parametrize("constant", ["DATE_TIME_PROMPT", "BASE_PROMPT"])
def test_a_library_template_constant_with_a_clock_is_reported_where_it_is_used(constant):
    source = f"""from homeassistant.helpers import llm, template

PERSONA = "You control the house."

class Agent:
    async def _async_render_system_prompt(self, hass, user_name):
        parts = [template.Template(llm.{constant} + PERSONA, hass).async_render({{"user": user_name}})]
        return " ".join(parts)
"""
    diagnostics = lint_source(source)
    assert [(d.line, d.code) for d in diagnostics] == [(7, "PC101")]
    assert constant in diagnostics[0].message and "recognised by the name" in diagnostics[0].message


def test_an_agno_flag_on_an_agent_kept_in_a_class_body_is_reported():
    # A class attribute is built once at import, but agno renders the clock on every run of it.
    source = '''from datetime import datetime
from agno.agent import Agent


class ChatFlow:
    mother: Agent = Agent(instructions="Be brief.", add_datetime_to_instructions=True, add_history_to_messages=True)
    clerk: Agent = Agent(instructions=f"Opened on {datetime.now()}.", add_history_to_messages=True)

    def ask(self, question):
        return self.mother.run(question).content
'''
    # (the clerk's instructions were filled once, at import: the same text on every run)
    assert found(source) == [(6, "PC101")]


def test_a_private_retrieval_helper_is_named_for_what_it_reads(tmp_path):
    (tmp_path / "helpers.py").write_text('''def _retrieve_segment_context(channel_id, recent):
    return "\\n".join(m["content"] for m in recent), 0, {}
''')
    (tmp_path / "context.py").write_text('''def build(channel_id, system_text, recent):
    from helpers import _retrieve_segment_context
    retrieved, tokens, receipt = _retrieve_segment_context(channel_id, recent)
    content = system_text
    if retrieved:
        content += f"\\n\\nPast messages:\\n{retrieved}"
    return [{"role": "system", "content": content}] + recent
''')
    diagnostics = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False).diagnostics
    assert [(d.path.rsplit("/", 1)[-1], d.line, d.code) for d in diagnostics] == [("context.py", 7, "PC401")]
    assert "_retrieve_segment_context" in diagnostics[0].message


def test_a_tuple_returned_in_two_shapes_keeps_each_place(tmp_path):
    # `return EMPTY` on one path and `return text, n` on another: the text is either one, place by place.
    (tmp_path / "notes.py").write_text('''import time

EMPTY = ("", 0)


def notes_for(topic):
    if topic:
        return f"Notes at {time.time()}", 1
    return EMPTY
''')
    (tmp_path / "chat.py").write_text('''import anthropic
from notes import notes_for


def reply(client: anthropic.Anthropic, topic, history):
    notes, count = notes_for(topic)
    return client.messages.create(model="m", max_tokens=9, system=f"Notes: {notes}", messages=history)
''')
    diagnostics = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False).diagnostics
    assert [(d.path.rsplit("/", 1)[-1], d.line, d.code) for d in diagnostics] == [("chat.py", 7, "PC101")]


# ------------------------------------------------------------ retrieval and memory read back each turn
@pytest.mark.parametrize("read", ['state.retrieved_docs', 'state["memories"]', 'state.get("queries", [])'])
def test_a_graph_node_reading_retrieval_or_memory_from_the_run_state_is_per_turn(read):
    source = f'''from langchain_core.prompts import ChatPromptTemplate

SYSTEM = "Use this context:\\n{{context}}"

async def respond(state, *, config):
    prompt = ChatPromptTemplate.from_messages([("system", SYSTEM), ("placeholder", "{{messages}}")])
    context = "\\n".join(str(d) for d in {read})
    return await prompt.ainvoke({{"messages": state.messages, "context": context}}, config)
'''
    diagnostics = lint_source(source)
    assert [d.code for d in diagnostics] == ["PC401"] and "graph state field" in diagnostics[0].message


def test_other_state_fields_and_other_receivers_are_not_sources():
    assert found('''from langchain_core.prompts import ChatPromptTemplate

SYSTEM = "You answer in {language}. Known: {known}"

async def respond(state, cache, *, config):
    prompt = ChatPromptTemplate.from_messages([("system", SYSTEM), ("placeholder", "{messages}")])
    return await prompt.ainvoke({"messages": state.messages, "language": state.language,
                                 "known": cache.documents}, config)
''') == []


def test_a_memory_read_from_a_store_through_a_helper_is_per_turn():
    source = '''def get_memory(store, namespace, default):
    item = store.get(namespace, "profile")
    return item.value if item else default


def llm_call(state, store, llm):
    prefs = get_memory(store, ("assistant", "prefs"), "none yet")
    system = {"role": "system", "content": f"Follow these preferences: {prefs}"}
    return llm.invoke([system] + state["messages"])
'''
    diagnostics = lint_source(source)
    assert [(d.line, d.code) for d in diagnostics] == [(8, "PC401")]
    assert "store.get" in diagnostics[0].message


def test_get_on_an_object_that_is_not_a_store_is_not_a_source():
    assert found('''def llm_call(state, settings, llm):
    tone = settings.get("tone", "plain")
    return llm.invoke([{"role": "system", "content": f"Answer in a {tone} tone."}] + state["messages"])
''') == []


def test_user_memories_read_by_a_memory_manager_are_per_turn():
    assert [code for _, code in found('''def get_system_message(agent, user_id):
    system_message_content = "You are helpful."
    for memory in agent.memory_manager.get_user_memories(user_id=user_id):
        system_message_content += f"\\n- {memory.memory}"
    return system_message_content
''')] == ["PC401"]


def test_a_project_client_method_named_for_retrieval_is_per_turn():
    source = '''class KnowledgeClient:
    async def query_for_conversation(self, query):
        return await self.http.post("/query", json={"q": query})


class Agent:
    async def build_messages(self, history):
        client = KnowledgeClient()
        found = await client.query_for_conversation(query=history[-1]["content"])
        prompt = f"Be brief.\\nKnowledge base:\\n{found}"
        return [{"role": "system", "content": prompt}] + history
'''
    assert [code for _, code in found(source)] == ["PC401"]


@pytest.mark.parametrize(("looked_up", "codes"), [("ToolSelector", []), ("self.text", ["PC401"])])
def test_a_lookup_by_type_is_no_retrieval(looked_up, codes):
    # A UI's `self.query_one(ToolSelector)` finds a widget by its class: there is no query to match.
    source = f'''class ChatSettings:
    def save(self):
        self.tools = self.query_one({looked_up}).selected
        return ChatModel(model=self.model, system=self.system, tools=self.tools)
'''
    assert [code for _, code in found(source)] == codes


@pytest.mark.parametrize(("call", "codes"), [("retrieve(assistant_id=self.assistant_id, timeout=30)", []),
                                           ("retrieve(self.assistant_id)", []),
                                           ("retrieve(query=self.question)", ["PC401"]),
                                           ("_retrieve_assistant(self.assistant_id, timeout)", []),
                                           ("_retrieve_memories(self.user_id)", ["PC401"])])
def test_an_object_fetched_by_its_id_is_no_retrieval(call, codes):
    # `client.beta.assistants.retrieve(assistant_id)` fetches a stored object, not this turn's matches;
    # so does a wrapper named for the API object it fetches. Memories fetched by a user's id are
    # what earlier turns stored.
    receiver = "self" if call.startswith("_") else "self.client.beta.assistants"
    source = f'''class Sync:
    def pull(self, timeout=30):
        self.tools = {receiver}.{call}.tools
        return ChatModel(model=self.model, system=self.system, tools=self.tools)
'''
    assert [code for _, code in found(source)] == codes


def test_a_module_function_named_like_retrieval_is_not_a_source():
    assert found('''import re

def build_system_prompt(text):
    match = re.search(r"name: (\\\\w+)", text)
    return f"You are {match.group(1) if match else 'Al'}."
''') == []


def test_the_token_usage_of_an_earlier_call_is_per_turn():
    assert [code for _, code in found('''import json

class Runner:
    def _render_system_prompt(self):
        blocks = [self.base]
        last = self.log.last_event()
        if last is not None:
            blocks.append(f"<usage>{json.dumps(last.payload['usage'], sort_keys=True)}</usage>")
        return "\\\\n".join(blocks)
''')] == ["PC401"]


def test_a_field_read_from_an_argument_is_not_written_into_it():
    # `usage = response.usage` reads the reply's token usage for a report; the reply itself
    # (its text, placed in the next system prompt) does not carry the usage.
    assert [code for _, code in found('''def report(payload):
    pass

def emit(response):
    usage = response.usage
    report({"input_tokens": usage.input_tokens if usage else None})

def ask(client, messages):
    response = client.chat.completions.create(model="m", messages=messages)
    emit(response)
    return response.choices[0].message.content

def plan(client, goal):
    text = ask(client, [{"role": "user", "content": goal}])
    return client.chat.completions.create(model="m", messages=[{"role": "system", "content": "Plan: " + text}])
''')] == []


def test_live_home_assistant_entity_states_are_per_turn():
    assert [code for _, code in found('''class Agent:
    def _build_system_prompt(self):
        lines = [f"{s.entity_id}: {s.state}" for s in self.hass.states.async_all()]
        return "Devices:\\\\n" + "\\\\n".join(sorted(lines))
''')] == ["PC401"]


def test_examples_shuffled_in_place_carry_the_randomness():
    diagnostics = lint_source('''import random

def build_system_prompt(examples):
    chosen = list(examples)
    random.shuffle(chosen)
    return "Examples:\\\\n" + "\\\\n".join(chosen[:4])
''')
    assert [(d.line, d.code) for d in diagnostics] == [(6, "PC201")] and "random.shuffle" in diagnostics[0].message


def test_a_code_block_in_a_system_message_set_at_import_is_rendered_each_time():
    diagnostics = lint_source('''from interpreter import interpreter

interpreter.system_message = """You control the computer.
{{
import pywinctl
window = pywinctl.getActiveWindow()
print("Active window: " + (window.title if window else "none"))
}}
"""
''')
    assert [(d.line, d.code) for d in diagnostics] == [(6, "PC301")] and "getActiveWindow" in diagnostics[0].message


def test_a_constant_system_message_set_at_import_is_clean():
    assert found('''from interpreter import interpreter

interpreter.system_message = "You control the computer. Today is {date}."
''') == []


# ------------------------------------------------------------ builders that keep what they are given
def test_a_section_added_to_a_builder_object_reaches_what_it_builds():
    diagnostics = lint_source('''import datetime


class PromptBuilder:
    def __init__(self):
        self._sections = []

    def add_section(self, heading, content):
        self._sections.append((heading, content))
        return self

    def build(self):
        return "\\\\n\\\\n".join(f"## {h}\\\\n{c}" for h, c in self._sections)


def clock_section():
    return datetime.datetime.now(datetime.UTC).strftime("%A %H:%M")


def build_agent_system_prompt(user):
    builder = PromptBuilder()
    builder.add_section("User", user)
    builder.add_section("Now", clock_section())
    return builder.build()
''')
    assert [d.code for d in diagnostics] == ["PC101"]
    assert any("kept in `self._sections` by add_section()" in step.note for step in diagnostics[0].trace)


def test_a_builder_given_only_constants_is_clean():
    assert found('''class PromptBuilder:
    def __init__(self):
        self._sections = []

    def add_section(self, heading, content):
        self._sections.append((heading, content))

    def build(self):
        return "\\\\n".join(c for _, c in self._sections)


def build_system_prompt(persona):
    builder = PromptBuilder()
    builder.add_section("Persona", persona)
    builder.add_section("Rules", "Be brief.")
    return builder.build()
''') == []


def test_an_object_the_function_did_not_build_keeps_its_own_attributes():
    # A shared object passed in: class-wide attributes would merge every caller's values.
    assert found('''import time


class Log:
    def __init__(self):
        self.lines = []

    def add(self, line):
        self.lines.append(line)

    def text(self):
        return "\\\\n".join(self.lines)


def record(log):
    log.add(f"at {time.time()}")


def build_system_prompt(persona):
    log = Log()
    log.add(persona)
    return log.text()
''') == []


def test_notices_drained_for_this_request_are_per_turn():
    # A queue the turn filled (a tool result was cut short) is emptied into a system message.
    assert [code for _, code in found('''class Conversation:
    def prepare(self, messages, context):
        dicts = [m.to_dict() for m in messages]
        notices = context.drain_context_notices()
        if notices:
            text = "\\\\n".join(f"- {n}" for n in notices)
            dicts.insert(1, {"role": "system", "content": "[Context]\\\\n" + text})
        return dicts
''')] == ["PC401"]


def test_a_compiled_pattern_search_is_a_match_not_a_retrieval():
    # The system part is cut out of a rendered template: fixed text, not this turn's lookup.
    assert found('''import re

def split(text, messages):
    regex = re.compile(r"<S>(.*?)</S>")
    match = regex.search(text)
    if match:
        messages.append({"role": "system", "content": match.group(1)})
    return messages
''') == []


def test_the_last_element_of_a_list_being_filled_is_not_the_newest_message():
    # `chat_messages[-1]` is the message merged last here, not this turn's user words.
    assert found('''def format_messages(messages):
    chat_messages = []
    for message in messages:
        if chat_messages and message["role"] == chat_messages[-1]["role"]:
            content = f"{chat_messages[-1]['content']}\\\\n{message['content']}"
            chat_messages[-1]["content"] = content
        else:
            chat_messages.append(message)
    return [{"role": m["role"], "content": str(content)} for m in chat_messages]


def request_data(messages):
    system_prompt = ""
    for message in format_messages(messages):
        if message["role"] == "system":
            system_prompt += message["content"]
    return {"messages": [], "system": system_prompt}
''') == []


@pytest.mark.parametrize("run", [
    "executor.submit(now_line, 'UTC').result()",
    "await asyncio.to_thread(now_line, 'UTC')",
    "await asyncio.get_running_loop().run_in_executor(None, now_line, 'UTC')",
])
def test_a_function_handed_to_a_pool_or_a_thread_is_the_call_it_makes(run):
    source = f'''import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

executor = ThreadPoolExecutor()


def now_line(zone):
    return f"Now ({{zone}}): {{datetime.now().isoformat()}}"


async def reply(client, messages):
    system = {run}
    return client.messages.create(model="m", max_tokens=9, system=system, messages=messages)
'''
    assert [code for _, code in found(source)] == ["PC101"]


# ------------------------------------------------ the newest message found by a search from the end
SEARCH = '''from openai import OpenAI


def latest_question(messages):
    for m in %s:
        if m.get("role") == "user":
            %s
    return ""


def answer(memory, messages):
    hits = memory.profile(q=latest_question(messages))
    system = {"role": "system", "content": f"Known about the user: {hits}"}
    return OpenAI().chat.completions.create(model="m", messages=[system, *messages])
'''


@pytest.mark.parametrize("order", ["reversed(messages)", "messages[::-1]"])
def test_a_search_of_the_conversation_from_its_newest_end_reads_this_turns_text(order):
    assert found(SEARCH % (order, 'return m.get("content", "")')) == [(13, "PC401")]


@pytest.mark.parametrize("order, body", [
    ("messages", 'return m.get("content", "")'),  # the oldest user message: the task, fixed
    ("reversed(messages)", 'print(m.get("content", ""))'),  # read, not picked
])
def test_a_walk_that_does_not_stop_at_the_newest_message_reads_no_turn(order, body):
    assert found(SEARCH % (order, body)) == []


# ------------------------------------------------ retrieval named for similarity to the question
@pytest.mark.parametrize("call", ["get_related_ddl(question)", "get_similar_question_sql(question)",
                                  "find_relevant_docs(question)"])
def test_retrieval_named_for_similarity_is_per_turn(call):
    source = f'''from openai import OpenAI


class Assistant:
    def ask(self, question):
        context = self.store.{call}
        system = {{"role": "system", "content": f"Use these: {{context}}"}}
        return OpenAI().chat.completions.create(model="m", messages=[system, {{"role": "user", "content": question}}])
'''
    assert found(source) == [(7, "PC401")]


def test_a_project_method_named_for_search_still_sends_what_it_is_given():
    source = '''from openai import OpenAI


class Search:
    def search_followups(self, query, contexts):
        system = {"role": "system", "content": f"Suggest follow-ups for: {contexts}"}
        return OpenAI().chat.completions.create(model="m", messages=[system, {"role": "user", "content": query}])

    def answer(self, query):
        return self.search_followups(query, %s)
'''
    assert found(source % "self.memory.search(query)") == [(10, "PC401")]
    assert found(source % '["fixed"]') == []


# ------------------------------------------------------------ text chosen by this turn's words
LOREBOOK = '''import openai

LORE = [{"key": "dragon", "text": "Dragons sleep in winter."}, {"key": "castle", "text": "The castle fell."}]


def mentions(phrase, keywords):
    for k in keywords:
        if k.lower() in phrase.lower():
            return True
    return False


def gather(user_message):
    lore = ""
    for entry in LORE:
        if TEST:
            lore += entry["text"] + "\\n"
    return lore


def reply(client: openai.OpenAI, user_message):
    system = "You are the narrator.\\n" + gather(user_message)
    return client.chat.completions.create(model="m", messages=[{"role": "system", "content": system},
                                                               {"role": "user", "content": user_message}])
'''


@pytest.mark.parametrize("test", ['entry["key"] in user_message', 'mentions(user_message, [entry["key"]])'])
def test_entries_a_test_on_the_users_words_lets_into_the_system_message_follow_them(test):
    # Which lorebook entries (or skills) go in is decided by this turn's words: a new system
    # message whenever the user names another one.
    assert [code for _, code in found(LOREBOOK.replace("TEST", test))] == ["PC401"]


@pytest.mark.parametrize("test", ['entry["key"] != "castle"',  # a fixed test
                                  'user_message != "" and len(user_message) > 3'])  # only that there are words
def test_entries_a_test_lets_in_regardless_of_what_the_user_says_are_the_same_every_turn(test):
    assert found(LOREBOOK.replace("TEST", test)) == []


TOOL_ROUTER = '''from openai import OpenAI

client = OpenAI()
TOOLS = [{"type": "function", "function": {"name": "lights", "description": "Lights", "parameters": {}}, "area": "home"},
         {"type": "function", "function": {"name": "music", "description": "Music", "parameters": {}}, "area": "media"}]


def classify(text):
    if "light" in text:
        return ["home"]
    return ["media"]


def reply(user_message, history):
    intents = classify(user_message)
    PICK
    messages = [{"role": "system", "content": "You run the house."}, *history, {"role": "user", "content": user_message}]
    return client.chat.completions.create(model="m", messages=messages, tools=tools)
'''


@pytest.mark.parametrize(("pick", "reported"), [
    ('tools = [t for t in TOOLS if t["area"] in intents]', True),
    ('tools = []\n    for t in TOOLS:\n        if t["area"] in intents:\n            tools.append(t)', True),
    ('tools = [t for t in TOOLS if t["area"] in user_message]', True),
    ('tools = [t for t in TOOLS if t["area"] != "admin"]', False),  # a fixed filter
    ('tools = [t for t in TOOLS if len(user_message) > 3]', False),  # only that there are words
])
def test_a_tool_list_the_users_words_pick_from_changes_with_them(pick, reported):
    # (blind batches 2026-11-27af and ai) A router keeps the tools of the intent it reads in this
    # turn's message: the tool list, ahead of everything, changes whenever the intent does.
    found = [(d.line, d.code) for d in lint_source(TOOL_ROUTER.replace("PICK", pick))]
    assert [code for _, code in found] == (["PC401"] if reported else [])


def test_the_turns_input_handed_down_a_chain_of_calls_is_one_leak():
    source = '''import openai

client = openai.OpenAI()


def encode(user_input):
    system = f"Answer the user. They just said: {user_input[:40]}"
    return client.chat.completions.create(model="m", messages=[{"role": "system", "content": system},
                                                               {"role": "user", "content": user_input}])


def run(user_input):
    return encode(user_input)


def run_streaming(user_input):
    return encode(user_input)
'''
    diagnostics = lint_source(source)
    assert [(d.line, d.code) for d in diagnostics] == [(7, "PC401")]  # at the system text
    assert len(diagnostics[0].related) == 2  # the two callers' own `user_input`


def test_what_a_retrieval_context_builder_picks_for_the_query_is_per_turn():
    # GraphRAG-shaped: the builder is an abstract type here, its matches are this query's.
    assert [code for _, code in found('''SYSTEM = "Answer from the data below.\\n---Data---\\n{context_data}\\n---End---"


class LocalSearch:
    def __init__(self, model, context_builder):
        self.model, self.context_builder = model, context_builder

    def search(self, query):
        context = self.context_builder.build_context(query=query)
        prompt = SYSTEM.format(context_data=context.context_chunks)
        return self.model.chat.completions.create(model="m", messages=[{"role": "system", "content": prompt},
                                                                       {"role": "user", "content": query}])
''')] == ["PC401"]


# ------------------------------------------------------------ raw HTTP requests and stored histories
RAW_HTTP = '''import datetime
import json

import httpx


async def reply(context, user_message, model):
    history = context.chat_data.get("chat_history", [])
    system = {"role": "system", "content": f"Now: {datetime.datetime.now()}"}
    payload = {"model": model, "messages": [system, *history, {"role": "user", "content": user_message}]}
    async with httpx.AsyncClient() as client:
        response = await client.post("https://api.openai.com/v1/chat/completions", BODY)
    answer = response.json()["choices"][0]["message"]["content"]
    return [{"role": "system", "content": f"Last answer: {answer}"}, *history]
'''


@pytest.mark.parametrize("body", ["json=payload", "data=json.dumps(payload)"])
def test_the_reply_to_a_posted_request_is_not_the_request(body):
    # The request's clock is reported once, in its system message; the model's reply that the
    # next system message quotes does not carry it.
    assert found(RAW_HTTP.replace("BODY", body)) == [(9, "PC101")]


def test_a_system_message_appended_to_a_stored_history_comes_after_it():
    assert found('''import datetime


def note_tool_run(context, name):
    history = context.chat_data.get("chat_history", [])
    history.append({"role": "system", "content": f"{name} ran at {datetime.datetime.now()}"})
''') == []


@pytest.mark.parametrize(("start", "reported"), [
    ('context.chat_data.get("chat_history", [])', False),  # a stored history: the message goes after it
    ("[]", True),  # a fresh list: the message leads the request
])
def test_a_system_message_bound_to_a_name_is_judged_where_it_is_appended(start, reported):
    source = f'''import datetime
import openai


def reply(client: openai.OpenAI, context, text):
    history = {start}
    stamp = {{"role": "system", "content": f"Now: {{datetime.datetime.now()}}"}}
    history.append(stamp)
    history.append({{"role": "user", "content": text}})
    return client.chat.completions.create(model="m", messages=history)
'''
    assert [code for _, code in found(source)] == (["PC101"] if reported else [])


@pytest.mark.parametrize(("call", "reported"), [
    ("self.llm_generate_fn(messages)", False),  # an injected model call: its answer is not its prompt
    ("self.trim_history(messages)", True),  # an unknown helper handed the messages: they go on through it
])
def test_an_unknown_callable_named_for_asking_a_model_answers_with_new_text(call, reported):
    source = f'''import datetime


class Router:
    async def route(self, question):
        messages = [{{"role": "system", "content": f"Now: {{datetime.datetime.now()}}. Pick a file."}},
                    {{"role": "user", "content": question}}]
        raw = await {call}
        return [{{"role": "system", "content": f"Write into {{raw}}."}}, {{"role": "user", "content": question}}]
'''
    assert [(line, code) for line, code in found(source) if line == 9] == ([(9, "PC101")] if reported else [])


STUFF_CHAIN = '''from langchain.chains import create_retrieval_chain
from langchain.chains.combine_documents import create_stuff_documents_chain
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

SYSTEM = "Answer from the sources below.SYSTEM_SLOT"
HUMAN = "HUMAN_SLOT{input}"


def build(llm, retriever):
    prompt = ChatPromptTemplate.from_messages(
        [("system", SYSTEM), MessagesPlaceholder("chat_history"), ("human", HUMAN)])
    qa = create_stuff_documents_chain(llm, prompt)
    return create_retrieval_chain(retriever, qa)
'''


@pytest.mark.parametrize(("system", "human", "reported"), [
    ("\\n\\n{context}", "", True),  # the retrieved documents lead the conversation, in the system message
    ("", "Sources: {context}\\n\\n", False),  # they go with the newest question: where they belong
])
def test_a_stuff_documents_chain_fills_its_prompts_context_with_this_turns_documents(system, human, reported):
    source = STUFF_CHAIN.replace("SYSTEM_SLOT", system).replace("HUMAN_SLOT", human)
    assert found(source) == ([(5, "PC401")] if reported else [])


def test_a_factory_of_a_search_tool_returns_the_tool_not_what_it_finds():
    # The model calls the tool later; its results come back as tool results, not in the system prompt.
    source = '''def _search_past_sessions_function(db, user_id):
    def search(query):
        return db.search(user_id, query)
    return search


def system_message(db, user_id, tools):
    tools.append(_search_past_sessions_function(db, user_id))
    return {"role": "system", "content": f"You may search past sessions with {tools[-1].__name__}."}
'''
    assert found(source) == []
    made = "from agno.tools.function import Function\n" + source.replace("    return search\n", "    return Function.from_callable(search)\n")
    assert found(made) == []
    searching = source.replace("    def search(query):\n        return db.search(user_id, query)\n    return search\n",
                               "    return db.search(user_id, \"recent\")\n")
    assert found(searching) == [(7, "PC401")]


def test_a_method_named_for_the_clock_on_a_receiver_of_unknown_type_reads_it():
    # `agent` is an unannotated parameter: its class cannot be followed, its method's name says what it returns.
    source = '''def build_system_prompt(agent, persona):
    now = agent.get_current_time()
    return f"{persona}\\n\\nThe current time is: {now.strftime('%H:%M')}"
'''
    assert found(source) == [(3, "PC101")]
    assert found(source.replace("get_current_time", "get_timezone")) == []


@pytest.mark.parametrize(("call", "codes"), [("agent._load_memory_content(channel_id)", [(4, "PC401")]),
                                             ("agent.load_user_memory(channel_id)", [(4, "PC401")]),
                                             ("agent.load_memory_settings(channel_id)", [])])
def test_a_memory_loaded_by_a_method_named_for_it_is_read_each_turn(call, codes):
    source = f'''def build_system_prompt(agent, channel_id, persona):
    system_prompt = persona
    system_prompt += f"\\n\\n{{{call}}}"
    return system_prompt
'''
    assert found(source) == codes


@pytest.mark.parametrize("given", ['"Be brief.", extra', "user_extra_system_prompt=extra", "user_llm_prompt=extra"])
def test_home_assistant_chat_log_prompts_are_its_system_prompt(given):
    # The chat log rebuilds its system content from the prompt and the extra prompt on every turn.
    source = f'''from homeassistant.components import conversation


class Agent:
    async def _async_handle_message(self, user_input: conversation.ConversationInput, chat_log: conversation.ChatLog):
        extra = await self.memory_service.async_build_memory_prompt(user_input)
        await chat_log.async_provide_llm_data(user_input.as_llm_context("x"), None, {given})
'''
    assert [code for _, code in found(source)] == ["PC401"]


# ------------------------------------------------------------ memory kept in a database table
SUMMARY = '''import sqlite3
import anthropic

client = anthropic.Anthropic()


def get_summary(chat_id):
    with sqlite3.connect("bot.db") as con:
        cur = con.cursor()
        cur.execute("SELECT summary FROM TABLE WHERE chat_id = ?", (chat_id,))
        row = cur.fetchone()
    return row[0] if row else ""


def reply(chat_id, history):
    return client.messages.create(model="m", max_tokens=9, system=f"Memory: {get_summary(chat_id)}", messages=history)
'''


@pytest.mark.parametrize("table, reported", [("long_term_memory", True), ("chat_summaries", True), ("user_facts", True),
                                             ("personas", False), ("settings", False)])
def test_rows_read_from_a_memory_table_are_per_turn(table, reported):
    assert found(SUMMARY.replace("TABLE", table)) == ([(16, "PC401")] if reported else [])


ORM = '''from openai import OpenAI
from sqlalchemy import select

from db import MODEL

client = OpenAI()


def reply(session, history):
    rows = READ
    messages = [{"role": "system", "content": f"Known so far: {rows}"}, *history]
    return client.chat.completions.create(model="m", messages=messages)
'''


@pytest.mark.parametrize("model, reported", [("MessageSummary", True), ("Fact", True), ("UserMemory", True),
                                             ("Persona", False), ("Setting", False)])
@pytest.mark.parametrize("read", ["session.query(MODEL).all()", "session.execute(select(MODEL)).scalars().all()"])
def test_rows_an_orm_query_reads_from_a_memory_model_are_per_turn(model, reported, read):
    # (blind batch 2026-11-27aw) SQLAlchemy models named for summaries and facts the conversation
    # keeps rewriting, read back before each turn: the same `tables` patterns, by the model's name.
    source = ORM.replace("READ", read).replace("MODEL", model)
    assert found(source) == ([(11, "PC401")] if reported else [])
