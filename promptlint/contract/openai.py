"""OpenAI Chat Completions and Responses: stable instructions first, volatile context late.

Models before GPT-5.6 cache the longest automatic prefix; GPT-5.6 and later cache only at
breakpoints, so for those the stable blocks carry ``prompt_cache_breakpoint`` and the request
sets ``prompt_cache_options`` to explicit mode (the implicit breakpoint would sit on the
per-request context and pay for a write that is never read).
"""

from __future__ import annotations

import re
from typing import Any

from promptlint import providers
from promptlint.contract.contract import Assembly, RenderedRequest, build_report
from promptlint.contract.layers import canonical_json, sha256_hex

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


def _finish(assembly: Assembly, kwargs: dict[str, Any], key: str, ephemeral: tuple[int, ...],
            document: dict[str, Any], rendered_tools: dict[str, Any], breakpoints: list[str]) -> RenderedRequest:
    request = RenderedRequest(kwargs)
    request.provider, request.model = assembly.provider, assembly.model
    request.ephemeral, request.cache_create = ephemeral, None
    request.conversation_start = len(document["messages" if "messages" in document else "input"])
    request.messages_key = "messages" if "messages" in kwargs else "input"
    request.prefix = build_report(assembly, document, rendered_tools, breakpoints, cache_key=key)
    return request


def _rolling(items: list[dict[str, Any]], count: int, part_type: str, marker: dict[str, str]) -> list[int]:
    """Put breakpoints on the last ``count`` user messages (never on assistant output)."""
    marked: list[int] = []
    for index in range(len(items) - 1, -1, -1):
        if len(marked) == count:
            break
        message = items[index]
        # Never on assistant output (a 400) nor on an empty text block.
        if message["role"] != "user" or not isinstance(message["content"], str) or not message["content"]:
            continue
        items[index] = {"role": "user", "content": [{"type": part_type, "text": message["content"], "prompt_cache_breakpoint": marker}]}
        marked.append(index)
    return sorted(marked)


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
    before, last = assembly.split_history()
    messages = stable + [dict(m) for m in before]
    if explicit:
        slots = providers.max_breakpoints("openai") - len(breakpoints)
        marked = _rolling(messages, min(assembly.rolling_breakpoints, slots), "text", marker)
        marked = [i for i in marked if i >= len(stable)]
        rolling_points = [f"messages[{i}]" for i in marked]
    else:
        rolling_points = []
    ephemeral: tuple[int, ...] = ()
    if assembly.context_text:
        ephemeral = (len(messages),)
        messages.append({"role": "user", "content": assembly.context_text})
    messages.extend(dict(m) for m in last)
    key = prompt_cache_key(assembly)
    kwargs: dict[str, Any] = {"model": assembly.model, "messages": messages}
    if tools:
        kwargs["tools"] = tools
    kwargs["prompt_cache_key"] = key
    if explicit:
        kwargs["prompt_cache_options"] = {"mode": "explicit", "ttl": assembly.ttl or "30m"}
    document = {"model": assembly.model, "tools": tools, "messages": stable}
    return _finish(assembly, kwargs, key, ephemeral, document, rendered_tools, breakpoints + rolling_points)


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
    before, last = assembly.split_history()
    items = stable + [dict(m) for m in before]
    rolling_points: list[str] = []
    if explicit:
        slots = providers.max_breakpoints("openai") - len(breakpoints)
        marked = [i for i in _rolling(items, min(assembly.rolling_breakpoints, slots), "input_text", marker) if i >= len(stable)]
        rolling_points = [f"input[{i}]" for i in marked]
    ephemeral: tuple[int, ...] = ()
    if assembly.context_text:
        ephemeral = (len(items),)
        items.append({"role": "user", "content": assembly.context_text})
    items.extend(dict(m) for m in last)
    kwargs["input"] = items
    if tools:
        kwargs["tools"] = tools
    key = prompt_cache_key(assembly)
    kwargs["prompt_cache_key"] = key
    if explicit:
        kwargs["prompt_cache_options"] = {"mode": "explicit", "ttl": assembly.ttl or "30m"}
    document = {"model": assembly.model, "tools": tools, "instructions": kwargs.get("instructions"), "input": stable}
    return _finish(assembly, kwargs, key, ephemeral, document, rendered_tools, breakpoints + rolling_points)
