"""Flow precision on real code shapes (issue 14): a finding is reported once, for a flow that
exists, and its trace starts at the source. Each case is a small example written for this suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from promptlint.lint.diagnostic import Settings
from promptlint.lint.engine import lint_paths, lint_source
from tests.lint.opt_in import ORDERING


def lint_tree(root: Path, files: dict[str, str], settings: Settings = Settings()):
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    report = lint_paths([str(root)], Settings(**{**settings.__dict__, "root": str(root)}), use_cache=False, jobs=1)
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


# ------------------------------------------------------------------ one finding per leak
TWO_CLOCKS = '''from datetime import datetime


def build(tz=None):
    now = datetime.now(tz) if tz else datetime.now()
    return [{"role": "system", "content": f"Now: {now}"}]
'''


def test_two_sources_of_one_value_are_one_finding_naming_both():
    [found] = lint_source(TWO_CLOCKS)
    assert (found.line, found.code) == (6, "PC101")
    assert [s.line for s in found.related] == [5]
    assert "also from" in found.message and "datetime.now(tz)" in found.message


def test_json_and_sarif_carry_step_kinds_and_the_related_sources(tmp_path):
    (tmp_path / "agent.py").write_text(TWO_CLOCKS)

    def run(fmt):
        done = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache", "--format", fmt, "."],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        return json.loads(done.stdout)

    [item] = run("json")
    assert [s["kind"] for s in item["trace"]] == ["source", "step", "sink"]
    assert item["trace"][0]["note"].startswith("wall-clock time")
    assert [(r["line"], r["note"]) for r in item["related"]] == [(5, "wall-clock time: `datetime.now(tz)`")]
    [result] = run("sarif")["runs"][0]["results"]
    flow = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [step["kinds"] for step in flow] == [["source"], ["step"], ["sink"]]
    [related] = result["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == 5


def test_every_trace_starts_at_a_source_on_the_field_shapes(tmp_path):
    # A flow through a helper module, a builder and the request: the first step names the
    # source, never an assignment or a call.
    _, found = lint_tree(tmp_path, {
        "clock.py": "from datetime import datetime\n\n\ndef stamp():\n    return datetime.now().isoformat()\n",
        "agent.py": '''from clock import stamp


def system_prompt():
    return "You are helpful. " + stamp()


def messages(question):
    return [{"role": "system", "content": system_prompt()}, {"role": "user", "content": question}]
''',
    })
    assert found
    for d in found:
        assert d.trace[0].note.startswith("wall-clock time"), d.trace
        assert not d.trace[0].note.startswith(("assigned", "via", "returned", "passed"))


# --------------------------------------------------------------- sets used only as filters
def test_a_set_given_as_a_filter_keyword_is_not_an_ordering_leak():
    assert lint_source('''def build(user, hidden):
    skip = set(hidden)
    profile = user.model_dump(exclude=skip)
    return [{"role": "system", "content": f"Profile: {profile}"}]
''', settings=ORDERING) == []


def test_a_set_given_as_a_plain_argument_still_flows():
    assert [d.code for d in lint_source('''def build(render, hidden):
    names = set(hidden)
    text = render(names)
    return [{"role": "system", "content": f"Tools: {text}"}]
''', settings=ORDERING)] == ["PC501"]


def test_a_method_of_a_module_level_instance_is_resolved_so_a_filter_set_stays_a_filter(tmp_path):
    # `registry = Registry()` in another module: `registry.tools(hidden=...)` is that class's
    # method, which only tests membership; it is not an unknown call passing its arguments through.
    found, _ = lint_tree(tmp_path, {
        "registry.py": '''class Registry:
    def __init__(self):
        self.factories = {"search": "Search the web.", "shell": "Run a command."}

    def tools(self, hidden=None):
        return [text for name, text in self.factories.items() if not hidden or name not in hidden]


registry = Registry()
''',
        "agent.py": '''from registry import registry


def system_prompt(rows):
    disabled = {row[0] for row in rows}
    return "Tools:\\n" + "\\n".join(registry.tools(hidden=disabled))
''',
    }, ORDERING)
    assert found == []


# ------------------------------------------------------------- prompts built only to be counted
COUNTED = '''from datetime import datetime


class Report:
    def __init__(self, model):
        self.model = model

    def header(self):
        return "You are helpful. Today is " + datetime.now().isoformat()

    def tokens(self):
        msgs = [dict(role="system", content=self.header())]
        msgs.append({"role": "system", "content": self.header()})
        return self.model.token_count(msgs)
'''


@pytest.mark.parametrize("counter", ["token_count", "get_tokens", "count_message_tokens", "calculate_token_count",
                                     "calculate_tool_size"])
def test_a_prompt_built_only_to_count_its_tokens_is_not_a_request(counter):
    assert lint_source(COUNTED.replace("token_count", counter)) == []


def test_the_same_prompt_sent_as_well_as_counted_is_reported():
    sent = COUNTED + '''
    def ask(self):
        msgs = [dict(role="system", content=self.header())]
        print(self.model.token_count(msgs))
        return self.model.chat(msgs)
'''
    assert [(d.line, d.code) for d in lint_source(sent)] == [(17, "PC101")]


# --------------------------------------------------------------- template variables never used
UNUSED_VARIABLE = '''from datetime import datetime

SYSTEM = "You are {name}, a helpful assistant.{extra}"


def build(question):
    text = SYSTEM.format(name="Ava", extra="", today=datetime.now().date())
    return [{"role": "system", "content": text}, {"role": "user", "content": question}]
'''


def test_a_volatile_template_variable_the_template_never_names_goes_nowhere():
    assert lint_source(UNUSED_VARIABLE) == []


def test_the_same_variable_named_in_the_template_is_reported_at_its_placeholder():
    found = lint_source(UNUSED_VARIABLE.replace("{extra}", " Today is {today}."))
    assert [(d.line, d.code) for d in found] == [(3, "PC101")]


# ------------------------------------------------- one field does not make a whole object volatile
def test_a_record_looked_up_by_a_fresh_id_is_not_made_of_the_id():
    source = '''import time
import uuid


def system_message(db, session_id=None):
    session_id = session_id or str(uuid.uuid4())
    session = db.get_session(session_id=session_id)
    record = Record(created_at=time.time(), title="notes")
    return {"role": "system", "content": f"Summary: {session.summary}\\n{record.title}"}


def leaky(session_id=None):
    session_id = session_id or str(uuid.uuid4())
    return {"role": "system", "content": f"Session {session_id}"}
'''
    assert [(d.line, d.code) for d in lint_source(source)] == [(14, "PC201")]


def test_a_key_given_to_a_template_is_still_rendered():
    assert [d.code for d in lint_source('''import uuid


def system_message(template, style):
    return {"role": "system", "content": template.format(style=style, session_id=uuid.uuid4())}
''')] == ["PC201"]


# ------------------------------------------------ only the system message of a list is the system layer
ADAPTER = '''import anthropic

client = anthropic.Anthropic()


def send(messages):
    system = None
    if messages and messages[0]["role"] == "system":
        system = messages[0]["content"]
        messages = messages[1:]
    return client.messages.create(model="m", max_tokens=100, system=system, messages=messages)
'''


def test_the_newest_user_message_of_a_list_is_not_the_system_message_an_adapter_extracts():
    assert lint_source(ADAPTER + '''

def answer(question):
    return send([{"role": "system", "content": "You are terse."}, {"role": "user", "content": question}])
''') == []


def test_a_volatile_system_message_of_that_list_is_reported_where_it_is_built():
    found = lint_source(ADAPTER + '''

def answer(question):
    import datetime
    today = datetime.date.today()
    return send([{"role": "system", "content": f"Today is {today}."}, {"role": "user", "content": question}])
''')
    assert [(d.line, d.code) for d in found] == [(17, "PC101")]


def test_a_time_given_to_a_constructor_as_content_still_flows():
    assert [d.code for d in lint_source('''from datetime import datetime


def system_prompt(compiler_cls):
    now = datetime.now().strftime("%H:%M")
    compiler = Compiler(current_time=now)
    return "Subagents:\\n" + compiler.summary()
''')] == ["PC101"]


def test_two_orderings_with_their_own_fixes_stay_two_findings():
    found = lint_source('''def build(a, b):
    names = set(a)
    tags = set(b)
    return [{"role": "system", "content": ", ".join(names) + " / " + ", ".join(tags)}]
''', settings=ORDERING)
    assert [d.code for d in found] == ["PC501", "PC501"]
    assert len({d.fix for d in found}) == 2 and all(d.fix is not None for d in found)


def test_a_name_assigned_under_a_branch_in_a_loop_still_joins():
    source = '''import time

def build(parts):
    text = "You are terse."
    for p in parts:
        if p:
            text = text + f" {time.time()}"
    return [{"role": "system", "content": text}]
'''
    assert [d.code for d in lint_source(source)] == ["PC101"]


def test_a_records_fields_reach_a_prompt_built_from_a_list_of_records():
    source = '''from dataclasses import dataclass
from pathlib import Path


@dataclass
class ContextFile:
    path: str
    content: str


def load(root):
    files = []
    files.append(ContextFile(path="MEMORY.md", content=Path(root, "MEMORY.md").read_text()))
    return files


def build_system_prompt(root):
    lines = []
    for f in load(root):
        lines.append(f"## {f.path}\\n{f.content}")
    return "\\n".join(lines)


def only_the_path(root):
    record = ContextFile(path="notes", content=Path(root, "MEMORY.md").read_text())
    return [{"role": "system", "content": record.path}]
'''
    assert [(d.code, d.line) for d in lint_source(source)] == [("PC401", 21)]


def test_a_content_block_record_renders_its_text_not_its_metadata():
    source = '''import time
import uuid
from pydantic import BaseModel


class ContentItem(BaseModel):
    text: str = ""
    id: str = ""

    def __init__(self, text=None, id=None):
        super().__init__(text=text, id=id)


def build(template):
    stamped = ContentItem(text=f"Now: {time.time()}")
    tagged = ContentItem(text="You are terse.", id=str(uuid.uuid4()))
    return [{"role": "system", "content": [stamped]}, {"role": "system", "content": [tagged]}]
'''
    assert [(d.code, d.line) for d in lint_source(source)] == [("PC101", 17)]


def test_a_models_reply_does_not_carry_the_request_it_answered():
    source = '''import time
import anthropic

client = anthropic.Anthropic()


def turn(history, question):
    reply = client.messages.create(model="m", max_tokens=64, system="Be brief.",
                                   messages=[*history, {"role": "user", "content": f"{question} at {time.time()}"}])
    summary = reply.content[0].text
    return client.messages.create(model="m", max_tokens=64, system="Summary so far: " + summary,
                                  messages=[{"role": "user", "content": "go on"}])
'''
    # Not the clock of the request it answered; and outside an agent loop the reply is a
    # one-off request's answer, not the previous turn's output (analysis/calls.py `_reply`).
    assert [d.code for d in lint_source(source)] == []


@pytest.mark.parametrize(("call", "codes"), [
    ("llm.invoke([SystemMessage(content=\"Be brief.\"), HumanMessage(content=asked)])", []),  # a chat model's reply
    ('chain.invoke({"question": asked})', ["PC101"]),  # a chain's output: unknown, its inputs pass through
])
def test_a_runnable_handed_role_messages_is_a_chat_model_whose_reply_is_new_text(call, codes):
    source = f'''import time

from langchain_core.messages import HumanMessage, SystemMessage


def turn(llm, chain, question):
    asked = f"{{question}} (asked at {{time.time()}})"
    reply = {call}
    return [{{"role": "system", "content": "Summary so far: " + reply.content}}, {{"role": "user", "content": "go on"}}]
'''
    assert [d.code for d in lint_source(source)] == codes


def test_a_translation_catalog_is_fixed_text_not_retrieval():
    source = '''class I18N:
    def retrieve(self, kind, key):
        return self._prompts[kind][key]

    def slice(self, key):
        return {"role": "system", "content": self.retrieve("slices", key)}


def build(i18n, memory, query):
    return [{"role": "system", "content": i18n.retrieve("memory", "extract") + memory.search(query)}]
'''
    found = lint_source(source)
    assert [(d.code, d.line) for d in found] == [("PC401", 10)]
    assert "memory.search(query)" in found[0].message



# ------------------------------------------------ one source, one sink, several calls between
def test_one_source_passed_to_one_helper_by_several_calls_is_one_leak(tmp_path):
    found, diagnostics = lint_tree(tmp_path, {"agent.py": '''import datetime

import anthropic

client = anthropic.Anthropic()


def ask(system, text):
    return client.messages.create(model="m", max_tokens=64, system=system,
                                  messages=[{"role": "user", "content": text}])


def handle(text):
    system = f"Now: {datetime.datetime.now()}"
    if text.startswith("/"):
        return ask(system, text[1:])
    draft = ask(system, text)
    return ask(system, f"Improve: {draft}")
'''})
    assert found == [("agent.py", 16, "PC101")]
    assert [s.line for s in diagnostics[0].trace] == [14, 14, 16, 9]


# ------------------------------------------------------- the head of a list is not what was appended
def test_the_user_message_appended_to_a_history_is_not_its_leading_system_message(tmp_path):
    found, _ = lint_tree(tmp_path, {"chat.py": '''import anthropic

client = anthropic.Anthropic()


def call_anthropic(message_dicts, system_message):
    return client.messages.create(model="m", max_tokens=64, system=system_message, messages=message_dicts)


class Chat:
    def chat(self, user_prompt):
        self.messages.append({"role": "user", "content": user_prompt})
        turns = [m for m in self.messages if m["role"] != "system"]
        head = call_anthropic(turns, self.messages[0]["content"])
        return call_anthropic(turns, self.messages[-1]["content"])
'''})
    # The newest message (`[-1]`) is the user's words; the head (`[0]`) is not.
    assert found == [("chat.py", 15, "PC401")]


# ------------------------------------------------------- a file located by a clock is not the clock
def test_a_file_found_through_a_timestamped_path_is_its_content_not_the_clock(tmp_path):
    _, diagnostics = lint_tree(tmp_path, {"repo.py": '''import hashlib
import time

import anthropic

client = anthropic.Anthropic()


def repo_dir(name):
    digest = hashlib.sha256(f"{name}{time.time()}".encode()).hexdigest()
    return f"repos/{digest}"


def read_readme(name):
    with open(f"{repo_dir(name)}/README.md") as f:
        return f.read()


def review(name, diff):
    system = f"Project readme:\\n{read_readme(name)}\\nStamp {time.time()}"
    return client.messages.create(model="m", max_tokens=64, system=system,
                                  messages=[{"role": "user", "content": diff}])
'''})
    # Only the stamp written into the prompt itself is reported.
    assert [(d.code, d.trace[0].line, len(d.related)) for d in diagnostics] == [("PC101", 20, 0)]


# --------------------------------------------------- a terminal UI's own notice is shown, not sent
def test_a_terminal_uis_own_system_notice_is_not_a_system_message(tmp_path):
    found, _ = lint_tree(tmp_path, {
        "view_state.py": '''from dataclasses import dataclass


@dataclass
class SystemMessage:
    text: str
    tone: str = "info"
''',
        "app.py": '''import uuid

from langchain_core.messages import SystemMessage as LLMSystemMessage
from textual.app import App

from view_state import SystemMessage


class ChatApp(App):
    def on_new_thread(self):
        self.show(SystemMessage(f"New thread {uuid.uuid4()}"))

    def ask(self, llm, question):
        return llm.invoke([LLMSystemMessage(content=f"Session {uuid.uuid4()}"), question])
'''})
    assert found == [("app.py", 14, "PC201")]


# ----------------------------------------------------------------- a lookup key selects, it is not the value
def test_a_value_looked_up_by_a_key_made_from_a_set_is_not_in_the_sets_order(tmp_path):
    found, _ = lint_tree(tmp_path, {"skills.py": '''import anthropic

client = anthropic.Anthropic()
_SECTIONS = {}


def skills_section(names):
    key = tuple(names)
    cached = _SECTIONS.get(key)
    if cached is None:
        cached = _SECTIONS[key] = "Skills: search, write"
    return cached


def run(skills, text):
    enabled = {s.name for s in skills}
    return client.messages.create(model="m", max_tokens=64, system=skills_section(enabled),
                                  messages=[{"role": "user", "content": text}])
'''}, ORDERING)
    assert found == []


# ------------------------------------------- a graph's state update is appended to the conversation
def test_a_system_message_returned_as_a_state_update_is_appended_not_a_prefix(tmp_path):
    found, _ = lint_tree(tmp_path, {"middleware.py": '''from datetime import datetime

from langchain_core.messages import SystemMessage


def date_reminder(state):
    return {"messages": [SystemMessage(content=f"Today is {datetime.now():%Y-%m-%d}.")]}


def request_body(history):
    return {"model": "m", "messages": [{"role": "system", "content": f"Now {datetime.now()}"}, *history]}


def call_model(state, llm):
    return {"messages": [llm.invoke([{"role": "system", "content": f"Now {datetime.now()}"}] + state["messages"])]}
'''})
    # The reminder is appended to the conversation; a request made inside the update is a request.
    assert found == [("middleware.py", 11, "PC101"), ("middleware.py", 15, "PC101")]


# ------------------------------------------------- an attribute set once when unset lives with its object
def test_an_id_created_when_the_attribute_is_unset_is_once_per_object(tmp_path):
    found, _ = lint_tree(tmp_path, {"agent.py": '''import uuid

import anthropic

client = anthropic.Anthropic()


class Agent:
    def __init__(self):
        self.agent_id_ = None

    @property
    def agent_id(self):
        if self.agent_id_ is None:
            self.agent_id_ = str(uuid.uuid4())
        return self.agent_id_

    def ask(self, text):
        return client.messages.create(model="m", max_tokens=64, system=f"You are agent {self.agent_id}",
                                      messages=[{"role": "user", "content": text}])

    def ask_again(self, text, request_id=None):
        if request_id is None:
            request_id = str(uuid.uuid4())  # a local: set again on every call
        return client.messages.create(model="m", max_tokens=64, system=f"Request {request_id}",
                                      messages=[{"role": "user", "content": text}])
'''})
    assert found == [("agent.py", 25, "PC201")]


# ---------------------------------------- one path recognised at two sinks (message and request)
def test_a_system_message_recognised_by_its_shape_and_by_the_request_that_sends_it_is_one_leak(tmp_path):
    found, _ = lint_tree(tmp_path, {"rephrase.py": '''from datetime import datetime

import anthropic


class Retriever:
    def rephrase(self, question):
        prompt = f"Rephrase the question. Now: {datetime.now()}"
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": question}]
        return self.llm.gen(model=self.model_id, messages=messages)
'''})
    assert len(found) == 1 and found[0][2] == "PC101"


def test_a_system_message_a_builder_returns_and_its_caller_sends_is_one_leak(tmp_path):
    # The request's flow goes on from the builder through its call: reported at the message.
    found, _ = lint_tree(tmp_path, {"client.py": '''from datetime import datetime

from openai import OpenAI


class Client:
    def _messages(self, question):
        system = f"Now: {datetime.now():%H:%M:%S}"
        return [{"role": "system", "content": system}, {"role": "user", "content": question}]

    def ask(self, question):
        messages = self._messages(question)
        return OpenAI().chat.completions.create(model="m", messages=messages)
'''})
    assert found == [("client.py", 9, "PC101")]


# ------------------------------------------------------------ fields of a record read by name
TOOL_RECORD = '''import time

from planner.models import ToolResult


def run_tool(tool, args):
    start = time.time()
    value = tool(**args)
    if %s:
        return ToolResult(%s, duration=time.time() - start)
    return ToolResult(%s, duration=time.time() - start)


def step(client, tool, args, variables):
    outcome = run_tool(tool, args)
    variables["last"] = outcome.%s
    system = "Variables:\\n" + "\\n".join(f"{k} = {v}" for k, v in sorted(variables.items()))
    return client.chat.completions.create(model="m", messages=[{"role": "system", "content": system},
                                                                {"role": "user", "content": "Next step."}])
'''


@pytest.mark.parametrize("test, first, last", [
    ("value is None", 'error="no result"', "result=value"),  # the record read by name is built last
    ("value is not None", "result=value", 'error="no result"'),  # on one path of two: fields joined
])
def test_a_field_of_a_library_record_is_what_was_given_for_it(test, first, last):
    # A timing kept beside a tool's result does not reach the prompt that shows the result.
    assert lint_source(TOOL_RECORD % (test, first, last, "result")) == []
    assert [d.code for d in lint_source(TOOL_RECORD % (test, first, last, "duration"))] == ["PC101"]


def test_a_breakpoint_a_loop_writes_is_one_site_however_often_the_loop_is_read():
    source = '''import anthropic
from anthropic.types import MessageParam, TextBlockParam


def serialize(history):
    out = []
    for i, m in enumerate(history):
        last = i == len(history) - 1
        block = TextBlockParam(type="text", text=m.text, cache_control={"type": "ephemeral"} if last else None)
        out.append(MessageParam(role=m.role, content=[block]))
    return out


def ask(history):
    return anthropic.Anthropic().messages.create(model="m", max_tokens=10, messages=serialize(history)%s)
'''
    assert [d.code for d in lint_source(source % "")] == []
    # Five places that each write a breakpoint are still five.
    many = ", system=[" + ", ".join('{"type": "text", "text": "%d", "cache_control": {"type": "ephemeral"}}' % i
                                    for i in range(5)) + "]"
    assert [d.code for d in lint_source(source % many)] == ["PC606"]


def test_a_placeholder_in_a_template_joined_from_pieces_is_reported_at_its_own_line():
    source = '''from datetime import datetime

from langchain_core.prompts import ChatPromptTemplate

prompt = ChatPromptTemplate.from_messages([
    (
        "system",
        "You are a helpful assistant.\\\\n"
        "Be brief.\\\\n\\\\n"
        "Current time: {now}\\\\n",
    ),
    ("placeholder", "{messages}"),
])


def reply(llm, messages):
    return (prompt | llm).invoke({"messages": messages, "now": datetime.now().isoformat()})
'''
    [found] = lint_source(source)
    assert (found.code, found.line) == ("PC101", 10)


# ------------------------------------------- a request whose only message is the system message
ONE_SHOT = '''import time
from openai import OpenAI

client = OpenAI()


def summarize(results, history):
    %s
    return client.chat.completions.create(model="m", messages=%s)
'''


@pytest.mark.parametrize("build, sent", [
    ('messages = [{"role": "system", "content": f"At {time.time()} summarize: {results}"}]', "messages"),
    ("pass", '[{"role": "system", "content": f"At {time.time()} summarize: {results}"}]'),
])
def test_a_request_whose_only_message_is_the_system_message_is_a_one_shot_task(build, sent):
    assert lint_source(ONE_SHOT % (build, sent)) == []


@pytest.mark.parametrize("build, sent", [
    ('messages = [{"role": "system", "content": f"At {time.time()}"}]\n    messages += history', "messages"),
    ("pass", '[{"role": "system", "content": f"At {time.time()}"}, *history]'),
    ('messages = [{"role": "system", "content": f"At {time.time()}"}]\n    return messages', "messages"),
])
def test_a_system_message_ahead_of_more_messages_is_still_a_stable_layer(build, sent):
    assert [d.code for d in lint_source(ONE_SHOT % (build, sent))] == ["PC101"]


CHAT_MODEL_ONE_SHOT = '''import time
from langchain_core.messages import SystemMessage


def grade(llm, answer, history):
    %s
    return llm.invoke(%s)
'''


@pytest.mark.parametrize(("build", "sent", "reported"), [
    ('system_message = SystemMessage(f"At {time.time()} grade: {answer}")', "[system_message]", False),
    ("pass", '[SystemMessage(f"At {time.time()} grade: {answer}")]', False),
    ('system_message = SystemMessage(f"At {time.time()} grade: {answer}")', "[system_message, *history]", True),
    ('system_message = SystemMessage(f"At {time.time()} grade: {answer}")\n    history.insert(0, system_message)',
     "history", True),
])
def test_a_chat_models_only_message_is_a_one_shot_task(build, sent, reported):
    # (blind batch 2026-11-26bb) A tutor's graph nodes each ask `llm.invoke([system_message])`.
    assert [d.code for d in lint_source(CHAT_MODEL_ONE_SHOT % (build, sent))] == (["PC101"] if reported else [])


TAIL = '''from openai import OpenAI

client = OpenAI()
SYSTEM_PROMPT = "You are a helpful assistant."


def reply(user_message, history, memory):
    context = memory.search(user_message)
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    if context:
        messages.append({"role": "system", "content": f"Previous context: {context}"})
    %s
    messages.append({"role": "user", "content": user_message})
    return client.chat.completions.create(model="m", messages=messages)
'''


@pytest.mark.parametrize(("between", "reported"), [
    ("pass", False),  # only the user's message follows the memories: no prefix a later request shares
    ("messages.extend(history)", True),  # the history follows them
    ('messages.append({"role": "system", "content": "Answer briefly."})', True),  # fixed text follows them
])
def test_a_system_message_appended_right_before_the_users_in_a_fresh_request_is_its_tail(between, reported):
    # (blind batch 2026-11-26ba) A WhatsApp bot: fixed prompt, then a memory system message, then
    # the user's text, sent afresh for every message with no history.
    assert [d.code for d in lint_source(TAIL % between)] == (["PC401"] if reported else [])


# ------------------------------------------------ a name bound afresh leaves its old fields behind
def test_a_field_stored_on_one_loop_element_is_not_the_next_elements():
    source = '''import datetime


def package_system_message(system_message):
    return f"Reminder: {system_message}"


def wrap(contents, role):
    for content in contents:
        if role == "user":
            content.text = f"[{datetime.datetime.now()}] {content.text}"
        elif role == "system":
            content.text = package_system_message(system_message=content.text)
    return contents
'''
    # (Before, the first element's stamped text was carried into the second pass's `content.text`.)
    assert lint_source(source) == []


def test_a_name_rebound_to_a_new_object_leaves_the_old_objects_fields_behind():
    source = '''import datetime
from openai import OpenAI


def send(note):
    note.text = f"Sent {datetime.datetime.now()}"
    note = Note()
    return OpenAI().chat.completions.create(model="m", messages=[{"role": "system", "content": note.text}, {"role": "user", "content": "hi"}])
'''
    assert lint_source(source) == []
    assert [d.code for d in lint_source(source.replace("    note = Note()\n", ""))] == ["PC101"]


DEFAULTED = '''import datetime
import anthropic

client = anthropic.Anthropic()


def time_vars(now=None):
    DEFAULT
    return {"time": now.strftime("%H:%M")}


def context_now():
    return datetime.datetime.now()


def reply(question):
    system = "Time: {time}".format(**time_vars(ARG))
    return client.messages.create(model="m", max_tokens=9, system=system,
                                  messages=[{"role": "user", "content": question}])
'''
DEFAULTS = ["now = now if now else datetime.datetime.now()", "now = now or datetime.datetime.now()",
            "now = datetime.datetime.now() if now is None else now",
            "if now is None:\n        now = datetime.datetime.now()"]


@pytest.mark.parametrize("default", DEFAULTS)
def test_a_callees_default_is_not_the_source_when_the_caller_passes_its_own_value(default):
    """`now = now or datetime.now()` in a helper: a caller that passes `context_now()` reaches
    the system prompt through its own clock; the helper's default never runs for it."""
    text = DEFAULTED.replace("DEFAULT", default).replace("ARG", "context_now()")
    found = lint_source(text, "bot.py")
    assert [d.code for d in found] == ["PC101"]
    clock_lines = {i for i, line in enumerate(text.splitlines(), 1) if "datetime.datetime.now()" in line}
    assert found[0].trace[0].line == max(clock_lines)  # context_now's clock, not the default's
    assert not found[0].related


@pytest.mark.parametrize("default", DEFAULTS)
@pytest.mark.parametrize("arg", ["", "None"])
def test_a_callees_default_is_the_source_when_the_caller_leaves_it_out(default, arg):
    text = DEFAULTED.replace("DEFAULT", default).replace("ARG", arg)
    found = lint_source(text, "bot.py")
    assert [d.code for d in found] == ["PC101"]
    assert found[0].trace[0].line == 8 + default.count("\n")


def test_a_default_passed_on_still_runs_for_a_caller_that_leaves_it_out():
    """`reply(question, now=None)` hands its `now` on: the inner default runs whenever `reply` is
    called without one, so the request in `reply` is reported from that default."""
    text = DEFAULTED.replace("DEFAULT", DEFAULTS[1]).replace('def reply(question):', 'def reply(question, now=None):').replace(
        "ARG", "now")
    found = lint_source(text, "bot.py")
    assert [(d.code, d.trace[0].line) for d in found] == [("PC101", 8)]


def test_a_clock_read_with_a_zone_is_its_own_source_not_the_zones():
    """`datetime.now(zone["tzinfo"])`, the zone looked up from another clock read: the trace
    starts at the clock that gives the time."""
    text = '''import datetime
import anthropic

client = anthropic.Anthropic()


def zone():
    here = datetime.datetime.now().astimezone()
    return {"tzinfo": here.tzinfo}


def reply(question):
    now = datetime.datetime.now(zone()["tzinfo"])
    return client.messages.create(model="m", max_tokens=9, system=f"Now: {now}",
                                  messages=[{"role": "user", "content": question}])
'''
    found = lint_source(text, "bot.py")
    assert [(d.code, d.trace[0].line, d.related) for d in found] == [("PC101", 13, ())]


def test_a_keyword_named_for_a_layer_at_a_project_function_that_sends_it_nowhere_stable():
    """`generate_image(prompt, system_prompt=...)` flattens its "system prompt" into an image
    prompt: the project function's body says the keyword is no stable layer. The same keyword at
    a function that puts it in a request's `system` still is one."""
    text = '''import datetime
import httpx


def generate_image(prompt, system_prompt=""):
    return httpx.post("https://img.example.invalid/v1/images", json={"prompt": f"{system_prompt} {prompt}"})


def ask_model(question, system_prompt=""):
    return httpx.post("https://api.example.invalid/v1/chat",
                      json={"model": "m", "system": system_prompt, "messages": [{"role": "user", "content": question}]})


def draw(request):
    now = datetime.datetime.now()
    generate_image(request, system_prompt=f"Style of {now}")
    return ask_model(request, system_prompt=f"Today is {now}")
'''
    assert [(d.code, d.line) for d in lint_source(text, "bot.py")] == [("PC101", 17)]


def test_two_calls_of_one_helper_are_two_flows():
    """`get_time()` called in two request builders: each builder's system message is its own
    finding (the call is a step of each trace), not one folded into the other."""
    text = '''import time
from openai import OpenAI

client = OpenAI()


def get_time():
    return str(time.time())


def chat(history):
    history[0] = {"role": "system", "content": "now " + get_time()}
    return client.chat.completions.create(model="m", messages=history)


def chat_stream(history):
    history[0] = {"role": "system", "content": "now " + get_time()}
    return client.chat.completions.create(model="m", messages=history, stream=True)
'''
    assert [(d.code, d.line) for d in lint_source(text, "bot.py")] == [("PC101", 12), ("PC101", 17)]


@pytest.mark.parametrize(("keyword", "reported"), [("trace_meta", False), ("metadata", False), ("tags", False),
                                                   ("context", True)])
def test_telemetry_a_call_is_tagged_with_is_not_its_result(keyword, reported):
    """`llm.complete(text, trace_meta={"call_id": uuid4()})`: the reply is not made of the call's
    trace id; a value passed as the call's input still is."""
    text = f'''import uuid
from openai import OpenAI

client = OpenAI()


def summarize(llm, history, text):
    summary = llm.complete(text, {keyword}={{"call_id": str(uuid.uuid4())}})
    return client.chat.completions.create(model="m", messages=[{{"role": "system", "content": f"Summary: {{summary}}"}}, *history])
'''
    assert bool(lint_source(text, "summary.py")) is reported


@pytest.mark.parametrize(("body", "reported"), [
    ('return ["Doc one.", "Doc two."]', False),  # a stub named for retrieval: fixed text
    ("return store.search(query)", True),
])
def test_a_function_named_for_retrieval_that_returns_fixed_text_is_no_source(body, reported):
    text = f'''from openai import OpenAI

client = OpenAI()


def retrieve_documents(query):
    {body}


def answer(history, query):
    docs = retrieve_documents(query)
    return client.chat.completions.create(model="m", messages=[{{"role": "system", "content": f"Use: {{docs}}"}}, *history])
'''
    assert bool(lint_source(text, "rag.py")) is reported


@pytest.mark.parametrize(("read", "reported"), [('store.read("user")', True), ('config.read("user")', False),
                                              ("str(query_engine.query(ctx))", True), ("str(query_engine.run(ctx))", False)])
def test_a_read_of_a_store_is_what_earlier_turns_wrote_there(read, reported):
    # A project's own memory store, read per request into the system prompt.
    text = f'''from openai import OpenAI

from .memory import MemoryStore

client = OpenAI()


def system_prompt(ctx):
    store = config = query_engine = MemoryStore(ctx)
    return "You are a writing assistant. User profile: " + {read}


def answer(ctx, history):
    return client.chat.completions.create(model="m", messages=[{{"role": "system", "content": system_prompt(ctx)}}, *history])
'''
    assert bool(lint_source(text, "chat.py")) is reported


BLOCKS_TO_A_WRAPPER = '''from datetime import datetime

from myapp import llm_client

PERSONA = "You are Aki."


async def reply(message, history_text):
    now = datetime.now().strftime("%%A %%H:%%M")
    blocks = [
        {"type": "text", "text": PERSONA%s},
        {"type": "text", "text": f"Conversation so far:\\n{history_text}\\nNow: {now}"%s},
    ]
    return await llm_client.chat_with_system(system_prompt=blocks, user_message=message)
'''
BREAKPOINT = ', "cache_control": {"type": "ephemeral"}'


@pytest.mark.parametrize("first, second, codes", [
    (BREAKPOINT, "", []),  # the clock follows the last breakpoint: outside the cached prefix by design
    ("", "", ["PC101"]),  # no breakpoint: the whole system prompt is the prefix
    ("", BREAKPOINT, ["PC101"]),  # the clock inside the cached prefix
])
def test_content_blocks_after_the_last_breakpoint_are_not_cached_whatever_receives_them(first, second, codes):
    # A wrapper recognised by its `system_prompt=` name honours the blocks' own breakpoints, as
    # Anthropic's `system=` does (field: a companion bot's clock in its last, unmarked block).
    assert [d.code for d in lint_source(BLOCKS_TO_A_WRAPPER % (first, second))] == codes


ROLE_CONVERTER = '''from litellm import completion

from app.models import SystemMessage, UserMessage


def to_litellm_messages(messages):
    out = []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, SystemMessage):
            out.append({"role": "system", "content": message.content})
    return out


def generate(model, messages):
    return completion(model=model, messages=to_litellm_messages(messages))
'''
JUDGE = '''from app.llm import generate
from app.models import SystemMessage, UserMessage

RULES = "You are a strict judge."


def review(history):
    conversation = "\\\\n".join(f"{m['role']}: {m['content']}" for m in history)
    messages = [SystemMessage(role="system", content=%s), UserMessage(role="user", content=%s)]
    return generate(model="gpt-4.1", messages=messages)
'''
MODELS = '''from pydantic import BaseModel


class SystemMessage(BaseModel):
    role: str = "system"
    content: str


class UserMessage(BaseModel):
    role: str = "user"
    content: str
'''


@pytest.mark.parametrize(("system", "user", "codes"), [
    ("RULES", "conversation", []),  # the transcript is the user's message: the converter's system branch never sees it
    ("RULES + conversation", '"Judge it."', ["PC401"]),
])
def test_a_converter_that_dispatches_on_the_message_class_keeps_each_message_in_its_role(tmp_path, system, user, codes):
    # A loop over a parameter's messages, `elif isinstance(message, SystemMessage):`, passes on
    # the caller's system messages only (field: an LLM judge's transcript in its user message).
    found, _ = lint_tree(tmp_path, {"app/__init__.py": "", "app/models.py": MODELS, "app/llm.py": ROLE_CONVERTER,
                                    "app/judge.py": JUDGE % (system, user)})
    assert [code for _, _, code in found] == codes


@pytest.mark.parametrize(("middle", "reported"), [
    ("", False),  # only this turn's question follows the memories: nothing stable after them
    ("*history, ", True),  # the conversation follows them: its prefix changes on every turn
])
def test_a_second_system_message_that_only_the_question_follows_is_not_a_stable_layer(middle, reported):
    source = f'''import openai

client = openai.OpenAI()


def answer(memory, history, question):
    memories = memory.search(question)
    return client.chat.completions.create(model="m", messages=[
        {{"role": "system", "content": "You are a helper."}},
        {{"role": "system", "content": f"Memories: {{memories}}"}},
        {middle}{{"role": "user", "content": question}}])
'''
    assert [d.code for d in lint_source(source)] == (["PC401"] if reported else [])


TRY_REBOUND = '''from datetime import date
from langchain_core.messages import SystemMessage


def reply(llm, messages, memories):
    try:
        today = date.today()
        notes = f"Memories as of {today}: {len(memories)}"
        today = date.today()
        system_prompt = f"You are Echo. Today is {today}."
    except Exception:
        system_prompt = "You are Echo."
    return llm.invoke([SystemMessage(content=system_prompt), *messages[1:]])
'''


def test_a_name_bound_again_in_a_try_body_carries_its_new_value():
    # The body runs in order: the second `today` is the one the prompt uses (it was joined with
    # the first, and the trace started there); the handler's prompt is fixed text.
    [found] = lint_source(TRY_REBOUND, "echo.py")
    assert found.trace[0].line == 9 and not found.related


FLAGGED = '''import os
from datetime import datetime

from langchain_core.messages import SystemMessage

USE_ENHANCED_SEARCH = True


def answer(llm, messages):
    if USE_ENHANCED_SEARCH:
        context = "fixed notes"
    else:
        context = f"Searched at {datetime.now()}"
    return llm.invoke([SystemMessage(content=f"Context: {context}"), *messages])
'''


@pytest.mark.parametrize(("flag", "reported"), [("True", False), ("False", True),
                                                ('os.environ.get("SEARCH") == "1"', True)])
def test_a_branch_a_module_constant_turns_off_never_runs(flag, reported):
    source = FLAGGED.replace("USE_ENHANCED_SEARCH = True", f"USE_ENHANCED_SEARCH = {flag}")
    assert bool(lint_source(source, "answer.py")) is reported
    # a flag a function sets again (`global`) is not constant
    again = source + "\\n\\ndef enable():\\n    global USE_ENHANCED_SEARCH\\n    USE_ENHANCED_SEARCH = False\\n"
    assert bool(lint_source(again, "answer.py"))
    # the negated test picks the other branch
    negated = source.replace("    if USE_ENHANCED_SEARCH:", "    if not USE_ENHANCED_SEARCH:")
    assert bool(lint_source(negated, "answer.py")) is (not reported if flag in ("True", "False") else True)


REDEFINED = '''from datetime import datetime

SYSTEM = """Old prompt.
Now: {now}"""

{statement}

SYSTEM = """New prompt.
Now: {now}"""


def call_model(client, messages):
    return client.messages.create(model="m", max_tokens=9, system=SYSTEM.format(now=datetime.now()), messages=messages)
'''


@pytest.mark.parametrize("statement", ["try:\n    import yaml\nexcept ImportError:\n    yaml = None",
                                       "if datetime.now().year < 2000:\n    OLD = True"])
def test_a_template_bound_after_a_module_level_branch_is_the_one_a_function_fills(statement):
    # A notebook that defines its prompt again in a later cell, after a `try` or an `if`.
    source = REDEFINED.replace("{statement}", statement)
    [found] = lint_source(source, "notebook.py")
    assert found.line == source.split("\n").index('Now: {now}"""', 5) + 1


def test_a_module_level_try_that_always_raises_keeps_the_globals_before_it():
    # (the body leaves by `raise`: the module's globals before the `try` are kept, not cleared)
    source = REDEFINED.replace("{statement}", "try:\n    raise SystemExit\nfinally:\n    pass")
    source = source.replace('SYSTEM = """New prompt.\nNow: {now}"""', "")
    [found] = lint_source(source, "notebook.py")
    assert found.line == 4  # the placeholder of the template bound before the `try`


# ------------------------------------------------------------- code that never runs
STALE_COPY = '''from datetime import datetime

from app.{module} import ask


def reply(text):
    return ask([{{"role": "system", "content": f"Now: {{datetime.now()}}"}}, {{"role": "user", "content": text}}])
'''


@pytest.mark.parametrize("module, found", [
    ("llm", [("reply.py", 7, "PC101")]),  # the live package has it: the copy runs
    ("hooks", []),  # `app.hooks` is in no file of the tree: importing it fails, nothing below runs
])
def test_a_copy_that_imports_a_module_its_own_package_lacks_never_runs(tmp_path, module, found):
    files = {"app/__init__.py": "", "app/llm.py": "def ask(messages):\n    return messages\n",
             "old/reply.py": STALE_COPY.format(module=module)}
    assert lint_tree(tmp_path, files)[0] == found


@pytest.mark.parametrize("extra", ["app/hooks/__init__.py", "app/hooks.pyi", "app/hooks.cpython-312-x86_64-linux-gnu.so"])
def test_a_package_module_of_another_kind_still_imports(tmp_path, extra):
    files = {"app/__init__.py": "", "app/llm.py": "def ask(messages):\n    return messages\n", extra: "",
             "old/reply.py": STALE_COPY.format(module="hooks")}
    assert lint_tree(tmp_path, files)[0] == [("reply.py", 7, "PC101")]


def test_an_import_of_a_package_the_tree_does_not_hold_is_not_judged(tmp_path):
    # `agents` is an installed library here, not a folder of the tree: nothing says it fails.
    files = {"app/__init__.py": "", "old/reply.py": STALE_COPY.format(module="llm").replace("app.llm", "agents.run")}
    assert lint_tree(tmp_path, files)[0] == [("reply.py", 7, "PC101")]


def test_a_package_deeper_in_the_tree_may_be_another_name_for_an_installed_library(tmp_path):
    # `adapters/discord/` is the project's own code imported as `adapters.discord`; `discord.ext`
    # is the installed library's module, whatever the folder holds.
    files = {"adapters/discord/__init__.py": "", "adapters/discord/bot.py": STALE_COPY.format(module="llm").replace(
        "from app.llm import ask", "from discord.ext import commands\nfrom app.llm import ask"),
        "app/__init__.py": "", "app/llm.py": "def ask(messages):\n    return messages\n"}
    assert [(name, code) for name, _, code in lint_tree(tmp_path, files)[0]] == [("bot.py", "PC101")]


@pytest.mark.parametrize("imported", ["from bot.prompts.base import base_prompt", "from .base import base_prompt"])
def test_a_packages_init_reaches_its_own_submodules_by_their_full_name(tmp_path, imported):
    # (blind batch 2026-11-27ad) `bot/prompts/__init__.py` builds the system prompt from
    # `bot.prompts.base`: the package's own name heads the submodule's.
    files = {"bot/__init__.py": "", "bot/prompts/base.py": (
        "from datetime import datetime\n\n\ndef base_prompt():\n    return f\"Now: {datetime.now()}\\nYou are Plato.\"\n"),
        "bot/prompts/__init__.py": imported + "\n\n\ndef build_system_prompt():\n    return base_prompt() + ACTIONS\n\n\n"
        "ACTIONS = 'Reply with an action block.'\n",
        "bot/handlers.py": ("import anthropic\nfrom bot.prompts import build_system_prompt\n\nclient = anthropic.Anthropic()\n\n\n"
                            "def handle(text, history):\n    return client.messages.create(model='m', max_tokens=9, "
                            "system=build_system_prompt(), messages=history)\n")}
    assert lint_tree(tmp_path, files)[0] == [("handlers.py", 8, "PC101")]


def test_an_attribute_is_reported_where_it_is_read_not_where_it_was_first_stored():
    source = '''from datetime import datetime

from openai import OpenAI


class Agent:
    def __init__(self):
        self.client = OpenAI()
        self.system_prompt = self._load_system_prompt()
        self.history = []

    def _load_system_prompt(self):
        return f"You are an agent. Now: {datetime.now()}"

    def _refresh(self):
        self.system_prompt = self._load_system_prompt()

    def _llm_call(self, messages):
        return self.client.chat.completions.create(model="m", messages=messages)

    def handle(self, text):
        self.history.append({"role": "user", "content": text})
        if text == "/learn":
            self._refresh()
        return self._llm_call([{"role": "system", "content": self.system_prompt}] + self.history[-20:])
'''
    # The prompt built once in `__init__` is frozen; the one `_refresh` rebuilds mid-conversation is
    # the leak, reported on its path (never at the `__init__` line, which its trace does not pass).
    found = lint_source(source)
    assert found and all(d.line != 9 and any(s.line == 16 for s in d.trace) for d in found)


@pytest.mark.parametrize(("query", "expected"), [
    ("SELECT note FROM notes WHERE expires_at > ?", []),  # the clock only selects the rows
    ("UPDATE notes SET seen = ? RETURNING note", ["PC101"]),  # not a query whose parameters only select
])
def test_a_clock_that_only_selects_the_rows_of_a_sql_query_is_not_their_text(query, expected):
    source = f'''import sqlite3
import time

def system_message(db: sqlite3.Connection):
    rows = db.execute("{query}", (time.time(),)).fetchall()
    notes = "\\n".join(row[0] for row in rows)
    return {{"role": "system", "content": f"Known notes:\\n{{notes}}"}}
'''
    assert [d.code for d in lint_source(source)] == expected


@pytest.mark.parametrize("method", ["fetchrow", "fetch", "fetchval", "fetch_one", "fetch_all"])
def test_an_async_drivers_query_methods_select_rows_as_execute_does(method):
    # (blind batch 2026-11-27ab) asyncpg's `pool.fetchrow(query, *args)`: a week's start date keys
    # the lookup of the week's plan; the plan is not made of the date.
    source = f'''from datetime import date, timedelta

async def system_message(pool, user_id, history):
    week_start = date.today() - timedelta(days=date.today().weekday())
    plan = await pool.{method}("SELECT focus FROM weekly_plans WHERE user_id = $1 AND week_start = $2", user_id, week_start)
    return [{{"role": "system", "content": f"This week: {{plan}}"}}, *history]
'''
    assert lint_source(source) == []


def test_rows_a_query_matches_to_this_turns_message_are_this_turns_matches():
    # (blind batch 2026-11-26ba) A helper embeds the message and asks a vector table for the nearest
    # rows; its caller passes the message. A clock passed the same way only selects (test above).
    source = '''import sqlite3
import time

conn = sqlite3.connect("memory.db")


def recall_conversations(query):
    rows = conn.execute("SELECT doc FROM vec WHERE embedding MATCH ? AND k = ?", (embed(query), 3)).fetchall()
    return "\\n".join(row[0] for row in rows)


def reply(client, user_message, history):
    system = "You are a bot.\\n" + recall_conversations(user_message)
    return client.chat.completions.create(model="m", messages=[{"role": "system", "content": system}, *history])
'''
    [found] = lint_source(source)
    assert (found.code, found.trace[0].note) == ("PC401", "per-turn input: parameter `user_message`")
    assert lint_source(source.replace("recall_conversations(user_message)", "recall_conversations(time.time())")) == []


def test_a_record_built_from_a_spread_dict_keeps_its_fields_apart():
    # (field corpus, an Auto-GPT fork) A fake completion is built as `Namespace(**{...})` with a
    # `created` clock beside the reply; the reply read back is the model's text only.
    source = '''import time
from argparse import Namespace


def complete(messages, completion):
    response = {"choices": [Namespace(**{"message": Namespace(**{"content": completion})})], "created": time.time()}
    return Namespace(**response)


def summary_message(history, completion):
    summary = complete(history, completion).choices[0].message.content
    return [{"role": "system", "content": f"Summary: {summary}"}, *history]
'''
    assert lint_source(source) == []
    assert [d.code for d in lint_source(source.replace('"content": completion', '"content": str(time.time())'))] == ["PC101"]


@pytest.mark.parametrize(("keyword", "reported"), [("log_file", False), ("output_dir", False), ("context", True)])
def test_a_clock_in_the_name_of_a_file_an_unknown_call_writes_is_not_its_answer(keyword, reported):
    # (field corpus, an Auto-GPT fork) `complete_text(prompt, log_file=f"{now}.log")`: the log's
    # name carries the clock; the completion that comes back does not.
    source = f'''import datetime
from llm_backends import complete_text


def summarise(history):
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    summary = complete_text(prompt="Summarise", {keyword}=f"logs/{{stamp}}.log")
    return [{{"role": "system", "content": summary}}, *history]
'''
    assert [d.code for d in lint_source(source)] == (["PC101"] if reported else [])


# ------------------------------------------------------------- a name bound again in a later loop
def test_a_name_bound_again_at_the_top_of_a_loop_body_hides_its_value_from_an_earlier_loop():
    # `fn` holds a tool's result in the first loop and a tool's schema in the second: the schema
    # loop reads only its own `fn`, so no tool result reaches the tool definitions.
    source = '''import openai


def respond(client: openai.OpenAI, session, calls, tools):
    items = []
    for call in calls:
        fn = session.call_tool(call["name"], call["arguments"])
        items.append({"type": "function_call_output", "call_id": call["id"], "output": str(fn)})
    specs = []
    for tool in tools:
        fn = tool["function"]
        specs.append({"type": "function", "name": fn["name"], "parameters": fn["parameters"]})
    return client.responses.create(model="m", input=items, tools=specs)
'''
    assert [d.code for d in lint_source(source)] == []
    # Bound on some passes only, the earlier value still reaches it: the loop may not rebind it.
    conditional = source.replace('        fn = tool["function"]', '        if tool:\n            fn = tool["function"]')
    assert [(d.line, d.code) for d in lint_source(conditional)] == [(14, "PC401")]


def test_a_value_a_loop_binds_reaches_the_code_after_it_and_the_next_pass():
    source = '''import anthropic
from datetime import datetime


def chat(client: anthropic.Anthropic, turns):
    stamp = "start"
    for text in turns:
        client.messages.create(model="m", max_tokens=9, system=f"Since {stamp}", messages=[{"role": "user", "content": text}])
        stamp = datetime.now().isoformat()
'''
    assert [(d.line, d.code) for d in lint_source(source)] == [(8, "PC101")]


def test_a_request_given_an_empty_history_is_a_one_shot_task():
    # `history=[]`: no conversation follows the system prompt, so nothing cached is reused behind it.
    source = '''from datetime import datetime


async def extend_schedule(llm, persona):
    system_prompt = f"{persona}\\nNow: {datetime.now().isoformat()}"
    return await llm.query_structured(system_prompt=system_prompt, history=HISTORY, operation="schedule")
'''
    assert [d.code for d in lint_source(source.replace("HISTORY", "[]"))] == []
    assert [d.code for d in lint_source(source.replace("HISTORY", "persona.history"))] == ["PC101"]


def test_home_assistant_llm_api_looked_up_for_a_turn_carries_none_of_its_words():
    source = '''import anthropic
from homeassistant.helpers import llm


async def respond(hass, client: anthropic.AsyncAnthropic, user_input, api_id, history):
    llm_context = llm.LLMContext(platform="x", context=user_input.context, user_prompt=user_input.text,
                                 language=user_input.language, assistant="conversation", device_id=user_input.device_id)
    llm_api = await llm.async_get_api(hass, api_id, llm_context)
    tools = [{"name": t.name, "description": t.description or "", "input_schema": {}} for t in llm_api.tools]
    return await client.messages.create(model="m", max_tokens=9, tools=tools, messages=history)
'''
    assert [d.code for d in lint_source(source)] == []
    assert [d.code for d in lint_source(source.replace("llm.async_get_api(", "pick_api("))] == ["PC401"]


# ------------------------------------------------------------------ arguments a signature gathers
RENDERED_BY_KWARGS = '''from datetime import datetime


class Loader:
    def render(self, template, **values):
        return template.format(**values)


def build(llm, history):
    text = Loader().render("You are X. Now: {now}", name="x", now=str(datetime.now()))
    return llm.chat([{"role": "system", "content": text}, *history])
'''


def test_keywords_a_callee_gathers_in_its_kwargs_reach_what_it_does_with_them():
    [found] = lint_source(RENDERED_BY_KWARGS)
    assert (found.line, found.code) == (11, "PC101")
    assert "returned by render()" in [s.note for s in found.trace]


def test_positionals_a_callee_gathers_in_its_args_reach_what_it_does_with_them():
    source = RENDERED_BY_KWARGS.replace("render(self, template, **values)", "render(self, template, *values)").replace(
        "template.format(**values)", '" ".join([template, *values])').replace('name="x", now=', '"x", ')
    [found] = lint_source(source)
    assert (found.line, found.code) == (11, "PC101")
    # A keyword the callee has no parameter for (and no `**kwargs`) is no flow.
    assert lint_source(RENDERED_BY_KWARGS.replace("**values", "name=None")) == []


def test_a_source_read_is_named_before_a_parameter_that_carries_it():
    """A retrieval handed down to a builder whose parameter is named for memories: the finding
    starts at the retrieval, and the parameter is named beside it."""
    [found] = lint_source('''def build_prompt(memories):
    return "You are X. Remember: " + "; ".join(m.text for m in memories)


def chat(retriever, llm, history, question):
    found = retriever.retrieve(question)
    messages = [{"role": "system", "content": build_prompt(found)}, *history]
    return llm.chat(messages)
''')
    assert found.code == "PC401" and found.trace[0].line == 6 and "retrieve" in found.trace[0].note
    assert [s.line for s in found.related] == [1]


# ------------------------------------------------------------------ message factories
FACTORY_CONTEXT = '''import time
import openai


def create_chat_message(role, content):
    return {"role": role, "content": content}


def generate_context(prompt, relevant_memory, history):
    context = [
        create_chat_message("system", prompt),
        create_chat_message("system", f"The time is {time.strftime('%c')}"),
        create_chat_message("system", f"You remember:\\n{relevant_memory}"),
    ]
    return len(history) - 1, len(context), context


def chat(prompt, user_input, history, memory):
    relevant = memory.get_relevant(str(history[-9:]), 10)
    next_index, insertion_index, context = generate_context(prompt, relevant, history)
    while next_index >= 0:
        context.insert(insertion_index, history[next_index])
        next_index -= 1
    context.append(create_chat_message("user", user_input))
    return openai.ChatCompletion.create(model="gpt-4o", messages=context)
'''


def test_a_message_made_by_a_helper_from_its_role_and_content_is_that_message():
    """`create_chat_message("system", text)` returns `{"role": role, "content": content}`: at the
    call, the role is what the caller passed. History inserted at a place computed at run time
    goes after the system messages the builder made, so the memory message is no request's tail."""
    found = sorted((d.line, d.code) for d in lint_source(FACTORY_CONTEXT))
    assert found == [(12, "PC101"), (13, "PC401")]


def test_a_helper_message_of_another_role_or_appended_after_the_history_is_no_stable_layer():
    assert lint_source(FACTORY_CONTEXT.replace('create_chat_message("system", f"The', 'create_chat_message("user", f"The')
                       .replace('create_chat_message("system", f"You', 'create_chat_message("assistant", f"You'),
                       ) == []
    appended_late = FACTORY_CONTEXT.replace('''    context.append(create_chat_message("user", user_input))''', '''    context.append(create_chat_message("system", f"Now: {time.time()}"))
    context.append(create_chat_message("user", user_input))''')
    assert sorted((d.line, d.code) for d in lint_source(appended_late)) == [(12, "PC101"), (13, "PC401")]


# ------------------------------------------------------------- one field of the caller's record
EVENTS = '''from datetime import datetime
import anthropic

client = anthropic.Anthropic()


def reply(events, history):
    persona = "a helper"
    READ
    return client.messages.create(model="m", max_tokens=9, system=f"You are {persona}.", messages=history)


def handle(text, history, persona):
    event = {"created_at": datetime.now(), "content": text}
    event["persona"] = persona
    return reply([event], history)
'''


@pytest.mark.parametrize("read", [
    'for e in events:\n        persona = e.get("persona")',
    'persona = events[0].get("persona")',
    'persona = ", ".join(e["persona"] for e in events)',
    'persona = [e.get("persona") for e in events if e][0]',
])
def test_a_field_read_from_the_callers_records_is_that_field_not_the_whole_record(read):
    # The clock is in `created_at`, which never reaches the system prompt.
    assert lint_source(EVENTS.replace("READ", read)) == []
    # The field that carries it does.
    stamped = EVENTS.replace("READ", read).replace('event["persona"] = persona', 'event["persona"] = datetime.now()')
    assert [d.code for d in lint_source(stamped)] == ["PC101"]


@pytest.mark.parametrize("zone", ["datetime.now().astimezone().tzinfo", "datetime.now().astimezone().tzname()",
                                  'datetime.now().strftime("%Z")'])
def test_the_hosts_time_zone_read_through_a_clock_is_no_clock(zone):
    source = f'''from datetime import datetime
import anthropic


def reply(history):
    return anthropic.Anthropic().messages.create(model="m", max_tokens=9, system=f"Zone: {{{zone}}}", messages=history)
'''
    assert lint_source(source) == []
    assert [d.code for d in lint_source(source.replace(zone, zone.replace("tz", "").replace("%Z", "%H") + " or 1"))]


@pytest.mark.parametrize("keyword", ["timeMin", "since", "start_date", "updated_after"])
def test_a_clock_given_as_a_querys_time_cut_off_is_not_what_it_fetches(keyword):
    source = f'''from datetime import datetime
import anthropic


def upcoming(service):
    now = datetime.utcnow().isoformat() + "Z"
    return service.events().list(calendarId="primary", {keyword}=now, maxResults=10).execute()["items"]


def reply(service, history):
    events = "\\n".join(e["summary"] for e in upcoming(service))
    return anthropic.Anthropic().messages.create(model="m", max_tokens=9, system=f"Events: {{events}}", messages=history)
'''
    assert lint_source(source) == []
    # Given as the query's text, the clock is in what comes back.
    assert [d.code for d in lint_source(source.replace(f"{keyword}=now", "q=now"))] == ["PC101"]


@pytest.mark.parametrize(("call", "reported"), [
    ("with_retry(client.messages.create, model='m', max_tokens=9, system=system, messages=msgs)", False),
    ("with_retry(summarize, msgs)", True),  # a plain function's result is made of what it is given
])
def test_a_retry_wrapper_handed_an_sdk_method_returns_the_models_reply(call, reported):
    # (field corpus) `backoff_create(client.messages.create, ...)`: what comes back is the reply,
    # not the request's words; a system prompt built from that reply is not the caller's message.
    source = f'''import anthropic

client = anthropic.Anthropic()


def with_retry(fn, *args, **kwargs):
    return fn(*args, **kwargs)


def summarize(msgs):
    return " ".join(m["content"] for m in msgs)


def ask(system, user_message):
    msgs = [{{"role": "user", "content": user_message}}]
    return {call}


def answer(user_message, history):
    outline = ask("Outline the request.", user_message)
    return client.messages.create(model="m", max_tokens=9, system=f"Follow this outline: {{outline}}", messages=history)
'''
    assert [d.code for d in lint_source(source)] == (["PC401"] if reported else [])
