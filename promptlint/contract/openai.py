"""OpenAI Chat Completions and Responses: stable instructions first, volatile context late.

Models before GPT-5.6 cache the longest automatic prefix; GPT-5.6 and later cache only at
breakpoints, so for those the stable blocks carry ``prompt_cache_breakpoint`` and the request
sets ``prompt_cache_options`` to explicit mode (the implicit breakpoint would sit on the
per-request context and pay for a write that is never read).
"""

from __future__ import annotations

import json
import re
from typing import Any

from promptlint import providers
from promptlint.contract.layers import canonical_json, sha256_hex
from promptlint.contract.request import Assembly, RenderedRequest, build_report, finish

CACHE_KEY_MAX = 64
"""OpenAI's documented maximum for identifier-like strings; the key stays well under it."""


def prompt_cache_key(assembly: Assembly) -> str:
    """``<name>:<version>:<stable-hash>:<family-hash>`` from stable surfaces only.

    The stable hash covers the tools and the contract text; the family (a fork-root session
    id, possibly user-linked) enters only as a short hash, so no PII reaches the provider.
    """
    stable = sha256_hex(canonical_json([[spec.neutral() for _, spec in assembly.tools], assembly.contract_text]))
    family = sha256_hex(assembly.family.encode("utf-8"))
    name = re.sub(r"[^a-z0-9._-]", "-", assembly.contract.name.lower())[:24]
    version = re.sub(r"[^A-Za-z0-9._-]", "-", assembly.contract.version)[:12]
    return f"{name}:{version}:{stable[:10]}:{family[:10]}"[:CACHE_KEY_MAX]


def _explicit(assembly: Assembly) -> bool:
    return providers.uses_explicit_breakpoints(assembly.model)


def _arguments(part: dict[str, Any]) -> str:
    return json.dumps(part["arguments"], ensure_ascii=False, separators=(",", ":"))


def _text_content(parts: list[dict[str, Any]], part_type: str, as_list: bool) -> Any:
    """Text parts as OpenAI content: a string, or (GPT-5.6+, so markers can come and go without
    changing the message's shape) always a list of text parts."""
    if not as_list and len(parts) == 1:
        return parts[0]["text"]
    return [{"type": part_type, "text": part["text"]} for part in parts]


def _parts(turn: dict[str, Any]) -> list[dict[str, Any]]:
    content = turn["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _chat_items(turn: dict[str, Any], explicit: bool) -> list[dict[str, Any]]:
    """One neutral turn as Chat messages: assistant text + ``tool_calls``; ``role: "tool"`` per result."""
    parts = _parts(turn)
    texts = [p for p in parts if p["type"] == "text"]
    if turn["role"] == "assistant":
        message: dict[str, Any] = {"role": "assistant"}
        if texts:
            message["content"] = _text_content(texts, "text", False)
        calls = [{"id": p["id"], "type": "function", "function": {"name": p["name"], "arguments": _arguments(p)}}
                 for p in parts if p["type"] == "tool_call"]
        if calls:
            message["tool_calls"] = calls
        elif not texts:
            message["content"] = ""
        return [message]
    items = [{"role": "tool", "tool_call_id": p["tool_call_id"], "content": _text_content([{"text": p["content"]}], "text", explicit)}
             for p in parts if p["type"] == "tool_result"]
    if texts or not items:
        items.append({"role": "user", "content": _text_content(texts or [{"text": ""}], "text", explicit)})
    return items


def _responses_items(turn: dict[str, Any], explicit: bool) -> list[dict[str, Any]]:
    """One neutral turn as Responses input items: messages, ``function_call``, ``function_call_output``."""
    parts = _parts(turn)
    texts = [p for p in parts if p["type"] == "text"]
    items: list[dict[str, Any]] = []
    if turn["role"] == "assistant":
        if texts or not parts:
            items.append({"role": "assistant", "content": "\n\n".join(p["text"] for p in texts)})
        items.extend({"type": "function_call", "call_id": p["id"], "name": p["name"], "arguments": _arguments(p)}
                     for p in parts if p["type"] == "tool_call")
        return items
    items.extend({"type": "function_call_output", "call_id": p["tool_call_id"], "output": p["content"]}
                 for p in parts if p["type"] == "tool_result")
    if texts or not items:
        items.append({"role": "user", "content": _text_content(texts or [{"text": ""}], "input_text", explicit)})
    return items


def _rolling(items: list[dict[str, Any]], start: int, count: int, marker: dict[str, str]) -> list[int]:
    """Put breakpoints on the last text part of the last ``count`` user/tool messages from ``start``.

    Never on assistant output (a 400), on an empty text, or on a Responses function output
    (no content block can carry one). Shapes do not change: explicit-mode content is always a list.
    """
    marked: list[int] = []
    for index in range(len(items) - 1, start - 1, -1):
        if len(marked) == count:
            break
        content = items[index].get("content")
        if items[index].get("role") not in ("user", "tool") or not isinstance(content, list) or not content \
                or not content[-1].get("text"):
            continue
        items[index] = {**items[index], "content": [*content[:-1], {**content[-1], "prompt_cache_breakpoint": marker}]}
        marked.append(index)
    return sorted(marked)


def _render(assembly: Assembly, stable: list[dict[str, Any]], to_items: Any, context_item: dict[str, Any],
            key_name: str) -> tuple[list[dict[str, Any]], tuple[int, ...], list[str]]:
    """Stable items, the conversation, then the context as a last user message (after the final
    turn's tool results and text, so everything before it is next turn's cached history)."""
    explicit = _explicit(assembly)
    items = stable + [item for turn in assembly.history for item in to_items(turn, explicit)]
    rolling_points: list[str] = []
    if explicit:
        breakpoints = sum(1 for item in stable for part in item["content"] if "prompt_cache_breakpoint" in part)
        slots = providers.max_breakpoints("openai") - breakpoints
        marked = _rolling(items, len(stable), min(assembly.rolling_breakpoints, max(slots, 0)), {"mode": "explicit"})
        rolling_points = [f"{key_name}[{i}]" for i in marked]
    ephemeral: tuple[int, ...] = ()
    if assembly.context_text:
        ephemeral = (len(items),)
        items.append(context_item)
    return items, ephemeral, rolling_points


def _options(assembly: Assembly, kwargs: dict[str, Any]) -> None:
    if _explicit(assembly):
        kwargs["prompt_cache_options"] = {"mode": "explicit", "ttl": assembly.ttl or "30m"}


def render_openai_chat(assembly: Assembly) -> RenderedRequest:
    """Render for ``client.chat.completions.create``."""
    explicit = _explicit(assembly)
    marker = {"mode": "explicit"}
    rendered_tools: dict[str, list[dict[str, Any]]] = {}
    tools = []
    for layer_name, spec in assembly.tools:
        tool = {"type": "function", "function": {"name": spec.name, "description": spec.description, "parameters": dict(spec.parameters)}}
        rendered_tools.setdefault(layer_name, []).append(tool)
        tools.append(tool)
    stable: list[dict[str, Any]] = []
    breakpoints: list[str] = []
    for text in (assembly.contract_text, assembly.session_text):
        if not text:
            continue
        if explicit:
            stable.append({"role": "system", "content": [{"type": "text", "text": text, "prompt_cache_breakpoint": marker}]})
            breakpoints.append(f"messages[{len(stable) - 1}]")
        else:
            stable.append({"role": "system", "content": text})
    context = {"role": "user", "content": _text_content([{"text": assembly.context_text}], "text", explicit)}
    messages, ephemeral, rolling_points = _render(assembly, stable, _chat_items, context, "messages")
    key = prompt_cache_key(assembly)
    kwargs: dict[str, Any] = {"model": assembly.model, "messages": messages}
    if tools:
        kwargs["tools"] = tools
    if assembly.max_tokens is not None:
        kwargs["max_completion_tokens"] = assembly.max_tokens
    kwargs["prompt_cache_key"] = key
    _options(assembly, kwargs)
    document = {"model": assembly.model, "tools": tools, "messages": stable}
    prefix = build_report(assembly, document, rendered_tools, breakpoints + rolling_points, cache_key=key)
    return finish(assembly, kwargs, messages_key="messages", ephemeral=ephemeral, conversation_start=len(stable), prefix=prefix)


def render_openai_responses(assembly: Assembly) -> RenderedRequest:
    """Render for ``client.responses.create``.

    Pre-5.6 models get the contract text as ``instructions``. A breakpoint cannot sit on the
    string ``instructions``, so for GPT-5.6+ the contract text moves into a leading developer
    message whose ``input_text`` block carries the breakpoint.
    """
    explicit = _explicit(assembly)
    marker = {"mode": "explicit"}
    rendered_tools: dict[str, list[dict[str, Any]]] = {}
    tools = []
    for layer_name, spec in assembly.tools:
        tool = {"type": "function", "name": spec.name, "description": spec.description,
                "parameters": dict(spec.parameters), "strict": False}
        rendered_tools.setdefault(layer_name, []).append(tool)
        tools.append(tool)
    stable: list[dict[str, Any]] = []
    breakpoints: list[str] = []
    kwargs: dict[str, Any] = {"model": assembly.model}
    texts = [assembly.contract_text, assembly.session_text]
    if not explicit and assembly.contract_text:
        kwargs["instructions"] = assembly.contract_text
        texts = [assembly.session_text]
    for text in texts:
        if not text:
            continue
        block: dict[str, Any] = {"type": "input_text", "text": text}
        if explicit:
            block["prompt_cache_breakpoint"] = marker
            breakpoints.append(f"input[{len(stable)}]")
        stable.append({"role": "developer", "content": [block]})
    context = {"role": "user", "content": _text_content([{"text": assembly.context_text}], "input_text", explicit)}
    items, ephemeral, rolling_points = _render(assembly, stable, _responses_items, context, "input")
    kwargs["input"] = items
    if tools:
        kwargs["tools"] = tools
    if assembly.max_tokens is not None:
        kwargs["max_output_tokens"] = assembly.max_tokens
    key = prompt_cache_key(assembly)
    kwargs["prompt_cache_key"] = key
    _options(assembly, kwargs)
    document = {"model": assembly.model, "tools": tools, "instructions": kwargs.get("instructions"), "input": stable}
    prefix = build_report(assembly, document, rendered_tools, breakpoints + rolling_points, cache_key=key)
    return finish(assembly, kwargs, messages_key="input", ephemeral=ephemeral, conversation_start=len(stable), prefix=prefix)
