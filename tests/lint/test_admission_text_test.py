"""The admission test searches an alternation branch by branch, from a literal (issue 14, speed).

``TextTest`` must say exactly what ``re.search`` says for the same pattern: a file the regex
admits and the split search does not would lose its findings without any sign.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptlint.lint.catalog import load_catalog
from promptlint.lint.literal_search import TextTest, _top_level_branches, names_test

PATTERNS = [
    r"""["']role["']\s*:\s*["'](?:system|developer)["']""",
    r"""\brole\s*=\s*["']system["']|\bSystem(?:Message|Prompt)\s*\(|\(\s*["']system["']\s*,""",
    r"""\bsystem(?:_prompt)?=(?!=)|["']instructions["']\s*:|\{[{%][^}\n]{0,20}\bnow\s*\(""",
    r"""\bdef\s+(?:get_)?system_prompt\b|\.(?:system_prompt)\s*(?:\+?=|\.append)""",
    r"""[a-c]x|[^"]y|\bz""",  # classes that are not a short list of characters stay whole
]

# Texts made of the pieces the patterns look for, so that near misses are common.
PIECES = ["role", "system", "System", "Message", "Prompt", "def ", "get_", "_prompt", ".", "=", "==", "+=",
          ".append", "(", ")", "'", '"', ":", " ", "\n", "x", "_", "é", "{{", "{%", "now", "instructions",
          "ax", "dy", '"y', "z", "az"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from(PATTERNS))
def test_text_test_agrees_with_re_search(pieces, pattern):
    text = "".join(pieces)
    assert TextTest(pattern).search(text) == (re.search(pattern, text) is not None), (pattern, text)


def test_the_catalogs_shape_test_agrees_with_its_regex_on_near_misses():
    shape = load_catalog().shape_prefilter
    regex = re.compile(shape.pattern)
    texts = [
        'msgs = [{"role": "system", "content": x}]', "mysystem = 1", "system=prompt", "x.system == y",
        "class SystemMessageFactory: pass", "SystemMessage(content=x)", "xSystemMessage(", "def build_system_prompt():",
        "def rebuild_system_prompt_x():", "self.system_prompt += part", "'inputSchema': {}", "\"parameters\": {\"type\"",
        "{{ now() }}", "preamble=", "subsystem=1", 'pairs = [("system", text)]',
    ]
    for text in texts:
        assert shape.search(text) == (regex.search(text) is not None), text


def test_branches_split_only_at_the_top_level():
    assert _top_level_branches(r"a(?:b|c)|[|]d|\|e|f") == ["a(?:b|c)", "[|]d", r"\|e", "f"]


# --- which files a sink library's import admits (issue 14: method sinks need a dot) ----------

LANGCHAIN_OPENAI = "from langchain_openai import ChatOpenAI\n\nllm = ChatOpenAI()\n"


def test_a_method_sink_admits_a_file_where_its_name_follows_a_dot():
    catalog = load_catalog()
    assert catalog.might_contain_sink(LANGCHAIN_OPENAI + "reply = llm.invoke(messages)\n")
    assert catalog.might_contain_sink(LANGCHAIN_OPENAI + "reply = (llm\n       .invoke(messages))\n")
    assert catalog.might_contain_sink(LANGCHAIN_OPENAI + "send = llm.ainvoke\n")  # called later by alias
    assert catalog.might_contain_sink("import cohere\n\nco = cohere.Client()\nco.chat(message=q)\n")
    assert catalog.might_contain_sink("from langchain_core.prompts import ChatPromptTemplate\n\n"
                                      "prompt = ChatPromptTemplate.from_messages(pairs)\n")


def test_a_method_sinks_bare_word_no_longer_admits_a_file():
    catalog = load_catalog()
    assert not catalog.might_contain_sink(LANGCHAIN_OPENAI + "def invoke(messages):\n    '''invoke the model'''\n")
    assert not catalog.might_contain_sink("import cohere\n\n# chat with the user\ndef chat(q):\n    return q\n")
    # `typing_extensions.override` is not the `override` method of a langchain model.
    assert not catalog.might_contain_sink("from langchain_core.runnables import Runnable\n"
                                          "from typing_extensions import override\n\n\n"
                                          "class R(Runnable):\n    @override\n    def run(self): ...\n")


def test_a_function_or_class_sink_still_admits_by_its_bare_name():
    catalog = load_catalog()
    assert catalog.might_contain_sink("from litellm import completion\n\ncompletion(model='m', messages=msgs)\n")
    assert catalog.might_contain_sink("from agno.agent import Agent\n\nagent = Agent(add_datetime_to_context=True)\n")


def test_a_caller_of_a_method_that_carries_a_parameter_into_a_sink_is_analysed_only_where_it_calls_one(tmp_path):
    from promptlint.lint.diagnostic import Settings
    from promptlint.lint.engine import lint_paths

    (tmp_path / "helpers.py").write_text(
        "import anthropic\n\nclient = anthropic.Anthropic()\n\n\nclass Assistant:\n"
        "    def ask(self, system_text, question):\n"
        "        return client.messages.create(model='m', max_tokens=10, system=system_text,\n"
        "                                      messages=[{'role': 'user', 'content': question}])\n")
    (tmp_path / "app.py").write_text(
        "from datetime import datetime\n\nimport helpers\n\n\ndef main(question):\n"
        "    return helpers.Assistant().ask(f'Today is {datetime.now()}', question)\n")
    # Imports the module and names `ask`, but only as a function of its own: not analysed.
    (tmp_path / "other.py").write_text(
        "import helpers\n\n\ndef ask(question):\n    '''Not the assistant's method.'''\n    return question\n")
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert [(d.path.rsplit("/", 1)[-1], d.line, d.code) for d in report.diagnostics] == [("app.py", 7, "PC101")]
    assert report.analyzed == 2  # helpers.py (a sink) and app.py (a caller of Assistant.ask)


def _two_builders(tmp_path):
    """Two modules, each with a method that carries a parameter into a sink."""
    for module, method in (("mail", "send_note"), ("chat", "reply")):
        (tmp_path / f"{module}.py").write_text(
            "import anthropic\n\nclient = anthropic.Anthropic()\n\n\nclass Bot:\n"
            f"    def {method}(self, system_text, question):\n"
            "        return client.messages.create(model='m', max_tokens=10, system=system_text,\n"
            "                                      messages=[{'role': 'user', 'content': question}])\n")


def test_a_caller_is_admitted_only_for_the_functions_of_the_modules_it_imports(tmp_path):
    """Importing one builder's module and naming another module's method is no call into either
    (PraisonAI: `.run` exported by one module admitted every file that imports any other)."""
    from promptlint.lint.diagnostic import Settings
    from promptlint.lint.engine import lint_paths

    _two_builders(tmp_path)
    (tmp_path / "app.py").write_text(
        "from datetime import datetime\n\nimport chat\n\n\ndef main(question, mailer):\n"
        "    mailer.send_note(f'Today is {datetime.now()}', question)\n"
        "    return chat.Bot().reply('fixed', question)\n")
    (tmp_path / "other.py").write_text(  # names `reply`, imports only `mail`
        "from datetime import datetime\n\nimport mail\n\n\ndef main(q, bot):\n"
        "    return bot.reply(f'Today is {datetime.now()}', q)\n")
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert report.analyzed == 3  # mail.py, chat.py and app.py; not other.py
    assert report.diagnostics == []  # app.py's dated text goes to `send_note` of an unknown object


def test_a_subclass_reaches_the_builders_its_base_class_module_imports(tmp_path):
    """`llm: Bot` is declared on the base class in another module; the subclass calls it."""
    from promptlint.lint.diagnostic import Settings
    from promptlint.lint.engine import lint_paths

    _two_builders(tmp_path)
    (tmp_path / "base.py").write_text("from chat import Bot\n\n\nclass BaseAgent:\n    llm: Bot\n")
    (tmp_path / "agent.py").write_text(
        "from datetime import datetime\n\nfrom base import BaseAgent\n\n\nclass Agent(BaseAgent):\n"
        "    def step(self, q):\n        return self.llm.reply(f'Today is {datetime.now()}', q)\n")
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert [(d.path.rsplit("/", 1)[-1], d.code) for d in report.diagnostics] == [("agent.py", "PC101")]



NAMES = frozenset({".start", ".run", "LLM", "create_agent", "build"})


def _names_by_regex(text: str) -> bool:
    """The meaning of ``NamesTest``, spelt as one regex (slow on large files, exact)."""
    words = [r"\.[ \t]*start", r"\.[ \t]*run", r"(?<!\w)LLM", r"(?<!\w)create_agent", r"(?<!\w)build"]
    return re.search(rf"(?:{'|'.join(words)})(?!\w)", text) is not None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([".", "start", "run", "with", "LLM", "Config", "create_agent", "build", "er", "_",
                                 " ", "\t", "\n", "(", "x", "a1"]), max_size=14).map("".join))
def test_names_test_says_what_the_word_regex_says(text):
    assert names_test(NAMES).search(text) == _names_by_regex(text)


@pytest.mark.parametrize(("text", "found"), [
    ("agent.start(prompt)", True),
    ("if line.startswith('#'):", False),  # a method's name inside a longer one
    ("llm = LLM(model=m)", True),
    ("cfg = LLMConfig()", False),
    ("start(x)", False),  # a method is called on something
    ("self.builder.build()", True),
    ("rebuild()", False),
])
def test_names_test_reads_whole_words(text, found):
    assert names_test(NAMES).search(text) is found


def test_a_function_of_the_same_name_offered_by_another_module_in_a_later_round_admits_its_callers(tmp_path):
    """aideml: `backend_openai.query` carries its parameter into a sink (round one); the package's
    own `query` dispatches to it (found in round two, the same name); `agent.py` imports the
    package, not `backend_openai`, and is a caller of the second."""
    from promptlint.lint.diagnostic import Settings
    from promptlint.lint.engine import lint_paths

    (tmp_path / "backend_openai.py").write_text(
        "import openai\n\n\ndef query(system_message, user_message):\n"
        "    return openai.OpenAI().chat.completions.create(model='m', messages=[\n"
        "        {'role': 'system', 'content': system_message}, {'role': 'user', 'content': user_message}])\n")
    (tmp_path / "backend.py").write_text(
        "import backend_openai\n\n\ndef query(system_message, user_message):\n"
        "    return backend_openai.query(system_message, user_message)\n")
    (tmp_path / "agent.py").write_text(
        "import uuid\n\nfrom backend import query\n\n\ndef step(task):\n"
        "    return query(f'Run {uuid.uuid4()}', task)\n")
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    assert [(d.path.rsplit("/", 1)[-1], d.code) for d in report.diagnostics] == [("agent.py", "PC201")]
