"""Frameworks' own stable layers (issue 14, rules/sinks.yaml): each example is the shape the
framework's documentation shows for a system message or instructions, with a clock in it.
Written for this suite."""

from __future__ import annotations

import pytest

from promptlint.lint.engine import lint_source

CASES = {
    "haystack": ("from datetime import datetime\nfrom haystack.dataclasses import ChatMessage\n\n\n"
                 "def turn(gen, history, q):\n"
                 "    msgs = [ChatMessage.from_system(f'Today {datetime.now()}')] + history + [ChatMessage.from_user(q)]\n"
                 "    return gen.run(messages=msgs)\n", "system message (ChatMessage.from_system)"),
    "semantic-kernel-agent": ("from datetime import datetime\nfrom semantic_kernel.agents import ChatCompletionAgent\n\n\n"
                              "async def reply(service, thread, text):\n"
                              "    agent = ChatCompletionAgent(service=service, name='a', instructions=f'Now: {datetime.now()}')\n"
                              "    return await agent.get_response(messages=text, thread=thread)\n", "agent instructions"),
    "semantic-kernel-history": ("from datetime import datetime\nfrom semantic_kernel.contents import ChatHistory\n\n\n"
                                "def history_for(turns):\n"
                                "    return ChatHistory(messages=turns, system_message=f'Now: {datetime.now()}')\n",
                                "system message (ChatHistory(system_message=))"),
    "dspy": ("from datetime import datetime\n\nimport dspy\n\n\nclass QA(dspy.Signature):\n"
             "    '''Answer the question.'''\n    question: str = dspy.InputField()\n    answer: str = dspy.OutputField()\n\n\n"
             "def ask(q):\n    return dspy.Predict(QA.with_instructions(f'Answer. Today is {datetime.now()}'))(question=q)\n",
             "signature instructions (dspy)"),
    # An agent given fixed instructions and a function that adds to them on every run: the
    # decorator is the agent's method, not the `instructions=` field it was built with.
    "pydantic-ai-instructions-function": ("from datetime import date\nfrom textwrap import dedent\n\nfrom pydantic_ai import Agent\n\n"
                                          "agent = Agent(model='gemini-2.5-flash', instructions=dedent('You write books.'))\n\n\n"
                                          "@agent.instructions\ndef add_the_date() -> str:\n    return f'The date is {date.today()}.'\n",
                                          "instructions (@agent.instructions return value)"),
    "google-adk-global-instruction-plugin": (
        "from datetime import date\n\nfrom google.adk.apps import App\n"
        "from google.adk.plugins.global_instruction_plugin import GlobalInstructionPlugin\n\n\n"
        "def global_instruction(ctx) -> str:\n    return f'You are a medical assistant. Today: {date.today()}'\n\n\n"
        "app = App(name='clinic', root_agent=None, plugins=[GlobalInstructionPlugin(global_instruction)])\n",
        "global instruction (GlobalInstructionPlugin)"),
    # LangGraph 0.2 named create_react_agent's prompt `state_modifier`: a function run before each model call.
    "langgraph-state-modifier": ("from datetime import datetime\n\nfrom langgraph.prebuilt import create_react_agent\n\n\n"
                                 "def modifier(state):\n    return f'You are terse. Now: {datetime.now()}'\n\n\n"
                                 "def build(model):\n    return create_react_agent(model, [], state_modifier=modifier)\n",
                                 "agent prompt (create_react_agent(state_modifier=))"),
    "openai-stored-prompt": ("from datetime import datetime\nfrom openai import OpenAI\n\nclient = OpenAI()\n\n\n"
                             "def reply(text, conversation):\n"
                             "    prompt = {'id': 'pmpt_1', 'variables': {'today': f'{datetime.now()}'}}\n"
                             "    return client.responses.create(model='gpt-5', prompt=prompt, conversation=conversation,\n"
                             "                                   input=[{'role': 'user', 'content': text}])\n",
                             "stored prompt variables (Responses prompt=)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_frameworks_system_layer_is_a_sink(case):
    text, layer = CASES[case]
    found = lint_source(text, "app.py")
    assert [d.code for d in found] == ["PC101"]
    assert layer in found[0].message


def test_the_same_calls_with_fixed_text_report_nothing():
    for text, _ in CASES.values():
        fixed = text.replace("{datetime.now()}", "today").replace("{date.today()}", "today")
        assert lint_source(fixed, "app.py") == []


@pytest.mark.parametrize(("where", "reported"), [("backstory", True), ("task", False)])
def test_a_crewai_task_is_the_user_message_of_its_own_run(where, reported):
    # (field corpus) CrewAI renders the agent's role, goal and backstory as the system prompt and
    # a task's description as the user message of that task's run: 7 of 7 findings there were false.
    stamp = "f'Now: {datetime.now()}'"
    source = f'''from datetime import datetime
from crewai import Agent, Crew, Task


def run(user_input):
    agent = Agent(role="Helper", goal="Help", backstory={stamp if where == "backstory" else "'Calm.'"})
    task = Task(description={stamp if where == "task" else "user_input"}, expected_output="An answer.", agent=agent)
    return Crew(agents=[agent], tasks=[task]).kickoff()
'''
    assert [d.code for d in lint_source(source)] == (["PC101"] if reported else [])


def test_adks_preload_memory_tool_puts_each_turns_memories_into_the_system_instruction():
    text = ("from google.adk.agents import LlmAgent\nfrom google.adk.tools.preload_memory_tool import PreloadMemoryTool\n\n"
            "agent = LlmAgent(name='helper', model='gemini-2.5-flash', instruction='Help.', tools=[PreloadMemoryTool()])\n")
    [found] = lint_source(text, "agent.py")
    assert (found.code, found.line) == ("PC401", 4) and "system instruction" in found.message
    # ADK's LoadMemoryTool is a tool the model calls: what it finds is a tool result.
    assert lint_source(text.replace("PreloadMemoryTool", "LoadMemoryTool").replace("preload_memory", "load_memory"),
                       "agent.py") == []


def test_an_instruction_function_imported_from_another_module_is_evaluated_per_request(tmp_path):
    from promptlint.lint.diagnostic import Settings
    from promptlint.lint.engine import lint_paths

    package = tmp_path / "clinic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "prompt.py").write_text("from datetime import date\n\n\ndef global_instruction(ctx) -> str:\n"
                                       "    return f'You are a medical assistant. Today: {date.today()}'\n")
    (package / "agent.py").write_text(
        "from google.adk.apps import App\nfrom google.adk.plugins.global_instruction_plugin import GlobalInstructionPlugin\n\n"
        "from .prompt import global_instruction\n\n"
        "app = App(name='clinic', root_agent=None, plugins=[GlobalInstructionPlugin(global_instruction)])\n")
    [found] = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1).diagnostics
    assert (found.code, found.line, found.trace[0].path.endswith("prompt.py")) == ("PC101", 6, True)
