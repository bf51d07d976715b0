"""Functions a template calls on each render (issue 14): LangChain's partial variables, Mustache
lambdas. The template is built once; the clock inside the function is read per render. Each
case is a small example written for this suite."""

from __future__ import annotations

import pytest

from promptlint.lint.engine import lint_source

CLOCK = '''from datetime import datetime

from langchain_core.prompts import ChatPromptTemplate, PromptTemplate
from langchain_openai import ChatOpenAI

llm = ChatOpenAI()


def _get_datetime():
    return datetime.now().strftime("%m/%d/%Y, %H:%M:%S")


'''

CASES = {
    "partial-method": ('prompt = ChatPromptTemplate.from_messages([("system", "Now: {date}"), ("human", "{q}")])'
                       '.partial(date=_get_datetime)\n\n\ndef answer(q):\n    return (prompt | llm).invoke({"q": q})\n'),
    "partial-variables": ('prompt = PromptTemplate(template="Now {date}. Be brief.", input_variables=[],\n'
                          '                        partial_variables={"date": _get_datetime})\n\n\n'
                          'def answer(q):\n    return llm.invoke([("system", prompt.format()), ("human", q)])\n'),
    "library-function": ('import chevron\n\nSYSTEM = "It is {{now}}."\n\n\ndef answer(q):\n'
                         '    system = chevron.render(SYSTEM, {"now": datetime.now})\n'
                         '    return llm.invoke([("system", system), ("human", q)])\n'),
    "mustache-lambda": ('import chevron\n\nSYSTEM = "Today is {{formatDate}}."\n\n\ndef answer(q):\n'
                        '    system = chevron.render(SYSTEM, {"formatDate": lambda text, render: str(datetime.now())})\n'
                        '    return llm.invoke([("system", system), ("human", q)])\n'),
    "mustache-section": ('import chevron\n\nSYSTEM = "Today is {{#stamp}}%H:%M{{/stamp}}."\n\n\ndef answer(q):\n'
                         '    system = chevron.render(SYSTEM, {"stamp": lambda text, render: datetime.now().strftime(text)})\n'
                         '    return llm.invoke([("system", system), ("human", q)])\n'),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_function_a_template_calls_per_render_is_a_clock(case):
    found = lint_source(CLOCK + CASES[case], "prompts.py")
    assert [d.code for d in found] == ["PC101"]
    assert any("called on each render" in step.note for step in found[0].trace)


def test_a_function_under_a_name_the_template_does_not_use_is_not_rendered():
    text = CLOCK + CASES["partial-variables"].replace("Now {date}. Be brief.", "Be brief.")
    assert lint_source(text, "prompts.py") == []


def test_a_tool_function_is_not_template_text():
    text = CLOCK + ('from agents import Agent, Runner\n\nagent = Agent(name="a", instructions="Help.", tools=[_get_datetime])\n\n\n'
                    'def answer(q):\n    return Runner.run_sync(agent, q)\n')
    assert lint_source(text, "prompts.py") == []
