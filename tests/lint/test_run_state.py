"""Instructions a framework rebuilds on every model call from the run's state (issue 14, blind batch
2026-11-25c), each reduced to a small example written for this suite: a field of the run context is a
leak only when the conversation writes it; ADK placeholders; hooks found by their class's base;
methods named for writing a layer; generic classes called like their class."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptlint.lint.diagnostic import Settings
from promptlint.lint.engine import lint_paths, lint_source
from promptlint.lint.run_state import written_fields

INSTRUCTIONS = '''from agents import Agent, RunContextWrapper


def seat_instructions(run_context: RunContextWrapper, agent) -> str:
    state = run_context.context.state
    return f"You help {state.customer_name}. Current seat: {state.seat_number}."


seat_agent = Agent[object](name="Seat", instructions=seat_instructions)
'''

TOOL = '''from agents import function_tool


@function_tool
async def update_seat(context, new_seat: str) -> str:
    context.context.state.seat_number = new_seat
    return "ok"
'''


def lint_tree(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1).diagnostics


def test_a_run_state_field_a_tool_writes_reaches_the_instructions(tmp_path):
    found = lint_tree(tmp_path, {"agents_demo.py": INSTRUCTIONS, "tools.py": TOOL})
    assert [(Path(d.path).name, d.line, d.code) for d in found] == [("agents_demo.py", 9, "PC401")]
    (d,) = found
    assert "`seat_number`" in d.message and "written while the conversation runs" in d.message
    # The trace starts at the write, then the read, then the sink.
    assert Path(d.trace[0].path).name == "tools.py" and d.trace[0].line == 6
    assert "run state read" in d.trace[1].note and d.trace[-1].note.startswith("reaches agent instructions")
    assert not d.needs


def test_a_run_state_field_nobody_writes_is_not_a_leak(tmp_path):
    # Without the tool, the seat is set when the context is built: fixed for the conversation.
    assert lint_tree(tmp_path, {"agents_demo.py": INSTRUCTIONS}) == []


def test_a_field_written_on_self_in_a_constructor_is_not_run_state(tmp_path):
    tool = "class State:\n    def __init__(self):\n        self.seat_number = None\n"
    assert lint_tree(tmp_path, {"agents_demo.py": INSTRUCTIONS, "state.py": tool}) == []


def test_an_instructions_function_of_an_agent_built_at_import_is_still_called_per_request():
    source = '''from datetime import datetime
from agents import Agent


def instr(run_context, agent) -> str:
    return f"Now: {datetime.now()}"


agent = Agent(name="a", instructions=instr)
'''
    assert [d.code for d in lint_source(source)] == ["PC101"]


def test_pydantic_ai_instructions_read_deps_written_by_a_tool(tmp_path):
    agent = '''from pydantic_ai import Agent, RunContext

agent = Agent("openai:gpt-4.1")


@agent.instructions
def instructions(ctx: RunContext) -> str:
    return f"Current plan: {ctx.deps.plan}. User: {ctx.deps.user}"


@agent.tool
def set_plan(ctx: RunContext, plan: str) -> str:
    ctx.deps.plan = plan
    return "saved"
'''
    found = lint_tree(tmp_path, {"agent.py": agent})
    assert [(d.code, d.line) for d in found] == [("PC401", 8)]
    assert "`plan`" in found[0].message and "`user`" not in found[0].message


ADK = '''from datetime import datetime
from google.adk import Agent


def stamp(callback_context):
    callback_context.state["_time"] = datetime.now().isoformat()


root_agent = Agent(
    name="a",
    model="gemini-2.0-flash",
    before_agent_callback=stamp,
    instruction="""You help {user_name}.
Current time: {_time}
Literal braces {{like this}} are not placeholders.""",
)
'''


def test_adk_instruction_placeholders_filled_from_state_the_conversation_writes(tmp_path):
    found = lint_tree(tmp_path, {"agent.py": ADK})
    # A clock written into the state is a clock: the write's family, not per-turn content.
    assert [(d.code, d.line) for d in found] == [("PC101", 13)]
    # (the trace starts at the clock, then its write into the state)
    assert "`{_time}`" in found[0].message and [s.line for s in found[0].trace[:2]] == [6, 6]
    assert found[0].message.startswith("Wall-clock time reaches agent instruction")
    assert "(wall-clock time)" in found[0].trace[1].note and found[0].trace[0].note.startswith("wall-clock time")


def test_adk_append_instructions_is_a_sink_by_its_name():
    source = '''from google.adk.tools import BaseTool


class Recall(BaseTool):
    async def process_llm_request(self, *, tool_context, llm_request):
        found = await tool_context.search_memory(tool_context.user_content.parts[0].text)
        llm_request.append_instructions([f"Past conversations: {found}"])
'''
    (d,) = lint_source(source)
    assert d.code == "PC401" and "append_instructions" in d.message


@pytest.mark.parametrize("method", ["set_system_prompt", "append_instructions", "add_developer_message"])
def test_methods_named_for_writing_a_layer_take_that_layers_text(method):
    source = f'''import time

def turn(agent):
    agent.{method}(f"Now: {{time.time()}}")
'''
    assert [d.code for d in lint_source(source)] == ["PC101"]


def test_a_method_that_only_reads_a_layer_is_not_a_writer():
    source = '''import time

def turn(agent):
    agent.get_system_prompt(f"Now: {time.time()}")
'''
    assert lint_source(source) == []


def test_a_context_provider_hook_is_found_by_its_base(tmp_path):
    providers = '''from datetime import datetime
from atomic_agents.context import BaseDynamicContextProvider


class DateProvider(BaseDynamicContextProvider):
    def get_info(self) -> str:
        return f"Today is {datetime.now():%A %H:%M}."


class NotesProvider(BaseDynamicContextProvider):
    def get_info(self) -> str:
        return "\\n".join(self.notes)


class Unrelated:
    def get_info(self) -> str:
        return f"{datetime.now()}"
'''
    main = '''def turn(rag_context, found):
    rag_context.notes = found
'''
    found = lint_tree(tmp_path, {"providers.py": providers, "main.py": main})
    assert [(d.code, d.line) for d in found] == [("PC101", 7), ("PC401", 12)]
    assert "called by the framework on every run" in found[0].message


def test_a_hook_name_alone_without_its_base_is_not_admitted():
    assert lint_source("import time\n\nclass P:\n    def get_info(self):\n        return str(time.time())\n") == []


@pytest.mark.parametrize("text, fields", [
    ("ctx.context.state.seat_number = seat\n", {"seat_number"}),
    ("callback_context.state['_time'] = now\n", {"_time"}),
    ("run.deps.notes.append(x)\n", {"notes"}),
    ("state['sources'].extend(found)\n", {"sources"}),
    ("ctx_state.counter += 1\n", {"counter"}),
    ("self.seat_number = seat\n", set()),  # an object's own attribute: not a run's state
    ("config.timeout = 5\n", set()),  # no state or context receiver
    ("if ctx.state.seat == seat:\n    pass\n", set()),  # a comparison is not a write
])
def test_written_fields_scans_writes_through_state_receivers(text, fields):
    assert set(written_fields(text)) == fields


def test_written_fields_reports_the_first_write_position():
    text = "x = 1\n    ctx.state.a = 1\nctx.state.a = 2\n"
    assert written_fields(text) == {"a": [2, 5]}


GRAPH = '''from langchain_core.messages import SystemMessage


def load_memories(state, config):
    memories = config["configurable"]["store"].search(("memories",), query=state["messages"][-1].content)
    return {"notes": [m.value for m in memories]%s}


def agent(state, config):
    system = SystemMessage(content=f"Notes: {state['notes']}\\nUser: {state['user_name']}")
    return {"messages": [config["configurable"]["llm"].invoke([system, *state["messages"]])]}
'''


def test_a_graph_state_field_another_node_writes_is_per_turn_and_the_run_input_is_not():
    # `user_name` comes with the graph's input: only a node that writes it would make it vary.
    [found] = lint_source(GRAPH % "")
    # (the trace starts at the search, then its write into the state)
    assert found.code == "PC401" and [s.line for s in found.trace[:2]] == [5, 6]
    assert "`notes`" in found.message and "user_name" not in found.message + str(found.related)
    [found] = lint_source(GRAPH % ', "user_name": state["messages"][-1].content')
    # (`user_name` is written from the newest message: the related flow starts there)
    assert [(s.line, s.note.split(":")[0]) for s in found.related] == [(6, "per-turn input")]


def test_a_command_update_of_a_graph_node_is_a_write():
    [found] = lint_source('''from langgraph.types import Command
from langchain_core.messages import SystemMessage


def plan(state, config):
    steps = config["configurable"]["llm"].invoke(state["messages"]).content
    return Command(update={"plan": steps}, goto="act")


def act(state, config):
    system = SystemMessage(content=f"Follow the plan: {state['plan']}")
    return {"messages": [config["configurable"]["llm"].invoke([system, *state["messages"]])]}
''')
    assert (found.code, found.trace[0].line) == ("PC401", 7)


def test_a_helper_called_with_the_state_returns_to_its_caller_not_to_the_graph():
    # (blind batch 2026-11-26bb) `_inputs(state, trip)` takes the state first like a node, but this
    # module calls it: the dict it returns is a chain's input, not an update of the `trip` field.
    text = '''from langchain_core.messages import SystemMessage


def _inputs(state, trip):
    return {"trip": trip.model_dump_json(), "notes": state["notes"]}


def plan(state, config):
    chain = config["configurable"]["chain"]
    return {"itinerary": chain.invoke(_inputs(state, config["configurable"]["trip"]))}


def agent(state, config):
    system = SystemMessage(content=f"Trip: {state['trip']}")
    return {"messages": [config["configurable"]["llm"].invoke([system, *state["messages"]])]}
'''
    assert lint_source(text) == []
    # (a node that returns the update itself writes the field)
    [found] = lint_source(text.replace('"itinerary": chain.invoke(', '"trip": chain.invoke('))
    assert found.code == "PC401" and "`trip`" in found.message


def test_a_key_inside_a_graph_state_field_needs_the_field_written():
    # `state["router"]["logic"]`: the node that writes `router` makes it vary, not a `logic` field.
    text = '''from langchain_core.messages import SystemMessage


def route(state, config):
    return {"router": config["configurable"]["llm"].invoke(state["messages"])}


def answer(state, config):
    system = SystemMessage(content=f"Why: {state['router']['logic']}")
    return {"messages": [config["configurable"]["llm"].invoke([system, *state["messages"]])]}
'''
    [found] = lint_source(text)
    assert (found.code, found.trace[0].line) == ("PC401", 5) and "`router`" in found.message
    assert lint_source(text.replace('return {"router"', 'return {"route"')) == []


def test_a_one_shot_call_a_node_builds_from_state_has_no_conversation_to_break():
    # The report writer sends the sections with a fixed instruction: no history follows them.
    assert lint_source('''from langchain_core.messages import HumanMessage, SystemMessage


def research(state, config):
    return {"sections": config["configurable"]["search"](state["topic"])}


def write_report(state, config):
    system = SystemMessage(content=f"Write a report from these sections: {state['sections']}")
    report = config["configurable"]["llm"].invoke([system, HumanMessage(content="Write the report.")])
    return {"report": report.content}
''') == []


def test_a_node_that_hands_a_field_back_unchanged_is_not_its_write():
    source = '''from langchain_core.messages import SystemMessage


def route(state, config):
    return {"summary": state.get("summary", ""), "next": "agent"}


def agent(state, config):
    system = SystemMessage(content=f"Summary of the conversation so far: {state['summary']}")
    return {"messages": [config["configurable"]["llm"].invoke([system, *state["messages"]])]}


def summarize(state, config):
    text = config["configurable"]["llm"].invoke(state["messages"]).content
    return {"summary": text}
'''
    [found] = lint_source(source)
    assert found.code == "PC401" and found.trace[0].line == 15  # the rewrite, not the hand-back


STATE_OBJECT = '''from openai import OpenAI

client = OpenAI()


class SharedState:
    def __init__(self):
        self.app_card = ""
        self.goal = ""


class Manager:
    def __init__(self, goal, cards):
        self.shared_state = SharedState()
        self.shared_state.goal = goal
        self.cards = cards

    def %s(self, screen):
        self.%s.app_card = self.cards.load(screen["package"])

    def build_system_prompt(self):
        return f"You drive a phone. Goal: {self.shared_state.goal}\\nApp guide:\\n{self.shared_state.app_card}"

    def step(self, screen, history):
        self.prepare(screen)
        messages = [{"role": "system", "content": self.build_system_prompt()}, *history]
        return client.chat.completions.create(model="gpt-4.1", messages=messages)
'''


@pytest.mark.parametrize(("writer", "holder", "codes"), [
    ("prepare", "shared_state", ["PC401"]),  # rewritten on each step: the app on screen picks the card
    ("load_saved_scene", "shared_state", []),  # a saved state loaded: there from the first turn on
    ("prepare", "shared_state_copy", []),  # another object's field of the same name
])
def test_a_field_of_the_agents_state_object_rewritten_while_it_runs_is_per_turn(writer, holder, codes):
    # The goal, set in `__init__`, is the same on every turn; the app card is not.
    found = lint_source(STATE_OBJECT % (writer, holder))
    assert [d.code for d in found] == codes
    if codes:
        assert found[0].trace[0].note == "written while the conversation runs: `shared_state.app_card`"


HOST = '''from google.adk import Agent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.tool_context import ToolContext


class Host:
    def create_agent(self) -> Agent:
        return Agent(model="gemini-2.0-flash", name="host", instruction=self.root_instruction,
                     tools=[self.send_message])

    def root_instruction(self, context: ReadonlyContext) -> str:
        current = self.check_state(context)
        return f"You delegate.\\nCurrent agent: {current['active_agent']}"

    def check_state(self, context: ReadonlyContext) -> dict[str, str]:
        state = context.state
        if "agent" in state:
            return {"active_agent": f"{state['agent']}"}
        return {"active_agent": "None"}
%s'''

SEND = '''
    async def send_message(self, agent_name: str, message: str, tool_context: ToolContext) -> list:
        state = tool_context.state
        state["agent"] = agent_name
        return []
'''


@pytest.mark.parametrize(("tool", "expected"), [(SEND, [(8, "PC401")]), ("", [])])
def test_a_helper_handed_the_run_context_reads_run_state_too(tmp_path, tool, expected):
    # The instruction provider hands its context to a helper that reads the state a tool writes.
    found = lint_tree(tmp_path, {"host.py": HOST % tool})
    assert [(d.line, d.code) for d in found] == expected
    if found:
        assert found[0].trace[0].line == 23 and "`agent`" in found[0].message


def test_the_write_of_a_run_state_field_is_shown_relative_like_the_finding(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    lint_tree(tmp_path / "pkg", {"host.py": HOST % SEND})
    monkeypatch.chdir(tmp_path)
    (d,) = lint_paths([str(tmp_path / "pkg")], Settings(root=str(tmp_path)), use_cache=False, jobs=1).diagnostics
    assert d.path == str(Path("pkg", "host.py")) and d.trace[0].path == d.path
    assert d.message.endswith("written while the conversation runs (line 23)")


def test_run_state_read_in_one_branch_is_reported_at_that_branch_return(tmp_path):
    # The chunks are read on the branch that returns them; the other branch's return does not
    # carry them (it was reported there, at the function's last return, with a wrong trace).
    source = '''from pydantic_ai import Agent, RunContext

agent = Agent("openai:gpt-4o")


@agent.instructions
def instructions(ctx: RunContext) -> str:
    base = f"You answer questions. Status: {ctx.deps.state.status}"
    if ctx.deps.state.chunks:
        summary = f"Chunks: {len(ctx.deps.state.chunks)}"
        for chunk in ctx.deps.state.chunks[:5]:
            summary += f"{chunk.title}"
        return base + summary
    else:
        return base + " No chunks."


@agent.tool
def search(ctx: RunContext, q: str) -> str:
    ctx.deps.state.chunks = find(q)
    ctx.deps.state.status = "searched"
    return "ok"
'''
    found = lint_tree(tmp_path, {"agent.py": source})
    assert [(d.line, d.code) for d in found] == [(13, "PC401")]
    assert {"`status`", "`chunks`"} <= {part for d in found for part in d.message.split() if part.startswith("`")}


def test_a_history_of_something_else_than_the_conversation_is_run_state(tmp_path):
    # A tool appends each search to the run's state; the instructions count them on every call.
    field = "search_history"
    source = f'''from pydantic_ai import Agent, RunContext

agent = Agent("openai:gpt-4o")


@agent.instructions
def instructions(ctx: RunContext) -> str:
    return "Searches so far: {{}}".format(len(ctx.deps.state.{field}))


@agent.tool
def search(ctx: RunContext, q: str) -> str:
    ctx.deps.state.{field}.append(q)
    return "ok"
'''
    assert [(d.line, d.code) for d in lint_tree(tmp_path, {"agent.py": source})] == [(8, "PC401")]


NODES = '''from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

CARD = "You are Ava. Memories: {memory_context}"


async def conversation_node(state, config):
    prompt = ChatPromptTemplate.from_messages([("system", CARD), MessagesPlaceholder(variable_name="messages")])
    return {"messages": await prompt.ainvoke({"messages": state["messages"], "memory_context": state["memory_context"]})}


def memory_injection_node(state, memory_manager):
    memories = memory_manager.get_relevant_memories(state["messages"][-1].content)
    return {"memory_context": "\\n".join(memories)}
'''


def test_a_trace_through_run_state_starts_at_the_source_written_there_cold_and_warm(tmp_path):
    (tmp_path / "nodes.py").write_text(NODES, encoding="utf-8")
    runs = [lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=True, jobs=1) for _ in range(2)]
    assert runs[1].cached == 1
    cold, warm = (run.diagnostics for run in runs)
    assert cold == warm and [d.code for d in cold] == ["PC401"]
    assert [(s.line, s.note.split(":")[0]) for s in cold[0].trace[:2]] == [
        (12, "per-turn input"), (13, "written while the conversation runs")]


SWARM = '''from swarm import Agent, Result


def triage_instructions(context_variables):
    return f"You route the customer. Their open order: {context_variables.get('order')}."


def record_order(context_variables, order: str):
    context_variables["order"] = order
    return Result(value="noted", context_variables=context_variables)


triage = Agent(name="Triage", instructions=triage_instructions, functions=[record_order])
'''


def test_swarm_instructions_read_context_variables_a_function_writes(tmp_path):
    # (blind batch 2026-11-27ax) Swarm calls the instructions with the run's context variables
    # before each model call; a function the model calls rewrites them mid-conversation.
    found = lint_tree(tmp_path, {"triage.py": SWARM})
    assert [(d.line, d.code) for d in found] == [(13, "PC401")]
    fixed = SWARM.replace('    context_variables["order"] = order\n', "")
    assert lint_tree(tmp_path, {"triage.py": fixed}) == []
