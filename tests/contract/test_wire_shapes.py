"""Rendered requests are accepted by the real SDKs (request building through a mock transport)."""

from __future__ import annotations

import json

try:  # recent SDK releases moved to the httpx2 fork; older ones use httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx
import pytest
import collections.abc
import types
import typing

import typing_extensions

HISTORY = [
    {"role": "user", "content": "Where is invoice INV-7?"},
    {"role": "assistant", "content": "Let me look."},
    {"role": "user", "content": "Thanks, and can I get a refund?"},
]


def _render(example, provider, model=None):
    session = example.contract.session(customer="acc_42 Team plan", family="root-1")
    return session.render(provider, model, turn={"memory": "prefers email"}, messages=HISTORY,
                          skills=[example.SKILLS[0]], rolling_breakpoints=3)


def conforms(value, annotation) -> bool:
    """Whether ``value`` fits an SDK param annotation: TypedDict keys (required, no unknown),
    Literals, unions, iterables and scalars, read from the SDK's own type hints."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is typing.Any or annotation is object:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in args)
    if origin in (typing.Required, typing.NotRequired, typing_extensions.Required,
                  typing_extensions.NotRequired, typing.Annotated, typing_extensions.Annotated):
        return conforms(value, args[0])
    if origin in (typing.Literal, typing_extensions.Literal):
        return value in args
    if typing_extensions.is_typeddict(annotation):
        if not isinstance(value, dict):
            return False
        hints = typing_extensions.get_type_hints(annotation, include_extras=True)
        if set(value) - set(hints) or annotation.__required_keys__ - set(value):
            return False
        return all(conforms(item, hints[key]) for key, item in value.items())
    if origin in (dict, collections.abc.Mapping) or annotation in (dict, typing.Dict):
        return isinstance(value, dict) and (not args or all(conforms(v, args[1]) for v in value.values()))
    if origin in (list, tuple, collections.abc.Iterable, collections.abc.Sequence, typing.Iterable, typing.List, typing.Sequence):
        return isinstance(value, (list, tuple)) and (not args or all(conforms(v, args[0]) for v in value))
    if annotation is type(None):
        return value is None
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    if isinstance(annotation, typing.TypeVar) or isinstance(annotation, typing.ForwardRef):
        return True
    return True  # aliases the walker does not model (e.g. pydantic types) are not checked


def assert_valid(params_type, kwargs):
    """``kwargs`` fits the SDK's own request TypedDict (pydantic cannot: its lazy iterators panic)."""
    assert conforms(dict(kwargs), params_type)


class Recorder:
    """An httpx transport that records the request body and answers with ``reply``."""

    def __init__(self, reply):
        self.reply = reply
        self.bodies = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=self.reply)


ANTHROPIC_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
}


def test_anthropic_kwargs_validate_against_message_create_params(example):
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    assert_valid(MessageCreateParamsNonStreaming, _render(example, "anthropic"))


def test_anthropic_sdk_sends_the_rendered_request_unchanged(example):
    import anthropic

    recorder = Recorder(ANTHROPIC_REPLY)
    client = anthropic.Anthropic(api_key="x", base_url="http://127.0.0.1:9",
                                 http_client=httpx.Client(transport=httpx.MockTransport(recorder)))
    kwargs = _render(example, "anthropic")
    client.messages.create(**kwargs)
    assert recorder.bodies == [json.loads(json.dumps(dict(kwargs)))]


CHAT_REPLY = {
    "id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4.1",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-5.6-luna"])
def test_openai_chat_kwargs_validate_and_send(example, model):
    import openai
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    kwargs = _render(example, "openai", model)
    assert_valid(CompletionCreateParamsNonStreaming, kwargs)
    recorder = Recorder(CHAT_REPLY)
    client = openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(recorder)))
    client.chat.completions.create(**kwargs)
    assert recorder.bodies == [json.loads(json.dumps(dict(kwargs)))]


RESPONSES_REPLY = {
    "id": "r1", "object": "response", "created_at": 0, "model": "gpt-5.6-luna", "status": "completed",
    "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
}


@pytest.mark.parametrize("model", ["gpt-5", "gpt-5.6-luna"])
def test_openai_responses_kwargs_validate_and_send(example, model):
    import openai
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    kwargs = _render(example, "openai-responses", model)
    assert_valid(ResponseCreateParamsNonStreaming, kwargs)
    recorder = Recorder(RESPONSES_REPLY)
    client = openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(recorder)))
    client.responses.create(**kwargs)
    assert recorder.bodies == [json.loads(json.dumps(dict(kwargs)))]


def test_gemini_config_builds_generate_content_config(example):
    from google.genai import types

    request = _render(example, "gemini")
    config = types.GenerateContentConfig(**request["config"])
    assert config.system_instruction == request["config"]["system_instruction"]
    assert [d.name for d in config.tools[0].function_declarations] == ["lookup_account", "list_invoices", "open_ticket"]
    contents = [types.Content(**c) for c in request["contents"]]
    assert [c.role for c in contents] == ["user", "model", "user"]
    assert contents[-1].parts[-1].text.startswith('<context name="memory">')  # the context closes the user's turn


def test_gemini_cache_split_builds_create_cached_content_config(example):
    from google.genai import types

    request = _render(example, "gemini")
    cache_config = types.CreateCachedContentConfig(**request.cache_create["config"])
    assert cache_config.system_instruction == request["config"]["system_instruction"]
    per_request = request.with_cached_content("cachedContents/abc")
    config = types.GenerateContentConfig(**per_request["config"])
    assert config.cached_content == "cachedContents/abc"
    assert config.system_instruction is None and config.tools is None


def test_the_shape_check_rejects_an_unknown_block_field(example):
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    kwargs = dict(_render(example, "anthropic"))
    kwargs["system"] = [{**kwargs["system"][0], "cache": {"type": "ephemeral"}}]
    assert not conforms(kwargs, MessageCreateParamsNonStreaming)


def test_the_shape_check_rejects_a_wrong_ttl_literal(example):
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    kwargs = dict(_render(example, "anthropic"))
    kwargs["system"] = [{**kwargs["system"][0], "cache_control": {"type": "ephemeral", "ttl": "2h"}}]
    assert not conforms(kwargs, MessageCreateParamsNonStreaming)


def _second_turn(example, provider, model=None):
    session = example.contract.session(customer="acc_42 Team plan", family="root-1")
    first = session.render(provider, model, turn={"memory": "prefers email"}, messages=HISTORY, rolling_breakpoints=3)
    history = first.history() + [{"role": "assistant", "content": "Refund opened."}, {"role": "user", "content": "Thanks!"}]
    return session.render(provider, model, turn={"memory": "refund opened"}, messages=history, rolling_breakpoints=3)


def test_a_second_anthropic_turn_from_history_is_accepted_by_the_sdk(example):
    import anthropic
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    kwargs = _second_turn(example, "anthropic")
    assert_valid(MessageCreateParamsNonStreaming, kwargs)
    recorder = Recorder(ANTHROPIC_REPLY)
    client = anthropic.Anthropic(api_key="x", base_url="http://127.0.0.1:9",
                                 http_client=httpx.Client(transport=httpx.MockTransport(recorder)))
    client.messages.create(**kwargs)
    assert json.dumps(recorder.bodies[0]).count('"cache_control"') == 4


@pytest.mark.parametrize("provider,params", [
    ("openai", "openai.types.chat.completion_create_params:CompletionCreateParamsNonStreaming"),
    ("openai-responses", "openai.types.responses.response_create_params:ResponseCreateParamsNonStreaming"),
])
def test_a_second_gpt_5_6_turn_from_history_fits_the_sdk_params(example, provider, params):
    import importlib

    module, name = params.split(":")
    kwargs = _second_turn(example, provider, "gpt-5.6-luna")
    assert_valid(getattr(importlib.import_module(module), name), kwargs)
    assert json.dumps(dict(kwargs)).count('"prompt_cache_breakpoint"') <= 4


def test_a_second_gemini_turn_from_history_builds_sdk_contents(example):
    from google.genai import types

    request = _second_turn(example, "gemini")
    assert [types.Content(**c).role for c in request["contents"]] == ["user", "model", "user", "model", "user"]
