"""Per-provider request rules: how a request body becomes its prefix blocks, and the 400s on markers.

Anthropic (Messages API): the prefix is tools → speed → system → settings → messages;
``tool_choice``, ``thinking`` and ``output_config`` (and the image count) form a zero-token
``settings`` block between system and messages, so changing them invalidates the messages
only; ``speed`` sits between tools and system. A ``cache_control`` marker on a block is a
breakpoint; a top-level one marks the last block. More than ``max_breakpoints`` (4) is a 400,
and so is a ``1h`` marker after a ``5m`` one, or a top-level TTL that differs from the last block's.

OpenAI (Chat Completions / Responses): tools and output schema, instructions, then each
message's content parts; a string and a one-part text list are the same bytes. A
``prompt_cache_breakpoint`` on a tool, on assistant output or on a block type that cannot
carry one is a 400.

Gemini: tools, the system instruction, then each part of each content, from the REST body or
the SDK's keyword arguments (:func:`gemini_request`).
"""

from __future__ import annotations

from typing import Any

from promptlint import providers
from promptlint.caching.errors import CacheRequestError
from promptlint.caching.prefix import Block, block_bytes, count_tokens

__all__ = ["TTL_SECONDS", "anthropic_blocks", "check_anthropic_breakpoints", "gemini_blocks", "gemini_request",
           "lookback_positions", "openai_blocks"]

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0, "30m": 1800.0}
"""Wire names of cache lifetimes and their length (the names are the definition)."""

OPENAI_IN_MEMORY_SECONDS = 600.0
"""Pre-5.6 ``in_memory`` retention: evicted after ~5-10 minutes idle [O-PC]; the upper end."""

OPENAI_BREAKPOINT_TYPES = {
    "chat": frozenset({"text", "image_url", "input_audio", "file", "refusal"}),
    "responses": frozenset({"input_text", "input_image", "input_file"}),
}
"""Content block types that may carry ``prompt_cache_breakpoint`` (GPT-5.6+) [O-PC]."""

MESSAGE_LEVEL_SETTINGS = ("tool_choice", "thinking", "output_config")
"""Anthropic request fields whose change invalidates the ``messages`` level but not tools or
system [A-PC] "What invalidates what". They enter the prefix as one zero-token ``settings``
block between the system blocks and the messages."""

SPEED_SETTINGS = ("speed",)
"""Anthropic request fields whose change invalidates system and messages but not tools [A-PC]; they
enter the prefix as a zero-token ``speed`` block between the tools and the system blocks."""

IMAGE_TYPES = frozenset({"image", "document"})
"""Anthropic block types counted as images: adding or removing one anywhere invalidates the
``messages`` level [A-PC], so their count is part of the ``settings`` block."""


def strip_marker(block: dict) -> dict:
    """The block without its cache marker (Anthropic ``cache_control``, OpenAI ``prompt_cache_breakpoint``)."""
    return {k: v for k, v in block.items() if k not in ("cache_control", "prompt_cache_breakpoint")}


def dotted(where: str) -> str:
    """``messages[2].content[1]`` as the APIs' error messages spell it: ``messages.2.content.1``."""
    return where.replace("[", ".").replace("]", "")


# ---------------------------------------------------------------------------------- Anthropic
def anthropic_blocks(body: dict) -> list[Block]:
    """The request's cacheable blocks in prefix order (tools, speed, system, settings, messages).

    Raises :class:`CacheRequestError` for a top-level ``cache_control`` whose TTL differs from
    the one already on the last block (the real API's 400).
    """
    model = str(body.get("model", ""))
    blocks: list[Block] = []

    def add(where: str, block: Any, role: str | None = None) -> None:
        marker = None
        if isinstance(block, dict) and isinstance(block.get("cache_control"), dict):
            marker = str(block["cache_control"].get("ttl") or "5m")
            block = strip_marker(block)
        kind = str(block.get("type", "")) if isinstance(block, dict) else ""
        if role is not None and isinstance(block, dict):
            block = {**block, "role": role}  # the same text as user or assistant is a different prefix
        data = block_bytes(block)
        blocks.append(Block(where, data, count_tokens(data, "anthropic", model), marker, kind))

    tools = body.get("tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        add(f"tools[{i}]", tool)
    blocks.append(Block("speed", block_bytes({k: body[k] for k in SPEED_SETTINGS if k in body}), 0, None, "settings"))
    system = body.get("system")
    if isinstance(system, str) and system:
        add("system[0]", {"type": "text", "text": system})
    elif isinstance(system, list):
        for i, block in enumerate(system):
            add(f"system[{i}]", block)
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    if messages:
        settings = {key: body[key] for key in MESSAGE_LEVEL_SETTINGS if key in body}
        images = sum(1 for m in messages if isinstance(m, dict) and isinstance(m.get("content"), list)
                     for b in m["content"] if isinstance(b, dict) and b.get("type") in IMAGE_TYPES)
        if images:
            settings["images"] = images
        blocks.append(Block("settings", block_bytes(settings), 0, None, "settings"))
    for m, message in enumerate(messages):
        if not isinstance(message, dict):
            raise CacheRequestError(f"messages.{m}: Input should be a valid dictionary", f"messages.{m}")
        content, role = message.get("content"), str(message.get("role"))
        if isinstance(content, str):
            add(f"messages[{m}].content[0]", {"type": "text", "text": content}, role)
        elif isinstance(content, list):
            for i, block in enumerate(content):
                add(f"messages[{m}].content[{i}]", block, role)
    auto = body.get("cache_control")
    target = next((b for b in reversed(blocks) if b.kind != "settings"), None)
    if isinstance(auto, dict) and target is not None:
        ttl = str(auto.get("ttl") or "5m")
        if target.breakpoint not in (None, ttl):
            raise CacheRequestError(f"Top-level cache_control has ttl='{ttl}' but the target block already has "
                                    f"cache_control with ttl='{target.breakpoint}'")
        target.breakpoint = ttl
    return blocks


def lookback_positions(blocks: list[Block]) -> list[int]:
    """Lookback position of each block: a run of tool_use (or tool_result) blocks is one position,
    and the ``speed`` and ``settings`` pseudo-blocks take none."""
    out, position = [], -1
    for i, block in enumerate(blocks):
        same_run = i > 0 and block.kind in ("tool_use", "tool_result") and blocks[i - 1].kind == block.kind
        position += 0 if same_run or block.kind == "settings" else 1
        out.append(position)
    return out


def check_anthropic_breakpoints(blocks: list[Block]) -> list[int]:
    marked = [i for i, b in enumerate(blocks) if b.breakpoint]
    limit = providers.max_breakpoints("anthropic")
    if len(marked) > limit:
        raise CacheRequestError(f"A maximum of {limit} blocks with cache_control may be provided. Found {len(marked)}.")
    seen_5m = False
    for i in marked:
        ttl = blocks[i].breakpoint
        if ttl not in TTL_SECONDS or ttl == "30m":
            raise CacheRequestError(f"{dotted(blocks[i].where)}.cache_control.ttl: Input should be '5m' or '1h'")
        if ttl == "1h" and seen_5m:
            raise CacheRequestError(
                f"{dotted(blocks[i].where)}.cache_control.ttl: a ttl='1h' cache_control block must not come after "
                "a ttl='5m' cache_control block. Note that blocks are processed in the following order: "
                "`tools`, `system`, `messages`.")
        seen_5m = seen_5m or ttl == "5m"
    return marked


# ------------------------------------------------------------------------------------- OpenAI
_TEXT_PARTS = ("text", "input_text")


def openai_blocks(body: dict) -> list[Block]:
    """OpenAI prefix units in order: tools and output schema, instructions, then each message's
    content blocks. A string content is one text part, and a text part is its text whatever its
    ``type`` spelling: the API renders ``"x"`` and ``[{"type": "text", "text": "x"}]`` as the same
    prompt, so they are the same bytes here.

    Raises :class:`CacheRequestError` for a ``prompt_cache_breakpoint`` where the API rejects
    one (on a tool, on assistant output, on a block type that cannot carry it).
    """
    model = str(body.get("model", ""))
    api = "chat" if "messages" in body else "responses"
    blocks: list[Block] = []

    def add(where: str, value: Any, kind: str, marked: bool = False, boundary: bool = False) -> None:
        data = block_bytes(value)
        blocks.append(Block(where, data, count_tokens(data, "openai", model), "explicit" if marked else None, kind, boundary))

    for name in ("tools", "response_format", "text"):
        if body.get(name):
            for i, tool in enumerate(body[name] if name == "tools" and isinstance(body[name], list) else []):
                if isinstance(tool, dict) and "prompt_cache_breakpoint" in tool:
                    raise CacheRequestError("prompt_cache_breakpoint is not supported on tool definitions",
                                            f"tools[{i}].prompt_cache_breakpoint")
            add(name, {name: body[name]}, name)
    if body.get("instructions"):
        add("instructions", {"instructions": body["instructions"]}, "instructions")
    field_name = "messages" if api == "chat" else "input"
    items = body.get(field_name)
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for m, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            raise CacheRequestError(f"Invalid type for '{field_name}[{m}]': expected an object", f"{field_name}[{m}]")
        role = str(item.get("role") or item.get("type") or "")
        turn = role in ("user", "tool", "function_call_output")
        header = {k: v for k, v in item.items() if k != "content"}
        content = item.get("content")
        if isinstance(content, str):
            add(f"{field_name}[{m}]", {**header, "part": {"text": content}}, role, boundary=turn)
            continue
        if not isinstance(content, list) or not content:
            add(f"{field_name}[{m}]", item, role, boundary=turn)
            continue
        for i, part in enumerate(content):
            where = f"{field_name}[{m}].content[{i}]"
            marked = isinstance(part, dict) and "prompt_cache_breakpoint" in part
            if marked and (role == "assistant" or part.get("type") not in OPENAI_BREAKPOINT_TYPES[api]):
                raise CacheRequestError(
                    f"prompt_cache_breakpoint is not supported on {role} content of type {part.get('type')!r}",
                    f"{where}.prompt_cache_breakpoint")
            value = strip_marker(part) if isinstance(part, dict) else part
            if isinstance(value, dict) and value.get("type") in _TEXT_PARTS:
                value = {k: v for k, v in value.items() if k != "type"}  # a text part is its text, as a string is
            add(where, {**header, "part": value}, role, marked, turn and i == len(content) - 1)
    return blocks


# ------------------------------------------------------------------------------------- Gemini
def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def gemini_request(body: dict) -> dict:
    """A Gemini request in one shape, from either the REST body (``systemInstruction``,
    ``cachedContent``) or the SDK's ``generate_content`` keyword arguments (``config``):
    ``{"model", "system", "tools", "contents", "cached_content"}``. Strings become text parts."""
    config = body.get("config") if isinstance(body.get("config"), dict) else {}
    model = str(_first(body.get("model"), ""))
    model = model[len("models/"):] if model.startswith("models/") else model
    system = _first(body.get("systemInstruction"), body.get("system_instruction"), config.get("system_instruction"),
                    config.get("systemInstruction"))
    tools = _first(body.get("tools"), config.get("tools"))
    cached = _first(body.get("cachedContent"), body.get("cached_content"), config.get("cached_content"),
                    config.get("cachedContent"))
    contents = body.get("contents")
    if isinstance(contents, str):
        contents = [contents]
    if isinstance(contents, list):
        contents = [{"role": "user", "parts": [{"text": c}]} if isinstance(c, str) else c for c in contents]
    return {"model": model, "system": system, "tools": tools, "contents": contents, "cached_content": cached}


def _system_parts(system: Any) -> list:
    if isinstance(system, str):
        return [{"text": system}]
    if isinstance(system, dict):
        return system.get("parts") if isinstance(system.get("parts"), list) else [system]
    return system if isinstance(system, list) else []


def gemini_blocks(request: dict) -> list[Block]:
    """Prefix units of a normalised Gemini request (:func:`gemini_request`): each tool, the system
    instruction, then each part of each content."""
    model = request["model"]
    blocks: list[Block] = []

    def add(where: str, value: Any, kind: str) -> None:
        data = block_bytes(value)
        blocks.append(Block(where, data, count_tokens(data, "gemini", model), None, kind))

    for i, tool in enumerate(request["tools"] if isinstance(request["tools"], list) else []):
        add(f"tools[{i}]", tool, "tools")
    parts = _system_parts(request["system"])
    if parts:
        add("system_instruction", {"system_instruction": parts}, "system")
    for c, content in enumerate(request["contents"] if isinstance(request["contents"], list) else []):
        role = str(content.get("role") or "user") if isinstance(content, dict) else "user"
        items = content.get("parts") if isinstance(content, dict) else None
        for p, part in enumerate(items if isinstance(items, list) else []):
            add(f"contents[{c}].parts[{p}]", {"role": role, "part": part}, role)
    return blocks
