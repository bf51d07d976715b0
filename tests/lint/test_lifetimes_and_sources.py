"""Lifetimes and sources on real code (issue 14, FIELD.md): what is computed once is not a leak,
what only looks up per-turn content is not the content, what is fixed per host reads no clock.

Each case is a small example written for this suite, reduced from a pattern seen in the field corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptlint.lint.catalog import rules_dir
from promptlint.lint.diagnostic import Settings
from promptlint.lint.discover import collect_files
from promptlint.lint.engine import lint_paths, lint_source
from tests.lint.opt_in import ORDERING, opt_in

LIVE = opt_in("live")


def codes(source: str, settings: Settings | None = None) -> list[str]:
    return sorted(d.code for d in lint_source(source, settings=settings))


# ------------------------------------------------------------- set-up paths are frozen
SEQUENCE = '''from datetime import datetime

def {name}(agent):
    stamp = datetime.now().isoformat()
    system = agent.persona + "\\nMemory last edited: " + stamp
    return [{{"role": "system", "content": system}}, {{"role": "user", "content": "login"}}]
'''


@pytest.mark.parametrize("name", ["initialize_message_sequence", "_init_messages", "setup_conversation",
                                  "__post_init__", "_complete_init", "reload_with_initial_messages"])
def test_a_system_message_built_in_a_set_up_path_is_frozen(name):
    # Run once when the agent or conversation is created, then stored and replayed unchanged.
    assert codes(SEQUENCE.format(name=name)) == []


@pytest.mark.parametrize("name", ["build_messages", "prepare_context", "create_agent"])
def test_the_same_message_built_per_request_is_a_leak(name):
    # `create_agent` is not a set-up verb: real agents rebuild themselves per request.
    assert codes(SEQUENCE.format(name=name)) == ["PC101"]


# --------------------------------------------------------- lookup inputs are not content
LOOKUP = '''def {name}(self, {param}):
    rows = self.db.select(self.table).where(self.table.c.text.contains({param}))
    system = "Relevant notes:\\n" + "\\n".join(r.text for r in rows)
    return [{{"role": "system", "content": system}}]
'''


@pytest.mark.parametrize("param", ["query", "question"])
def test_a_lookup_input_is_not_per_turn_content(param):
    assert codes(LOOKUP.format(name="context_for", param=param)) == []


def test_the_user_message_itself_is_still_per_turn_content():
    assert codes(LOOKUP.format(name="context_for", param="user_message")) == ["PC401"]


def test_what_a_search_returns_is_per_turn_content():
    assert codes('''def context_for(store, query):
    hits = store.similarity_search(query, k=4)
    return [{"role": "system", "content": "Notes: " + str(hits)}]
''') == ["PC401"]


# ------------------------------------------------------ host facts fixed per process
PLATFORM = '''import platform, os

def build_messages(history):
    system = f"OS: {platform.platform()} user home: {os.path.expanduser('~')}"
    return [{"role": "system", "content": system}, *history]
'''


def test_a_host_fact_fixed_for_the_process_is_not_a_leak_by_default():
    assert codes(PLATFORM) == []


def test_per_process_host_facts_are_an_opt_in_rule_file():
    settings = Settings(rule_files=(str(rules_dir() / "optional" / "host.yaml"),))
    found = lint_source(PLATFORM, settings=settings)
    # one sink line, one code: one finding that names the other source too
    assert [d.code for d in found] == ["PC301"]
    assert "platform.platform()" in found[0].message and "expanduser" in found[0].message


CWD = '''import os

def build_messages(history):
    return [{"role": "system", "content": "cwd: " + os.getcwd()}, *history]
'''


def test_the_working_directory_is_frozen_per_process_by_default_and_opt_in():
    # On the field corpus no working-directory finding was true: agents rarely change directory.
    assert codes(CWD) == []
    settings = Settings(rule_files=(str(rules_dir() / "optional" / "host.yaml"),))
    assert codes(CWD, settings) == ["PC301"]


# ------------------------------------------------------------------ zone-only formats
@pytest.mark.parametrize("expr", ['time.strftime("%Z")', 'datetime.now().strftime("%Z (UTC%z)")'])
def test_a_time_zone_name_reads_no_clock(expr):
    assert codes(f'''import time
from datetime import datetime

def build_messages(history):
    return [{{"role": "system", "content": "Zone: " + {expr}}}, *history]
''') == []


def test_a_format_with_the_hour_still_reads_the_clock():
    assert codes('''from datetime import datetime

def build_messages(history):
    return [{"role": "system", "content": "Now: " + datetime.now().strftime("%H:%M %Z")}, *history]
''') == ["PC101"]


# ----------------------------------------------------------------- test code is skipped
def test_walking_a_tree_skips_test_code_by_default(tmp_path):
    for name in ("app/agent.py", "tests/test_agent.py", "unit_tests/agent_cases.py", "app/test_helpers.py", "app/agent_test.py",
                 "conftest.py", "app/testing.py"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")
    found = collect_files([str(tmp_path)], Settings(root=str(tmp_path)))
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in found) == [
        "app/agent.py", "app/testing.py"]
    named = tmp_path / "tests" / "test_agent.py"
    assert collect_files([str(named)], Settings(root=str(tmp_path))) == [str(named)]


def test_an_id_minted_in_a_set_up_path_is_sticky_for_its_callers():
    # `initialize_session` mints the id once and stores it on the agent; later runs reuse it.
    source = '''from uuid import uuid4

def initialize_session(agent, session_id=None):
    if session_id is None:
        session_id = agent.session_id or str(uuid4())
        agent.session_id = session_id
    return session_id

def {name}(agent, history):
    sid = initialize_session(agent)
    return [{{"role": "system", "content": "Session " + sid}}, *history]
'''
    assert codes(source.format(name="build_messages")) == []
    assert codes(source.replace("initialize_session", "session_for").format(name="build_messages")) == ["PC201"]


def test_a_retrieval_of_the_projects_own_code_is_the_per_turn_source(tmp_path):
    # The lookup lives in the project (its `query` parameter is not content); what it returns is.
    from promptlint.lint.engine import lint_paths

    (tmp_path / "memstore").mkdir()
    (tmp_path / "memstore" / "__init__.py").write_text(
        "from memstore.client import MemoryClient\n", encoding="utf-8")
    (tmp_path / "memstore" / "client.py").write_text('''class MemoryClient:
    def search(self, query, limit=5):
        return self.http.post("/search", json={"query": query, "limit": limit}).json()

def search_memories(query, limit=5):
    return MemoryClient().search(query, limit)
''', encoding="utf-8")
    (tmp_path / "app.py").write_text('''from memstore import MemoryClient
from memstore.client import search_memories

client = MemoryClient()

def build_messages(question, history):
    notes = client.search(question)
    return [{"role": "system", "content": f"Notes: {notes}"}, *history]

def build_prompt(history):
    notes = search_memories("preferences")
    return [{"role": "system", "content": f"Notes: {notes}"}, *history]
''', encoding="utf-8")
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False)
    found = sorted((d.code, d.line) for d in report.diagnostics)
    assert found == [("PC401", 8), ("PC401", 12)]


# ------------------------------------------------------ time that decides, not text
@pytest.mark.parametrize("test", [
    "time.monotonic() - self.fetched_at >= TTL",
    "self.expires_at < time.time()",
])
def test_a_clock_in_an_expiry_check_only_decides_freshness(test):
    assert codes(f'''import time

class Tools:
    def tool_list(self, history):
        tools = self.cached
        if {test}:
            tools = self.fetch_tools()
        return {{"model": "m", "messages": history, "tools": tools}}
''') == []


def test_a_clock_in_a_database_cutoff_selects_rows():
    assert codes('''from datetime import datetime, timedelta

def build_messages(user, history):
    cutoff = datetime.now() - timedelta(days=7)
    notes = Note.objects.filter(user=user, created_at__gte=cutoff)
    return [{"role": "system", "content": "Recent: " + ", ".join(n.text for n in notes)}, *history]
''') == []


def test_a_clock_field_compared_with_constants_still_chooses_the_text():
    assert codes('''from datetime import datetime

def build_messages(history):
    greeting = "Good morning" if datetime.now().hour < 12 else "Hello"
    if datetime.now().weekday() in (5, 6):
        greeting += ", happy weekend"
    return [{"role": "system", "content": greeting}, *history]
''') == ["PC101"]  # both clocks choose the text: one finding at the one sink line


def test_what_a_caller_passes_to_a_set_up_path_lands_once():
    source = '''from datetime import datetime

def {name}(agent, edited_at):
    system = agent.persona + "\\nMemory last edited: " + edited_at.isoformat()
    return [{{"role": "system", "content": system}}]

def create_agent_record(db, agent):
    db.save(agent.id, {name}(agent, datetime.now()))
'''
    assert codes(source.format(name="initialize_message_sequence")) == []
    assert codes(source.format(name="compile_messages")) == ["PC101"]


def test_a_working_directory_that_only_locates_a_config_file_is_not_its_content():
    source = '''import json
from pathlib import Path

def load_config(path):
    with open(path) as f:
        return json.load(f)

def build_request(history):
    {body}
    return {{"model": "m", "max_tokens": 64, "messages": history, "system": system}}
'''
    host = Settings(rule_files=(str(rules_dir() / "optional" / "host.yaml"),))  # the working directory is opt-in
    assert codes(source.format(body='system = load_config(Path.cwd() / "agent.json")["persona"]'), host) == []
    assert codes(source.format(body='system = "Workspace: " + str(Path.cwd())'), host) == ["PC301"]


# -------------------------------------------------------- sets that only filter
def test_a_set_passed_as_an_exclusion_filter_orders_nothing():
    source = '''def build_request(registry, store, history):
    disabled = {{row[0] for row in store.rows("disabled_tools")}}
    guide = registry.describe_tools({kw}=disabled)
    return {{"model": "m", "max_tokens": 64, "messages": history, "system": "Tools: " + guide}}
'''
    assert codes(source.format(kw="excluded_names"), ORDERING) == []
    assert codes(source.format(kw="names"), ORDERING) == ["PC501"]


# ------------------------------------------------ a turn object is not its text
TURN_OBJECT = '''class Conversation:
    def compose(self, user_input{annotation}):
        prompt = self.template.render({{"device": {value}, "home": self.home_name}})
        return {{"role": "system", "content": prompt}}
'''


@pytest.mark.parametrize("annotation,value", [
    (": ConversationInput", "user_input"),
    (": ConversationInput", "user_input.device_id"),
    (': "conversation.ConversationInput | None"', "user_input"),
])
def test_a_per_turn_object_passed_whole_is_not_this_turns_text(annotation, value):
    assert codes(TURN_OBJECT.format(annotation=annotation, value=value)) == []


@pytest.mark.parametrize("annotation,value", [
    (": ConversationInput", "user_input.text"),
    ("", "user_input"),
    (": str", "user_input"),
    (": Optional[str]", "user_input"),
])
def test_the_turns_text_is_still_per_turn_content(annotation, value):
    assert codes(TURN_OBJECT.format(annotation=annotation, value=value)) == ["PC401"]


def test_a_clock_test_chooses_texts_not_the_data_assigned_under_it():
    # The clock decides whether the branch runs; the queued text assigned there is not made of
    # the clock (before: every value assigned under a clock test carried the clock).
    assert codes('''from datetime import datetime

def next_system_prompt(queue):
    system = "You are a companion."
    if datetime.now().hour < 12:
        note = queue.get_nowait()
        system = system + note
    return [{"role": "system", "content": system}]
''') == []


def test_a_clock_test_still_marks_the_text_it_chooses_beside_data_assignments():
    assert codes('''from datetime import datetime

def next_system_prompt(queue):
    system = "You are a companion."
    if datetime.now().hour < 12:
        note = queue.get_nowait()
        system += " Good morning."
    return [{"role": "system", "content": system}]
''') == ["PC101"]


@pytest.mark.parametrize(("test", "reported"), [
    ('not result or not result.get("answer")', False),  # whether it has an answer, not when it came
    ("not result", False),
    ('result.get("seconds") > 2', True),  # the clock itself decides
])
def test_a_record_asked_whether_it_is_empty_is_not_chosen_by_what_it_holds(test, reported):
    # (blind batch 2026-11-27aa) A retrieval helper returns its answer beside the time it took.
    assert codes(f'''import time

def answer(retriever, question):
    start = time.time()
    result = {{"answer": retriever.search(question), "seconds": round(time.time() - start, 2)}}
    if {test}:
        context = "The knowledge base is unavailable."
    else:
        context = "Use the documentation."
    return [{{"role": "system", "content": context}}, {{"role": "user", "content": question}}]
''') == (["PC101"] if reported else [])


# ------------------------------------------------------- a conversation is opened once
@pytest.mark.parametrize("name", ["create_conversation", "start_session", "new_chat_thread", "_open_session", "new_chat",
                                  "start_chat", "reset", "reset_conversation", "connect_to_server", "connect"])
def test_a_system_message_built_when_a_conversation_opens_is_frozen(name):
    # Compiled when the conversation is created, stored with it, replayed by each of its turns.
    assert codes(SEQUENCE.format(name=name)) == []


@pytest.mark.parametrize("name", ["create_message", "session_reply", "create_completion", "create_chat_completion",
                                  "reset_counter", "connection_status"])
def test_other_create_verbs_still_run_per_request(name):
    assert codes(SEQUENCE.format(name=name)) == ["PC101"]


# --------------------------------------------------------------- memory read per turn
@pytest.mark.parametrize("read", ["self.memory.search(query)", "self.mem.run(messages=[query])",
                                  "self.long_term_memory.search(query)",
                                  "self.memories[query.guild].get_context_string()",
                                  "memory_manager.get_context()[1]", "self.user_memory_service.get_context()",
                                  "self.zep_client.thread.get_user_context(thread_id=query.thread).context"])
def test_what_an_agents_memory_returns_is_per_turn_content(read):
    source = f'''class Agent:
    def reply(self, query):
        notes = {read}
        return [{{"role": "system", "content": "Known facts:\\n" + str(notes)}}]
'''
    assert codes(source) == ["PC401"]


@pytest.mark.parametrize("call", ["await self.llm_api.async_call_tool(tool_input)", "await session.call_tool('get_home_state', {})"])
def test_a_tools_result_the_program_fetches_itself_is_per_turn_content(call):
    # The program calls a tool before the request and pastes its result into the system prompt.
    source = f'''class Agent:
    async def reply(self, session, tool_input, history):
        system = "You control the house."
        state = {call}
        system += "\\nCurrent state:\\n" + str(state)
        return {{"system": system, "messages": history, "model": "claude-sonnet-4-5"}}
'''
    assert codes(source) == ["PC401"]


@pytest.mark.parametrize("name", ["vector_search", "hybrid_search", "web_search"])
def test_the_projects_retrieval_named_by_its_kind_is_per_turn_content(name):
    source = f'''def {name}(db, query, limit=5):
    return db.execute("SELECT text FROM chunks ORDER BY embedding <-> %s LIMIT %s", (query, limit)).fetchall()


def build(db, query, history):
    chunks = {name}(db, query)
    system = "Answer from these notes:\\n" + "\\n".join(c[0] for c in chunks)
    return [{{"role": "system", "content": system}}, *history]
'''
    assert codes(source) == ["PC401"]
    assert codes(source.replace(f"{name}(db, query)", "[]")) == []


def test_a_memory_read_keyed_by_a_fresh_id_is_per_turn_content_not_an_identity():
    source = '''import uuid

class Agent:
    def reply(self, query, conversation_id=None):
        conversation_id = conversation_id or uuid.uuid4()
        notes = self.memory.search(query, conversation_id=conversation_id)
        return [{"role": "system", "content": "Known facts:\\n" + str(notes)}]
'''
    assert codes(source) == ["PC401"]


@pytest.mark.parametrize(("annotation", "expected"), [("discord.Message", ["PC401"]), ("Message", ["PC401"]),
                                                      ("discord.Member", [])])
def test_the_text_of_a_chat_platforms_incoming_message_is_this_turns(annotation, expected):
    source = f'''import discord
from aiogram.types import Message

class Bot:
    async def route(self, message: {annotation}):
        if message.content.startswith("!claude"):
            return "The user asked for Claude by name."
        return "Picked by default."

    async def on_message(self, message: {annotation}):
        reason = await self.route(message)
        system = f"You are a helpful bot. Why you were chosen: {{reason}}"
        history = [{{"role": "user", "content": m}} for m in self.history]
        return [{{"role": "system", "content": system}}, *history]
'''
    assert codes(source) == expected


def test_writing_to_memory_or_reading_an_item_is_not_a_memory_read():
    source = '''class Agent:
    def reply(self, query, items):
        saved = self.memory.add(query)
        saved += self.memory_manager.update_memory(query)
        for mem in items:
            saved += mem.get("content")
        return [{"role": "system", "content": f"Saved {saved}"}]
'''
    assert codes(source) == []


# --------------------------------------------------------------- the newest message
@pytest.mark.parametrize("read", ['messages[-1].content', 'state["messages"][-1]["content"]',
                                  'self.chat_history[-1].text'])
def test_the_newest_messages_text_is_per_turn_content(read):
    source = f'''def build(messages, state):
    latest = {read}
    return [{{"role": "system", "content": "Use this context: " + str(latest)}}]
'''
    assert codes(source) == ["PC401"]


def test_the_first_message_is_not_the_newest():
    source = '''def build(messages):
    return [{"role": "system", "content": messages[0].content}]
'''
    assert codes(source) == []


# ------------------------------------------------------------ template placeholders
def test_a_placeholder_named_like_a_clock_is_not_a_clock():
    # `{{ datetime }}` is filled by the code that renders it; that code is followed instead.
    source = '''SYSTEM = "Now: {{ datetime }}. Seen at {{ timestamp }}."

def render(template, stamp):
    return [{"role": "system", "content": SYSTEM.replace("{{ datetime }}", stamp)}]
'''
    assert codes(source) == []


@pytest.mark.parametrize("expr", ["now()", "now().strftime('%H:%M')", "datetime.now()", "examples | random"])
def test_a_clock_the_template_engine_evaluates_is_a_source(expr):
    source = f'''SYSTEM = "Context: {{{{ {expr} }}}}"

def build():
    return [{{"role": "system", "content": SYSTEM}}]
'''
    assert codes(source) in (["PC101"], ["PC201"])


# ---------------------------------------------- pydantic-ai: when a prompt function runs
PYDANTIC = '''from datetime import datetime
from pydantic_ai import Agent

agent = Agent("openai:gpt-5")

@agent.{decorator}
def stamp() -> str:
    return f"Now: {{datetime.now()}}"
'''


@pytest.mark.parametrize("decorator,expected", [
    ("instructions", ["PC101"]),                      # every run
    ("system_prompt(dynamic=True)", ["PC101"]),       # re-evaluated every run
    ("system_prompt", []),                            # only when a conversation starts
])
def test_pydantic_ai_prompt_functions_run_when_the_library_says(decorator, expected):
    assert codes(PYDANTIC.format(decorator=decorator)) == expected


# ---------------------------------------------------- memory files named by a constant
def test_a_memory_file_named_by_a_module_constant_is_read_per_turn(tmp_path):
    (tmp_path / "ws.py").write_text('''import os

MEMORY_FILENAME = "MEMORY.md"


def load_context_files(workspace_dir):
    out = []
    for name in [MEMORY_FILENAME]:
        with open(os.path.join(workspace_dir, name), encoding="utf-8") as f:
            out.append(f.read())
    return out
''')
    (tmp_path / "builder.py").write_text('''from pathlib import Path
from ws import MEMORY_FILENAME, load_context_files


class Agent:
    def __init__(self, root):
        self.snapshot = Path(root, MEMORY_FILENAME).read_text()  # read once, when the agent is made

    def build_system_prompt(self, root):
        return "You are terse.\\n" + "\\n".join(load_context_files(root))

    def build_system_prompt_from_snapshot(self):
        return "You are terse.\\n" + self.snapshot
''')
    found = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1).diagnostics
    assert [(Path(d.path).name, d.line, d.code) for d in found] == [("builder.py", 10, "PC401")]


# ------------------------------------------------------------ lifetimes the call graph shows
FACTORY = '''from datetime import datetime


def make_agent(model):
    system = {{"role": "system", "content": f"Started at {{datetime.now():%H:%M}}."}}
    return Agent(model, messages=[system])


{caller}
'''


@pytest.mark.parametrize("caller, expected", [
    # Built once in main(), used for the whole run: the date is fixed for the agent's life.
    ("def main():\n    agent = make_agent('m')\n    while True:\n        agent.step(input())\n\n\n"
     "if __name__ == '__main__':\n    main()", []),
    # Built once by a set-up function that main() calls.
    ("def build_team():\n    return [make_agent('m')]\n\n\ndef main():\n    team = build_team()\n    return team", []),
    # Built per request: every caller is a request handler.
    ("def handle(request):\n    return make_agent('m').step(request.text)", ["PC101"]),
    # Built in a loop, even in main().
    ("def main():\n    for task in range(3):\n        make_agent('m').step(str(task))", ["PC101"]),
    # Handed to a framework as a factory: it calls it when it wants.
    ("def main(runner):\n    runner.register(make_agent)", ["PC101"]),
    # An entry point that takes a request is not an entry point of a process.
    ("def main(question):\n    return make_agent('m').step(question)", ["PC101"]),
    # Nobody calls it: its lifetime is unknown.
    ("", ["PC101"]),
    # A call inside an f-string is a call: here per request.
    ("def handle(request):\n    return f\"{make_agent('m')}\"", ["PC101"]),
    # The name in a log message is not a reference.
    ("def main():\n    print('calling make_agent now')\n    agent = make_agent('m')\n    return agent", []),
])
def test_a_function_every_caller_runs_once_computes_its_values_once(caller, expected):
    assert codes(FACTORY.format(caller=caller)) == expected


def test_a_routed_function_runs_per_request_whoever_calls_it():
    source = FACTORY.format(caller="@app.get('/chat')\ndef chat():\n    return make_agent('m')\n\n\n"
                                   "def main():\n    chat()")
    assert codes(source) == ["PC101"]


def test_a_one_shot_request_keeps_its_finding_but_a_value_reused_by_many_requests_does_not():
    one_shot = '''from datetime import datetime
import anthropic


def banner():
    return f"Started {datetime.now()}"


def main():
    anthropic.Anthropic().messages.create(model="m", max_tokens=9, system=banner(), messages=[])


main()
'''
    assert codes(one_shot) == ["PC101"]
    reused = one_shot.replace(
        '    anthropic.Anthropic().messages.create(model="m", max_tokens=9, system=banner(), messages=[])',
        '    system = banner()\n    while True:\n'
        '        anthropic.Anthropic().messages.create(model="m", max_tokens=9, system=system, messages=[])')
    assert codes(reused) == []


def test_a_caller_in_another_module_counts(tmp_path):
    (tmp_path / "agents.py").write_text(FACTORY.format(caller=""), encoding="utf-8")
    (tmp_path / "app.py").write_text("from agents import make_agent\n\n\ndef on_message(text):\n"
                                     "    return make_agent('m').step(text)\n", encoding="utf-8")
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert [d.code for d in report.diagnostics] == ["PC101"]
    (tmp_path / "app.py").write_text("from agents import make_agent\n\n\ndef main():\n"
                                     "    agent = make_agent('m')\n    return agent\n", encoding="utf-8")
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert report.diagnostics == []


# ------------------------------------------------- a branch that runs on the first call only
FIRST_CALL = '''import datetime
from openai import OpenAI


class Planner:
    def __init__(self, kb):
        self.client = OpenAI()
        self.kb = kb
        self.turn_count = 0
        self.called = False
        self.messages = []
        self.system = ""

    def plan(self, task, observation):
        if %s:
            found = self.kb.retrieve_knowledge(task)
            self.system = f"Plan the task. {task} Known: {found} Started {datetime.datetime.now()}"
            %s
        self.turn_count += 1
        msgs = [{"role": "system", "content": self.system}, {"role": "user", "content": observation}]
        return self.client.chat.completions.create(model="m", messages=msgs)
'''


@pytest.mark.parametrize("test, sets", [
    ("self.turn_count == 0", "pass"),  # a counter of its own at zero
    ("self.turn_count < 1", "pass"),
    ("not self.called", "self.called = True"),  # a flag the branch sets
    ("not self.system", "pass"),  # the value the branch sets
])
def test_what_a_first_call_branch_builds_is_set_once_for_the_object(test, sets):
    assert codes(FIRST_CALL % (test, sets)) == []


@pytest.mark.parametrize("test, sets", [
    ("self.turn_count == 1", "pass"),  # the second call, not the first
    ("not self.called", "pass"),  # a flag nobody sets here: the branch may run on every call
    ("observation", "pass"),
])
def test_a_branch_that_may_run_on_every_call_keeps_its_findings(test, sets):
    assert codes(FIRST_CALL % (test, sets)) == ["PC101", "PC401"]


def test_a_system_message_added_when_the_history_is_empty_is_set_once():
    source = '''import datetime
from openai import OpenAI


class Chat:
    def __init__(self):
        self.client = OpenAI()
        self.messages = []

    def send(self, text):
        if not self.messages:
            self.messages.append({"role": "system", "content": f"Started {datetime.datetime.now()}"})
        self.messages.append({"role": "user", "content": text})
        return self.client.chat.completions.create(model="m", messages=self.messages)
'''
    assert codes(source) == []
    assert codes(source.replace("if not self.messages:", "if text:")) == ["PC101"]


@pytest.mark.parametrize("test", ["self._chat is None", "self._chat is None and self._tools"])
def test_a_prompt_builder_called_only_in_a_get_or_create_branch_runs_once(tmp_path, test):
    (tmp_path / "prompt.py").write_text('''from datetime import datetime


def build_system_prompt(tools):
    return f"Today is {datetime.now():%B %d}. Tools: {tools}"
''')
    (tmp_path / "agent.py").write_text('''from prompt import build_system_prompt


class Agent:
    def __init__(self, chat_factory, tools):
        self._chat = None
        self._factory = chat_factory
        self._tools = tools

    async def run(self, task):
        if self._chat is None:
            system_prompt = build_system_prompt(self._tools)
            self._chat = self._factory(system_prompt=system_prompt)
        return await self._chat.send(task)
'''.replace("self._chat is None", test))
    found = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1).diagnostics
    assert found == []
    (tmp_path / "agent.py").write_text((tmp_path / "agent.py").read_text().replace(f"if {test}:", "if task:"))
    found = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1).diagnostics
    assert [d.code for d in found] == ["PC101"]


def test_a_temporary_file_name_is_a_source_only_with_the_host_opt_in():
    from promptlint.lint.engine import lint_source
    from tests.lint.opt_in import opt_in

    text = ("import tempfile\n\nimport anthropic\n\n\ndef turn(history):\n"
            "    scratch = tempfile.mkdtemp()\n"
            "    return anthropic.Anthropic().messages.create(model='m', max_tokens=9, "
            "system=f'Write files under {scratch}.', messages=history)\n")
    assert lint_source(text, "agent.py") == []
    assert [d.code for d in lint_source(text, "agent.py", opt_in("host"))] == ["PC201"]


NODE = '''from datetime import datetime


def build(agent):
    def {name}(state):
        system_prompt = agent.get_instructions()
        return {{"messages": [{{"role": "system", "content": system_prompt}}, *state["messages"]]}}
    return {name}


class WeatherAssistant:
    def get_instructions(self):
        return f"You are a weather bot. Today is {{datetime.now().date()}}."
'''


@pytest.mark.parametrize("name", ["setup", "prepare"])
def test_a_graph_node_runs_on_every_step_whatever_its_name(name):
    # A node named `setup` is called by the graph on each run; its name says nothing of its lifetime.
    assert codes(NODE.format(name=name)) == ["PC101"]


@pytest.mark.parametrize(("owner", "reported"), [("WeatherAssistant", True), ("ChangeRequest", False)])
def test_get_instructions_is_a_stable_layer_of_an_assistant_not_of_any_object(owner, reported):
    source = f'''from datetime import datetime


class {owner}:
    def get_instructions(self):
        return f"Be brief. Today is {{datetime.now().date()}}."
'''
    assert codes(source) == (["PC101"] if reported else [])


LAZY = '''from datetime import datetime


def build_messages(question):
    return [{{"role": "system", "content": f"Now: {{datetime.now()}}"}}, {{"role": "user", "content": question}}]


def chat(ai):
    messages = None
    while True:
        text = input()
{reset}        if messages is None:
            messages = build_messages(text)
        else:
            messages.append({{"role": "user", "content": text}})
        messages.append({{"role": "assistant", "content": ai.call(messages=messages)}})
'''


@pytest.mark.parametrize(("reset", "expected"), [("", []), ("        messages = None\n", ["PC101"])])
def test_a_conversation_built_when_a_local_is_unset_in_its_loop_is_built_once(reset, expected):
    # Kept across the loop's passes, the list is built on the first turn only; reset each pass, on every turn.
    assert codes(LAZY.format(reset=reset)) == expected


def test_any_librarys_datetime_class_read_for_now_is_the_clock():
    source = '''from zhDateTime import DateTime


def get_prompt():
    return [{"role": "system", "content": f"Now: {DateTime.now():%H:%M:%S}"}]
'''
    assert codes(source) == ["PC101"]


@pytest.mark.parametrize("budget", ["time.monotonic() + 5", "deadline - time.time()"])
def test_a_time_limit_on_a_call_is_not_what_it_returns(budget):
    # `asyncio.wait_for(task, timeout=...)`: how long the summary may take, not its text; and a
    # monotonic clock has no calendar meaning to put in a prompt.
    source = f'''import asyncio
import time


async def reply(describe, image, deadline):
    summary = await asyncio.wait_for(describe(image), timeout={budget})
    return [{{"role": "system", "content": f"The image shows: {{summary}}"}}]
'''
    assert codes(source) == []


@pytest.mark.parametrize(("read", "expected"), [("info['usage']", []), ("response.usage", ["PC401"])])
def test_a_plugins_usage_text_is_not_a_responses_token_usage(read, expected):
    source = f'''def tool_schema(info, response):
    return [{{"role": "system", "content": f"Plugin help: {{{read}}}"}}]
'''
    assert codes(source) == expected


STREAMLIT_APP = '''import datetime

import streamlit as st
from openai import OpenAI

client = OpenAI()


def get_context(query, table):
    return "\\n\\n".join(row["text"] for row in table.search(query))


def answer(messages, context):
    system = {"role": "system", "content": f"Session of {st.session_state.started}. Context:\\n{context}"}
    return client.chat.completions.create(model="m", messages=[system, *messages])


if "started" not in st.session_state:
    st.session_state.started = datetime.datetime.now().isoformat()  # once per session

if prompt := st.chat_input("Ask"):
    st.session_state.messages.append({"role": "user", "content": prompt})
    answer(st.session_state.messages, get_context(prompt, st.session_state.table))
'''


@pytest.mark.parametrize(("script", "expected"), [(STREAMLIT_APP, ["PC401"]),
                                                  (STREAMLIT_APP.replace("import streamlit as st", "import ui as st"), [])])
def test_a_streamlit_scripts_module_code_runs_on_every_interaction(script, expected):
    # Streamlit reruns the whole script per interaction: its module-level calls are per turn
    # (a value kept in the session state behind a "not in" test is still made once).
    assert codes(script) == expected


STREAMLIT_MAIN = STREAMLIT_APP.replace('''if prompt := st.chat_input("Ask"):
    st.session_state.messages.append({"role": "user", "content": prompt})
    answer(st.session_state.messages, get_context(prompt, st.session_state.table))
''', '''def main():
    if prompt := st.chat_input("Ask"):
        st.session_state.messages.append({"role": "user", "content": prompt})
        answer(st.session_state.messages, get_context(prompt, st.session_state.table))


if __name__ == "__main__":
    main()
''')


@pytest.mark.parametrize(("script", "expected"), [(STREAMLIT_MAIN, ["PC401"]),
                                                  (STREAMLIT_MAIN.replace("import streamlit as st", "import ui as st"), [])])
def test_a_streamlit_scripts_main_runs_on_every_interaction(script, expected):
    # `main()` of a Streamlit script is called on every rerun, not once per process.
    assert "def main" in script
    assert codes(script) == expected


# ------------------------------------------------ a class body computes its defaults once
CLASS_DEFAULT = '''import datetime
from openai import OpenAI
from pydantic import BaseModel, Field

client = OpenAI()
today = datetime.date.today()


class Config(BaseModel):
    %s


def reply(history):
    cfg = Config()
    messages = [{"role": "system", "content": cfg.system_prompt}, *history]
    return client.chat.completions.create(model="m", messages=messages)
'''


@pytest.mark.parametrize(("field", "reported"), [
    ('system_prompt: str = f"Today is {today}. You help."', False),
    ('system_prompt: str = Field(default=f"Today is {today}. You help.")', False),
    ('system_prompt: str = Field(default_factory=lambda: f"Now: {datetime.datetime.now()}")', True),
])
def test_a_class_body_default_is_made_once_unless_a_factory_makes_it_per_instance(field, reported):
    # (blind batch 2026-11-27x) A configuration class's prompt default formats a date taken at import.
    assert codes(CLASS_DEFAULT % field) == (["PC101"] if reported else [])


# ------------------------------------------------ a file the program rewrites is read per turn
EDITED_FILE = '''from pathlib import Path
import anthropic

NOTES = Path("notes.md")
TOOLS = [{"name": "write_file", "description": "Rewrite the file.", "input_schema": {"type": "object"}}]


class Editor:
    def __init__(self, filename):
        self.filename = filename
        self.client = anthropic.Anthropic()
        self.history = []

    def contents(self):
        with open(self.filename, "r", encoding="utf-8") as f:
            return f.read()

    def %s(self, content):
%s

    def ask(self, text):
        self.history.append({"role": "user", "content": text})
        system = f"You edit {self.filename}. It holds:\\n{self.contents()}\\nNotes: {NOTES.read_text()}"
        return self.client.messages.create(model="m", max_tokens=10, system=system, tools=TOOLS,
                                           messages=self.history)
'''


@pytest.mark.parametrize(("method", "write", "reported"), [
    ("write_file", '        with open(self.filename, "w", encoding="utf-8") as f:\n            f.write(content)', True),
    ("write_file", '        NOTES.write_text(content)', True),
    ("write_file", '        Path("other.md").write_text(content)', False),
    ("write_file", '        with open(self.filename, encoding="utf-8") as f:\n            return f.read() + content', False),
    # written when a session ends or a setting is saved: between conversations, not within one
    ("save_on_exit", '        NOTES.write_text(content)', False),
])
def test_a_file_a_tool_the_model_calls_rewrites_is_read_back_per_turn(method, write, reported):
    # (blind batch 2026-11-27ar) An agent's write_file tool rewrites the file whose contents the
    # next request's prompt shows; a file nothing here writes is fixed content.
    assert codes(EDITED_FILE % (method, write)) == (["PC401"] if reported else [])


def test_a_file_written_once_when_the_object_is_made_is_not_rewritten():
    source = (EDITED_FILE % ("write_file", "        pass")).replace(
        "self.filename = filename\n", "self.filename = filename\n        NOTES.write_text('')\n")
    assert codes(source) == []


# ---------------------------------------------- many sources do not crowd out the others
CROWDED = '''import time
import uuid

import anthropic

client = anthropic.Anthropic()


def stamps():
    return [%s]


def relay():
    return stamps()


def build(context):
    return "".join(str(t) for t in relay()) + str(context)


def ask(history):
    now = time.time()
    system = f"{build(uuid.uuid4())} Now: {now}"
    return client.messages.create(model="m", max_tokens=10, system=system, messages=history)
''' % ", ".join(["time.time()"] * 17)


def test_a_function_reading_many_sources_keeps_its_parameter_and_the_nearest_source():
    # (blind batch 2026-11-27as) A context builder reads many stamps a database layer handed on;
    # the parameter its caller fills (here a uuid) still reaches the prompt, and the clock read
    # beside the prompt is the finding's source, not one of the stamps from far away.
    found = {d.code: d for d in lint_source(CROWDED)}
    assert sorted(found) == ["PC101", "PC201"]
    assert found["PC101"].trace[0].line == CROWDED.splitlines().index("    now = time.time()") + 1


# ------------------------------------------------ a loader that caches by hand reads once per key
CACHED_LOADER = '''from pathlib import Path
import anthropic

client = anthropic.Anthropic()
_cache: dict[str, str] = {}


def load_memory(name):
%s    text = Path(f"{name}_memory.md").read_text()
    _cache[name] = text
    return text


def ask(history):
    system = "Be brief.\\n" + load_memory("user")
    return client.messages.create(model="m", max_tokens=10, system=system, messages=history)
'''


@pytest.mark.parametrize(("check", "reported"), [
    ("    if name in _cache:\n        return _cache[name]\n", False),
    ("", True),
])
def test_a_loader_that_caches_its_result_by_hand_reads_once_per_key(check, reported):
    # (blind batch 2026-11-27av) A memory file read on the first call and handed back from a
    # module-level dict afterwards is the same text for the whole process, as under @lru_cache.
    assert codes(CACHED_LOADER % check) == (["PC401"] if reported else [])


# ------------------------------------------------ what a server sends back to a GET is live
LIVE_STATES = '''import httpx
import requests
from openai import OpenAI

client = OpenAI()
URL = "http://homeassistant.local:8123/api/states"


def fetch_states():
%s


class Assistant:
    def __init__(self):
        self.areas = requests.get(URL + "/areas", timeout=5).json()

    def reply(self, history):
        system = f"Areas: {self.areas}. Devices now: {%s}"
        messages = [{"role": "system", "content": system}, *history]
        return client.chat.completions.create(model="m", messages=messages)
'''


@pytest.mark.parametrize("fetch", [
    "    return requests.get(URL, timeout=10).json()",
    "    with httpx.Client() as http:\n        return http.get(URL).json()",
])
def test_what_a_server_sends_back_to_a_get_on_each_turn_is_per_turn_when_opted_in(fetch):
    # (blind batch 2026-11-27av) A home's entity states fetched over HTTP for each command and
    # rendered into the system prompt; what the object fetched once in `__init__` is fixed. Opt-in
    # (`optional:live`): on the field corpus 4 of 15 such findings were true.
    assert codes(LIVE_STATES % (fetch, "fetch_states()"), LIVE) == ["PC401"]
    assert codes(LIVE_STATES % (fetch, "len(history)"), LIVE) == []
    assert codes(LIVE_STATES % (fetch, "fetch_states()")) == []
