"""Provider adapters behind a base class (issue 14, blind batch 2026-11-25h): an agent calls
`self.llm.generate(prompt)` on an attribute declared with the base class, whose method only
raises; the subclass beside it builds the system message. Each case is a small example written
for this suite, linted as a real package tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptlint.lint.diagnostic import Settings
from promptlint.lint.engine import lint_paths

BASE = '''from abc import abstractmethod


class BaseLLM:
    @abstractmethod
    async def generate(self, prepend_prompt="", history=()):
        """Send one request."""
'''

CHAT = '''from openai import AsyncOpenAI

from {base_module} import BaseLLM


class BaseChatModel(BaseLLM):
    pass


class OpenAIChat(BaseChatModel):
    async def generate(self, prepend_prompt="", history=()):
        messages = [{{"role": "system", "content": prepend_prompt}}, *history]
        return await AsyncOpenAI().chat.completions.create(model="m", messages=messages)
'''

AGENT = '''from pydantic import BaseModel

from app.llms.base import BaseLLM


class Agent(BaseModel):
    llm: {annotation}
    memory: object

    async def step(self):
        prompt = "You are a player. Chat so far:\\n" + self.memory.to_string()
        return await self.llm.generate(prompt)
'''


def lint_tree(root: Path, files: dict[str, str]):
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    report = lint_paths([str(root)], Settings(root=str(root)), use_cache=False, jobs=1)
    return [(d.path.replace("\\\\", "/").split(str(root.name) + "/")[-1], d.line, d.code) for d in report.diagnostics]


def package(root: Path, annotation: str = "BaseLLM", chat_folder: str = "app/llms/openai") -> dict[str, str]:
    files = {"app/__init__.py": "", "app/llms/__init__.py": "", "app/llms/base.py": BASE,
             f"{chat_folder}/__init__.py": "", f"{chat_folder}/chat.py": CHAT.format(base_module="app.llms.base"),
             "app/agents/__init__.py": "", "app/agents/player.py": AGENT.format(annotation=annotation)}
    return files


@pytest.mark.parametrize("chat_folder", ["app/llms/openai", "app/llms", "app/providers"])
def test_the_subclass_is_found_beside_the_base_below_it_or_in_a_sibling_folder(tmp_path, chat_folder):
    assert [code for *_, code in lint_tree(tmp_path, package(tmp_path, chat_folder=chat_folder))] == ["PC401"]


@pytest.mark.parametrize("annotation", ["BaseLLM", '"BaseLLM"', "BaseLLM | None", "Optional[BaseLLM]"])
def test_an_abstract_method_runs_the_subclass_beside_its_base(tmp_path, annotation):
    files = package(tmp_path, annotation)
    if "Optional" in annotation:
        files["app/agents/player.py"] = "from typing import Optional\n" + files["app/agents/player.py"]
    found = lint_tree(tmp_path, files)
    assert [code for *_, code in found] == ["PC401"]
    assert found[0][0].endswith("app/agents/player.py")


def test_an_attribute_declared_in_a_base_class_is_typed_too(tmp_path):
    files = package(tmp_path)
    files["app/agents/base.py"] = "from pydantic import BaseModel\n\nfrom app.llms.base import BaseLLM\n\n\n" \
                                  "class BaseAgent(BaseModel):\n    llm: BaseLLM\n"
    files["app/agents/player.py"] = files["app/agents/player.py"].replace(
        "from pydantic import BaseModel\n", "from app.agents.base import BaseAgent\n").replace(
        "class Agent(BaseModel):\n    llm: BaseLLM\n", "class Agent(BaseAgent):\n")
    assert [code for *_, code in lint_tree(tmp_path, files)] == ["PC401"]


def test_a_method_with_a_body_of_its_own_is_not_replaced_by_its_overrides(tmp_path):
    files = package(tmp_path)
    files["app/llms/base.py"] = BASE.replace("    @abstractmethod\n", "").replace('        """Send one request."""', '        return None')
    assert lint_tree(tmp_path, files) == []


def test_an_attribute_without_a_class_annotation_stays_unknown(tmp_path):
    assert lint_tree(tmp_path, package(tmp_path, annotation="object")) == []


def test_with_one_adapter_per_provider_the_call_stays_unknown(tmp_path):
    # Which adapter runs is decided at run time: following one (or all) would report flows
    # through code the caller may never reach.
    files = package(tmp_path)
    files["app/llms/anthropic_chat.py"] = CHAT.format(base_module="app.llms.base").replace(
        "class BaseChatModel(BaseLLM):\n    pass\n\n\nclass OpenAIChat(BaseChatModel)", "class AnthropicChat(BaseLLM)")
    assert lint_tree(tmp_path, files) == []



def test_a_dicts_get_on_an_unknown_receiver_is_not_the_one_project_class_get(tmp_path):
    # `action.get("prompt")` is a dict's get, not the memory's `get` that the module imports.
    files = {"app/__init__.py": "",
             "app/memory.py": "class Memory:\n    def get(self, session_id):\n        return self.store.search(session_id)\n",
             "app/agent.py": ("import anthropic\n\nfrom app.memory import Memory\n\n\n"
                              "def run(action, history):\n    system = action.get('prompt')\n"
                              "    return anthropic.Anthropic().messages.create(model='m', max_tokens=9, system=system, "
                              "messages=history)\n")}
    assert lint_tree(tmp_path, files) == []


COMMANDS = {
    "bot/__init__.py": "",
    "bot/models/__init__.py": "",
    "bot/models/llm.py": '''import requests


class LLMClient:
    def generate_response(self, messages, user_mapping=None):
        system_prompt = "You are a bot."
        for user_id, name in (user_mapping or {}).items():
            system_prompt += f"\\n- User {user_id}: {name}"
        payload = {"model": "m", "messages": [{"role": "system", "content": system_prompt}, *messages]}
        return requests.post("http://localhost:1234/v1/chat/completions", json=payload).json()
''',
    "bot/models/memory.py": '''import json
import os


class MemoryManager:
    def __init__(self, folder):
        self.json_path = os.path.join(folder, "memory.json")

    def add_name(self, user_id, name):
        with open(self.json_path) as f:
            data = json.load(f)
        data[user_id] = name
        with open(self.json_path, "w") as f:
            json.dump(data, f)

    def get_all_usernames(self):
        with open(self.json_path) as f:
            return json.load(f)
''',
    "bot/commands/__init__.py": "",
    "bot/commands/base.py": '''from ..models.llm import LLMClient
from ..models.memory import MemoryManager


class CommandHandler:
    def __init__(self, memory_manager: MemoryManager, llm_client: LLMClient):
        self.memory_manager = memory_manager
        self.llm_client = llm_client
''',
    "bot/commands/ask.py": '''from .base import CommandHandler


class AskCommand(CommandHandler):
    async def handle(self, message, history):
        self.memory_manager.add_name(str(message.author.id), message.author.name)
        names = self.memory_manager.get_all_usernames()
        return self.llm_client.generate_response(history, user_mapping=names)
''',
}


def test_an_attribute_a_base_class_keeps_from_its_typed_constructor_parameter_is_typed(tmp_path):
    # (blind batch 2026-11-26ba) The base class in another module keeps `llm_client: LLMClient` and
    # `memory_manager: MemoryManager` from its constructor; the subclass calls both. The memory file's
    # name is set once in `__init__`, but it is read anew on every call: the read is the source.
    found = lint_tree(tmp_path, COMMANDS)
    assert found == [("bot/commands/ask.py", 8, "PC401")]
    untyped = {**COMMANDS, "bot/commands/base.py": COMMANDS["bot/commands/base.py"].replace(
        "memory_manager: MemoryManager, llm_client: LLMClient", "memory_manager, llm_client")}
    assert lint_tree(tmp_path / "untyped", untyped) == []


def test_a_file_read_once_in_the_constructor_is_frozen_with_the_object(tmp_path):
    files = {**COMMANDS, "bot/models/memory.py": COMMANDS["bot/models/memory.py"].replace(
        '''        self.json_path = os.path.join(folder, "memory.json")
''', '''        self.json_path = os.path.join(folder, "memory.json")
        with open(self.json_path) as f:
            self.names = json.load(f)
''').replace('''        with open(self.json_path) as f:
            return json.load(f)
''', '''        return self.names
''')}
    assert lint_tree(tmp_path, files) == []
