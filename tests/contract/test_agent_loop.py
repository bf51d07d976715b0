"""A 10-turn agent session through all four renderers and, for Anthropic and OpenAI, the real
SDKs against the offline emulator (``promptlint emulate`` in a subprocess on a free port).

The session has a short persona, five tools, a skill store (one skill pre-loaded as padding, one
activated on turn 1 and re-sent every turn, one activated on turn 5), MEMORY.md and USER.md as
turn layers (memory changes on turns 4 and 8), and a tool call answered every other turn. The
emulator only ever answers with text, so the test plays the model's tool calls itself.
"""

from __future__ import annotations

import json
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from promptlint.contract import Layer, PaddingPolicy, PromptContract, Skill, SkillBudget, neutral_turns, reply_turns
from promptlint.golden.gate import compare, golden_document
from test_wire_shapes import assert_valid

ROOT = Path(__file__).resolve().parents[2]
TURNS = 10
pytestmark = pytest.mark.slow

TOOLS = [
    {"name": name, "description": f"{name.replace('_', ' ').capitalize()}.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["path"]}}
    for name in ("read_file", "write_file", "run_tests", "search_code", "open_pr")
]
CALENDAR = Skill("a-calendar", "Dates and time zones.", "Always state dates as ISO 8601 with a time zone.")
DEPLOY = Skill("b-deploy-runbook", "How to deploy a service.",
               "\n".join(f"Step {i}: check the service health endpoint, then roll out batch {i}." for i in range(400)))
GIT = Skill("c-git-workflow", "Branches, commits and pull requests.",
            "\n".join(f"Rule {i}: keep commit {i} small and describe why it was made." for i in range(400)))


def agent_contract(version: str = "px1", persona: str = "You are Orbit, a careful coding agent.",
                   calendar: Skill = CALENDAR) -> PromptContract:
    # max_tokens keeps the two long skill bodies out of the padding: they are activated instead.
    return PromptContract(
        name="orbit", version=version,
        layers=[
            Layer("persona", text=persona, stability="global"),
            Layer("tools", tools=TOOLS, stability="global"),
            Layer("skills", skills=[calendar, DEPLOY, GIT], stability="project"),
            Layer("workspace", stability="session"),
            Layer("user_md", stability="turn"),
            Layer("memory_md", stability="turn"),
        ],
        padding=PaddingPolicy(max_tokens=4_300),
        skill_budget=SkillBudget(warn_tokens=20_000),
    )


ROUTES = [("anthropic", "claude-haiku-4-5", 1), ("openai", "gpt-4.1", 0), ("openai", "gpt-5.6-luna", 2),
          ("openai-responses", "gpt-5.6-luna", 2), ("openai-responses", "gpt-5", 0), ("gemini", "gemini-2.5-flash", 0)]


@pytest.fixture(scope="module")
def emulator_url():
    proc = subprocess.Popen([sys.executable, "-m", "promptlint", "emulate", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout=20)
    if not ready:
        proc.kill()
        pytest.fail("the emulator printed no URL within 20 s")
    url = proc.stdout.readline().strip()
    yield url
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()


def send(provider: str, kwargs: dict, url: str):
    """The SDK response and (fresh input, cache read, cache write) tokens."""
    if provider == "anthropic":
        import anthropic

        response = anthropic.Anthropic(api_key="test", base_url=url, max_retries=0).messages.create(**kwargs)
        u = response.usage
        return response, (u.input_tokens, u.cache_read_input_tokens or 0, u.cache_creation_input_tokens or 0)
    import openai

    client = openai.OpenAI(api_key="test", base_url=f"{url}/v1", max_retries=0)
    if provider == "openai":
        response = client.chat.completions.create(**kwargs)
        u, details = response.usage, response.usage.prompt_tokens_details
        read, write = details.cached_tokens or 0, getattr(details, "cache_write_tokens", 0) or 0
        return response, (u.prompt_tokens - read - write, read, write)
    response = client.responses.create(**kwargs)
    u, details = response.usage, response.usage.input_tokens_details
    read, write = details.cached_tokens or 0, getattr(details, "cache_write_tokens", 0) or 0
    return response, (u.input_tokens - read - write, read, write)


def validate(provider: str, kwargs: dict) -> None:
    """The request fits the SDK's own parameter types (Gemini: its pydantic models)."""
    if provider == "anthropic":
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming as Params
    elif provider == "openai":
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming as Params
    elif provider == "openai-responses":
        from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming as Params
    else:
        from google.genai import types

        for content in kwargs["contents"]:
            types.Content.model_validate(content)
        types.GenerateContentConfig.model_validate(kwargs["config"])
        return
    assert_valid(Params, kwargs)


def tool_order_is_valid(provider: str, kwargs: dict) -> None:
    """Each provider's pairing rule: results right after their calls, first in their turn."""
    if provider == "anthropic":
        messages = kwargs["messages"]
        for i, message in enumerate(messages):
            calls = [b["id"] for b in message["content"] if isinstance(message["content"], list) and b["type"] == "tool_use"]
            if calls:
                answer = messages[i + 1]["content"]
                assert [b.get("tool_use_id") for b in answer[:len(calls)]] == calls, "tool_result must open the next message"
    elif provider == "openai":
        messages = kwargs["messages"]
        for i, message in enumerate(messages):
            calls = [c["id"] for c in message.get("tool_calls", [])]
            if calls:
                assert [m.get("tool_call_id") for m in messages[i + 1:i + 1 + len(calls)]] == calls
                assert all(m["role"] == "tool" for m in messages[i + 1:i + 1 + len(calls)])
    elif provider == "openai-responses":
        items = kwargs["input"]
        calls = [item["call_id"] for item in items if item.get("type") == "function_call"]
        outputs = [item["call_id"] for item in items if item.get("type") == "function_call_output"]
        assert calls == outputs
    else:
        contents = kwargs["contents"]
        for i, content in enumerate(contents):
            calls = [p["function_call"]["id"] for p in content["parts"] if "function_call" in p]
            if calls:
                answers = contents[i + 1]["parts"]
                assert [p["function_response"]["id"] for p in answers[:len(calls)]] == calls


def markers(kwargs: dict) -> int:
    text = json.dumps(dict(kwargs))
    return text.count('"cache_control"') + text.count('"prompt_cache_breakpoint"')


def run_session(provider: str, model: str, rolling: int, url: str | None):
    contract = agent_contract()
    session = contract.session(workspace="repo: orbit-api, branch main", family="sess-1")
    history: list = [{"role": "user", "content": "Deploy orbit-api to staging."}]
    memory = "- staging is eu-west-1"
    rows, prefixes, requests = [], set(), []
    for turn in range(1, TURNS + 1):
        if turn in (4, 8):
            memory += f"\n- learned on turn {turn}: health endpoint is /healthz"
        skills = [DEPLOY] + ([GIT] if turn >= 5 else []) + ([CALENDAR] if turn == 3 else [])
        ttl = {"anthropic": "1h", "gemini": "600s"}.get(provider)
        request = session.render(provider, model, turn={"user_md": "Name: Dana. Prefers short answers.",
                                                         "memory_md": memory},
                                 messages=history, skills=skills, rolling_breakpoints=rolling, ttl=ttl,
                                 rolling_ttl="5m" if provider == "anthropic" else None, max_tokens=256)
        validate(provider, request)
        tool_order_is_valid(provider, request)
        assert markers(request) <= 4
        prefixes.add(request.prefix.sha256)
        requests.append(request)
        if url is not None:
            response, usage = send(provider, dict(request), url)
            rows.append(usage)
            reply = reply_turns(provider, response)
        else:
            reply = [{"role": "assistant", "content": "Acknowledged."}]
        history = request.history() + reply
        if turn % 2:  # the model asks for a tool; the next request carries its result
            history.append({"role": "assistant", "content": [
                {"type": "tool_call", "id": f"call_{turn}", "name": "run_tests", "arguments": {"path": "tests/", "limit": turn}}]})
            history = neutral_turns(history)
            history.append({"role": "user", "content": [
                {"type": "tool_result", "tool_call_id": f"call_{turn}", "content": f"{turn} passed, 0 failed"}]})
        else:
            history.append({"role": "user", "content": f"Next step {turn}?"})
    return session, requests, rows, prefixes


@pytest.mark.parametrize("provider,model,rolling", ROUTES, ids=[f"{p}-{m}" for p, m, _ in ROUTES])
def test_ten_turn_agent_session(provider, model, rolling, emulator_url):
    url = emulator_url if provider != "gemini" else None
    session, requests, rows, prefixes = run_session(provider, model, rolling, url)
    assert len(prefixes) == 1, "the stable prefix hash changed during the session"
    # Skills: the pre-loaded one is marked and never resent; the re-sent one is charged once.
    last = requests[-1]
    assert last.prefix.preloaded == ("a-calendar",)
    assert "a-calendar [preloaded]" in json.dumps(dict(last))
    loads = {load.name: load for load in requests[2].skills}
    assert loads["a-calendar"].load_reason == "always" and not loads["a-calendar"].sent
    assert loads["b-deploy-runbook"].sent and loads["b-deploy-runbook"].charged == 0
    assert session.activated == ["b-deploy-runbook", "c-git-workflow"]
    # Tool calls and results pass through intact into the last request's history.
    turns = last.history()
    calls = [p for t in turns if isinstance(t["content"], list) for p in t["content"] if p["type"] == "tool_call"]
    results = [p for t in turns if isinstance(t["content"], list) for p in t["content"] if p["type"] == "tool_result"]
    assert [c["arguments"] for c in calls] == [{"path": "tests/", "limit": n} for n in (1, 3, 5, 7, 9)]
    assert [r["content"] for r in results] == [f"{n} passed, 0 failed" for n in (1, 3, 5, 7, 9)]
    assert all(r["name"] == "run_tests" for r in results)
    if url is None:
        return
    fresh, read, write = (sum(column) for column in zip(*rows))
    share = write / (fresh + read + write)
    print(f"\n{provider} {model} rolling={rolling}: breakpoints {last.prefix.breakpoints}; reads per turn "
          f"{[r for _, r, _ in rows]}; writes per turn {[w for _, _, w in rows]}; write share {share:.3f}")
    assert all(r > 0 for _, r, _ in rows[1:]), f"a turn after the first read nothing: {rows}"
    assert share <= 1 / TURNS, f"write share {share:.3f} above 1/{TURNS}: {rows}"


def test_history_from_one_renderer_renders_on_every_other():
    _, requests, _, _ = run_session("anthropic", "claude-haiku-4-5", 1, None)
    history = requests[-1].history()
    session = agent_contract().session(workspace="w")
    for provider, model, rolling in ROUTES:
        request = session.render(provider, model, messages=history, rolling_breakpoints=rolling, turn={"memory_md": "m"})
        validate(provider, request)
        tool_order_is_valid(provider, request)
        assert request.history() == history


def test_the_golden_gate_names_what_changed_for_every_kind_of_stable_change():
    golden = golden_document(agent_contract())
    persona = compare(agent_contract(persona="You are Orbit, a reckless coding agent."), golden)
    assert "layer 'persona' changed at byte offset 17" in persona[0].message
    bumped = compare(agent_contract(version="px2", persona="You are Orbit, a reckless coding agent."), golden)
    assert "version was bumped (px1 -> px2)" in bumped[0].message
    body = compare(agent_contract(calendar=Skill("a-calendar", "Dates and time zones.", "Use UTC everywhere.")), golden)
    assert "body of pre-loaded skill 'a-calendar'" in body[0].message and "byte offset 0" in body[0].message
    model = agent_contract()
    object.__setattr__(model, "models", {**model.models, "anthropic": "claude-sonnet-4-5"})
    changed = compare(model, golden)
    assert any("claude-haiku-4-5 -> claude-sonnet-4-5" in m.message and "floor 4096 -> 1024" in m.message for m in changed)
