"""One model of provider prompt caches, shared by the emulator and the simulator.

The rules (docs/smoke.md cites the provider page for each; per-model numbers are dated data in
promptlint/providers/providers.yaml, read through ``promptlint.providers``):

Anthropic (Messages API)
- The prefix is tools → system → messages, compared byte for byte, block by block (a block's
  own keys sorted, nested JSON such as ``tool_use`` input in the order sent). ``tool_choice``,
  ``thinking`` and ``output_config`` sit between system and messages: changing them
  invalidates the messages only.
- A ``cache_control`` marker on a block is a breakpoint; a top-level ``cache_control`` marks
  the last block (automatic caching). More than ``max_breakpoints`` (4) is a 400, and so is a
  ``1h`` marker after a ``5m`` one, or a top-level TTL that differs from the last block's.
- A breakpoint writes one entry: the hash of the prefix ending at that block, if the prefix
  reaches the model's minimum cacheable length. Nothing is written at other positions; below
  the minimum the request still succeeds and caches nothing.
- On read, each breakpoint walks back at most ``lookback_blocks`` (20) positions (itself
  first; a run of consecutive ``tool_use`` or ``tool_result`` blocks is one position) for an
  entry an *earlier* request wrote; the longest hit is read.
- Entries live for their TTL (5 minutes or 1 hour) from the request that wrote or last read them.
- Usage: ``cache_read_input_tokens`` (up to the hit), ``cache_creation_input_tokens`` (from the
  hit to the last breakpoint that wrote), ``input_tokens`` (the rest).

OpenAI (Chat Completions / Responses)
- Before GPT-5.6, automatic: the longest byte prefix that an earlier live request with the same
  model and ``prompt_cache_key`` sent is read, rounded down to 1,024 + a multiple of 128
  tokens; nothing under 1,024 is read; writes are free.
- GPT-5.6 and later: only prefixes ending exactly at a breakpoint are cached. Breakpoints are
  explicit ``prompt_cache_breakpoint`` content blocks plus, unless ``prompt_cache_options.mode``
  is ``explicit``, an implicit one at the latest user/tool message (earlier user/tool messages
  are earlier turns' implicit breakpoints: read, never written). Reads look at the latest
  ``read_window_breakpoints``; at most ``max_breakpoints`` (4) new writes per request, the
  implicit one taking a slot; writes are reported as ``cache_write_tokens``. A marker on a
  tool, on assistant output or on a block type that cannot carry one is a 400.

The clock is injectable, so TTL expiry is testable without sleeping. A miss that an expired
entry explains says so in ``Usage.note``; :func:`first_difference` and :func:`cache_miss_reason`
say where two requests' prefixes part.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import threading
import time
from collections import OrderedDict
from datetime import datetime
from dataclasses import dataclass, field
from typing import Any, Callable

from promptlint import providers
from promptlint.caching import rejections
from promptlint.caching.errors import CacheRequestError

__all__ = ["Block", "CacheModel", "CacheRequestError", "Usage", "anthropic_blocks", "cache_miss_reason", "cost_usd",
           "first_difference", "gemini_blocks", "gemini_request", "openai_blocks", "prefix_level"]

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

KEPT_PROMPTS_PER_KEY = 16
"""Automatic-caching prompts (OpenAI before 5.6, Gemini implicit) remembered per cache key."""
KEPT_KEYS = 1024
"""Automatic-caching keys ((provider, model, prompt_cache_key)) remembered; the least recently used go first."""
KEPT_ENTRIES = 8192
"""Breakpoint entries kept in all; past this, expired entries go first, then those expiring soonest.
Together with the two above this bounds the model's memory whatever the traffic (real caches evict too)."""
_EXPLAIN_EXPIRY_SECONDS = 3600.0  # how long an expired entry still explains a miss


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def block_bytes(block: Any) -> bytes:
    """The bytes a block is compared by: its own keys sorted, everything inside them as sent.

    The APIs parse a block's fields (``type``, ``text``, ...), so their order cannot matter;
    nested JSON (``tool_use`` input, tool schemas, tool arguments) is rendered into the prompt
    as the client wrote it, so its key order does ([A-PC]: key order in ``tool_use`` input must
    be stable). Fixed separators, UTF-8.
    """
    if not isinstance(block, dict):
        return _json(block).encode("utf-8")
    return ("{" + ",".join(f"{_json(str(k))}:{_json(block[k])}" for k in sorted(block)) + "}").encode("utf-8")


@dataclass
class Block:
    """One cacheable position of a request's prefix."""

    where: str  # "tools[0]", "system[1]", "messages[2].content[0]"
    data: bytes  # block_bytes() of the block without its cache marker
    tokens: int
    breakpoint: str | None = None  # the marker's TTL (Anthropic) or "explicit" (OpenAI)
    kind: str = ""  # block type ("text", "tool_use", ...) or message role for OpenAI
    turn_boundary: bool = False  # OpenAI: the last block of a user/tool message


@dataclass
class Usage:
    """What one request read, wrote and paid as fresh input.

    The three counts are disjoint and add up to the whole prompt, for every provider:
    ``input_tokens`` is fresh input only (Anthropic's ``input_tokens``; OpenAI's prompt tokens
    minus ``cached_tokens`` and ``cache_write_tokens``). ``cache_write_1h`` is the part of
    ``cache_write`` written with a one-hour TTL.
    """

    input_tokens: int
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    hit_at: str | None = None
    note: str = ""


@dataclass
class _Entry:
    expires: float
    ttl: str


@dataclass
class _Prompt:
    data: bytes
    expires: float


def _strip_marker(block: dict) -> dict:
    return {k: v for k, v in block.items() if k not in ("cache_control", "prompt_cache_breakpoint")}


def _count(data: bytes, provider: str, model: str) -> int:
    return providers.count_tokens(data.decode("utf-8", "ignore"), provider, model).n


def _dotted(where: str) -> str:
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
            block = _strip_marker(block)
        kind = str(block.get("type", "")) if isinstance(block, dict) else ""
        if role is not None and isinstance(block, dict):
            block = {**block, "role": role}  # the same text as user or assistant is a different prefix
        data = block_bytes(block)
        blocks.append(Block(where, data, _count(data, "anthropic", model), marker, kind))

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


def _positions(blocks: list[Block]) -> list[int]:
    """Lookback position of each block: a run of tool_use (or tool_result) blocks is one position,
    and the ``speed`` and ``settings`` pseudo-blocks take none."""
    out, position = [], -1
    for i, block in enumerate(blocks):
        same_run = i > 0 and block.kind in ("tool_use", "tool_result") and blocks[i - 1].kind == block.kind
        position += 0 if same_run or block.kind == "settings" else 1
        out.append(position)
    return out


def _check_anthropic_breakpoints(blocks: list[Block]) -> list[int]:
    marked = [i for i, b in enumerate(blocks) if b.breakpoint]
    limit = providers.max_breakpoints("anthropic")
    if len(marked) > limit:
        raise CacheRequestError(f"A maximum of {limit} blocks with cache_control may be provided. Found {len(marked)}.")
    seen_5m = False
    for i in marked:
        ttl = blocks[i].breakpoint
        if ttl not in TTL_SECONDS or ttl == "30m":
            raise CacheRequestError(f"{_dotted(blocks[i].where)}.cache_control.ttl: Input should be '5m' or '1h'")
        if ttl == "1h" and seen_5m:
            raise CacheRequestError(
                f"{_dotted(blocks[i].where)}.cache_control.ttl: a ttl='1h' cache_control block must not come after "
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
        blocks.append(Block(where, data, _count(data, "openai", model), "explicit" if marked else None, kind, boundary))

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
            value = _strip_marker(part) if isinstance(part, dict) else part
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
        blocks.append(Block(where, data, _count(data, "gemini", model), None, kind))

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


@dataclass
class CachedContent:
    """One explicit Gemini cache (``cachedContents/...``): its model, prefix blocks and expiry."""

    name: str
    model: str
    blocks: list[Block]
    tokens: int
    expires: float
    display_name: str = ""


def parse_duration(value: Any) -> float:
    """A protobuf Duration string (``"300s"``, ``"3.5s"``) in seconds; ValueError otherwise."""
    if not isinstance(value, str) or not value.endswith("s"):
        raise ValueError(value)
    seconds = float(value[:-1])
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(value)
    return seconds


# ------------------------------------------------------------------------------------ the cache
@dataclass
class CacheModel:
    """Provider caches in memory: ``anthropic(body)``, ``openai(body)`` and ``gemini(body)`` return
    the usage; ``create_cached_content`` and friends keep Gemini's explicit caches.

    ``clock`` returns seconds; inject one to test expiry without sleeping. Thread-safe. Memory is
    bounded: at most ``max_entries`` breakpoint entries and ``max_keys`` automatic-caching keys of
    ``KEPT_PROMPTS_PER_KEY`` prompts each (expired and least recently used ones go first), and at
    most ``max_cached_contents`` Gemini caches.
    """

    clock: Callable[[], float] = time.monotonic
    max_entries: int = KEPT_ENTRIES
    max_keys: int = KEPT_KEYS
    max_cached_contents: int = 1024
    _entries: dict[tuple, _Entry] = field(default_factory=dict)
    _prompts: "OrderedDict[tuple, list[_Prompt]]" = field(default_factory=OrderedDict)
    _cached: dict[str, CachedContent] = field(default_factory=dict)
    _names: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _live(self, key: tuple, now: float) -> _Entry | None:
        entry = self._entries.get(key)
        return entry if entry is not None and entry.expires > now else None

    def _expired(self, key: tuple, now: float) -> _Entry | None:
        entry = self._entries.get(key)
        return entry if entry is not None and entry.expires <= now else None

    def _trim(self, now: float) -> None:
        """Keep the entries under ``max_entries``: expired ones first, then those expiring soonest.
        Trims to 90% so the sort runs once per many writes, not on every one."""
        if len(self._entries) < self.max_entries:
            return
        for key in [k for k, e in self._entries.items() if e.expires <= now - _EXPLAIN_EXPIRY_SECONDS]:
            del self._entries[key]
        if len(self._entries) >= self.max_entries:
            for key in [k for k, e in self._entries.items() if e.expires <= now]:
                del self._entries[key]
        excess = len(self._entries) - int(self.max_entries * 0.9)
        if excess > 0:
            for key, _ in sorted(self._entries.items(), key=lambda item: item[1].expires)[:excess]:
                del self._entries[key]

    def _write(self, key: tuple, expires: float, ttl: str, now: float) -> None:
        if not self._live(key, now):
            self._trim(now)
            self._entries[key] = _Entry(expires, ttl)

    def size(self) -> dict[str, int]:
        """How much the cache holds: breakpoint entries, automatic keys and prompts, Gemini caches."""
        with self._lock:
            return {"entries": len(self._entries), "keys": len(self._prompts),
                    "prompts": sum(len(p) for p in self._prompts.values()), "cached_contents": len(self._cached)}

    # ------------------------------------------------------------------ Anthropic
    def anthropic(self, body: dict) -> Usage:
        """Apply one Messages request to the cache; raises :class:`CacheRequestError` on a 4xx."""
        rejections.check_anthropic(body)
        model = str(body.get("model", ""))
        blocks = anthropic_blocks(body)
        marked = _check_anthropic_breakpoints(blocks)
        total = sum(b.tokens for b in blocks)
        if not marked:
            return Usage(total, note="no cache breakpoint")
        floor = providers.cache_floor("anthropic", model)
        lookback = providers.lookback_blocks("anthropic") or 20
        hashes, cumulative = _prefix_hashes(model, blocks)
        positions = _positions(blocks)
        now = self.clock()
        with self._lock:
            hit, stale = -1, None
            for bp in marked:
                for pos in range(bp, -1, -1):
                    if positions[bp] - positions[pos] >= lookback:
                        break
                    if self._live(("anthropic", hashes[pos]), now):
                        hit = max(hit, pos)
                        break
                    stale = stale or _stale_note(self._expired(("anthropic", hashes[pos]), now), blocks[pos], now)
            read = cumulative[hit] if hit >= 0 else 0
            if hit >= 0:
                entry = self._entries[("anthropic", hashes[hit])]
                entry.expires = now + TTL_SECONDS[entry.ttl]  # a hit refreshes the TTL at no cost
            written = written_1h = 0
            covered = read
            for bp in marked:
                if bp <= hit or cumulative[bp] < floor:
                    continue
                ttl = blocks[bp].breakpoint or "5m"
                self._write(("anthropic", hashes[bp]), now + TTL_SECONDS[ttl], ttl, now)
                part, covered = cumulative[bp] - covered, cumulative[bp]
                written += part
                written_1h += part if ttl == "1h" else 0
        last = cumulative[marked[-1]]
        note = "" if last >= floor or read else f"prefix of {last} tokens is under the {floor}-token minimum for {model}"
        note = note or ("" if read else stale or "")
        return Usage(total - read - written, read, written, written_1h, blocks[hit].where if hit >= 0 else None, note)

    # ----------------------------------------------------- automatic prefix caching
    def _automatic(self, key: tuple, blocks: list[Block], model: str, provider: str, floor: int, step: int,
                   idle: float) -> tuple[int, str]:
        """The longest byte prefix an earlier live request under ``key`` sent (OpenAI before 5.6,
        Gemini implicit), rounded down to ``floor`` + a multiple of ``step`` tokens; remembers this
        prompt. Returns the tokens read and, for a miss an eviction explains, a note."""
        data = b"".join(b.data for b in blocks)
        now = self.clock()
        with self._lock:
            remembered = self._prompts.pop(key, [])
            kept = [p for p in remembered if p.expires > now]
            gone = [p for p in remembered if p.expires <= now]
            best, common = None, 0
            for prompt in kept:
                n = _common_prefix(prompt.data, data)
                if n > common:
                    best, common = prompt, n
            read = 0
            if best is not None:
                read = _tokens_of_prefix(blocks, common, model, provider)
                read = floor + ((read - floor) // step) * step if read >= floor else 0
                if read:
                    best.expires = now + idle
            kept = [p for p in kept if p.data != data] + [_Prompt(data, now + idle)]
            self._prompts[key] = kept[-KEPT_PROMPTS_PER_KEY:]
            while len(self._prompts) > self.max_keys:
                self._prompts.popitem(last=False)  # the least recently used key
        note = ""
        if not read and any(_tokens_of_prefix(blocks, _common_prefix(p.data, data), model, provider) >= floor
                            for p in gone):
            note = f"an earlier prompt with the same prefix was evicted after {idle:.0f} s idle"
        return read, note

    # --------------------------------------------------------------------- OpenAI
    def openai(self, body: dict) -> Usage:
        """Apply one Chat Completions or Responses request; raises :class:`CacheRequestError` on a 4xx."""
        rejections.check_openai(body)
        model = str(body.get("model", ""))
        key = str(body.get("prompt_cache_key") or "")
        blocks = openai_blocks(body)
        total = sum(b.tokens for b in blocks)
        floor = providers.cache_floor("openai", model)
        if providers.uses_explicit_breakpoints(model):
            return self._openai_breakpoints(model, key, body, blocks, total, floor)
        if any(b.breakpoint for b in blocks):
            raise CacheRequestError(f"prompt_cache_breakpoint is not supported with model {model!r}",
                                    "prompt_cache_breakpoint")
        step = providers.prefix_step("openai") or 128
        read, note = self._automatic(("openai", model, key), blocks, model, "openai", floor, step,
                                     OPENAI_IN_MEMORY_SECONDS)
        if total < floor:
            note = f"prompt of {total} tokens is under the {floor}-token minimum"
        return Usage(total - read, read, 0, note=note)

    def _openai_breakpoints(self, model: str, key: str, body: dict, blocks: list[Block], total: int,
                            floor: int) -> Usage:
        options = body.get("prompt_cache_options") or {}
        mode = options.get("mode", "implicit") if isinstance(options, dict) else None
        if mode not in ("implicit", "explicit"):
            raise CacheRequestError("Invalid value for 'prompt_cache_options.mode': expected 'implicit' or 'explicit'",
                                    "prompt_cache_options.mode")
        ttl = str(options.get("ttl") or "30m")
        if ttl != "30m":
            raise CacheRequestError(f"Invalid value for 'prompt_cache_options.ttl': {ttl!r}", "prompt_cache_options.ttl")
        explicit = [i for i, b in enumerate(blocks) if b.breakpoint]
        turns = [i for i, b in enumerate(blocks) if b.turn_boundary] if mode == "implicit" else []
        latest = turns[-1:] if turns else []
        window = providers.read_window_breakpoints("openai") or 50
        readable = sorted(set(explicit) | set(turns))[-window:]
        # up to 4 new writes; the implicit breakpoint takes one slot, the latest explicit ones the rest
        slots = providers.max_breakpoints("openai") - len(latest)
        writable = sorted(set(explicit[-slots:] if slots > 0 else []) | set(latest))
        if not readable:
            return Usage(total, note="no cache breakpoint (prompt_cache_options.mode is 'explicit')")
        hashes, cumulative = _prefix_hashes(model, blocks)
        now = self.clock()
        with self._lock:
            hit = max((i for i in readable if self._live(("openai", model, key, hashes[i]), now)), default=-1)
            stale = next((note for i in reversed(readable)
                          if (note := _stale_note(self._expired(("openai", model, key, hashes[i]), now), blocks[i], now))),
                         None)
            read = cumulative[hit] if hit >= 0 else 0
            if hit >= 0:
                self._entries[("openai", model, key, hashes[hit])].expires = now + TTL_SECONDS[ttl]
            furthest = read
            for i in writable:
                if i <= hit or cumulative[i] < floor:
                    continue
                self._write(("openai", model, key, hashes[i]), now + TTL_SECONDS[ttl], ttl, now)
                furthest = max(furthest, cumulative[i])
        longest = cumulative[readable[-1]]
        note = "" if longest >= floor or read else f"prefix of {longest} tokens before the last breakpoint is under the {floor}-token minimum"
        note = note or ("" if read else stale or "")
        written = furthest - read
        return Usage(total - read - written, read, written, 0, blocks[hit].where if hit >= 0 else None, note)

    # --------------------------------------------------------------------- Gemini
    def gemini(self, body: dict) -> Usage:
        """Apply one generateContent request (REST body or SDK kwargs): implicit caching of the
        longest earlier prefix, or a read of the whole explicit ``cachedContent`` it names."""
        request = gemini_request(body)
        rejections.check_gemini(request)
        model = request["model"]
        blocks = gemini_blocks(request)
        total = sum(b.tokens for b in blocks)
        name = request["cached_content"]
        if name is not None:
            cache = self.cached_content(str(name))
            if request["system"] is not None or request["tools"] is not None:
                raise CacheRequestError("CachedContent can not be used with GenerateContent request setting "
                                        "system_instruction, tools or tool_config.\n\nProposed fix: move those "
                                        "values to CachedContent from GenerateContent request.", "cachedContent",
                                        kind="INVALID_ARGUMENT")
            if cache.model != model:
                raise CacheRequestError(f"Model used by GenerateContent request (models/{model}) and CachedContent "
                                        f"(models/{cache.model}) has to be the same.", "cachedContent",
                                        kind="INVALID_ARGUMENT")
            return Usage(total, cache.tokens, 0, 0, cache.name)
        floor = providers.cache_floor("gemini", model)
        idle = float(providers.implicit_seconds("gemini"))
        read, note = self._automatic(("gemini", model), blocks, model, "gemini", floor, 1, idle)
        if total < floor:
            note = f"prompt of {total} tokens is under the {floor}-token minimum for {model}"
        return Usage(total - read, read, 0, note=note)

    def create_cached_content(self, body: dict) -> CachedContent:
        """``cachedContents.create``: store an explicit prefix (``ttl`` or ``expireTime``; default 1 h)."""
        request = gemini_request({**body, "contents": body.get("contents") or []})
        if request["cached_content"] is not None:
            raise CacheRequestError("a CachedContent cannot reference another CachedContent", "cachedContent",
                                    kind="INVALID_ARGUMENT")
        error = rejections.unknown_model("gemini", request["model"])
        if error:
            raise error
        ttl = body.get("ttl", (body.get("config") or {}).get("ttl") if isinstance(body.get("config"), dict) else None)
        expire_time = body.get("expireTime")
        if ttl is not None and expire_time is not None:
            raise CacheRequestError("only one of ttl and expireTime may be set", "ttl", kind="INVALID_ARGUMENT")
        now = self.clock()
        try:
            if expire_time is not None:
                seconds = datetime.fromisoformat(str(expire_time).replace("Z", "+00:00")).timestamp() - time.time()
            else:
                seconds = parse_duration(ttl if ttl is not None else providers.ttls("gemini")[0])
        except (ValueError, TypeError, OverflowError):
            raise CacheRequestError(f"Invalid value at 'cached_content.ttl' ({ttl if expire_time is None else expire_time!r})",
                                    "ttl", kind="INVALID_ARGUMENT") from None
        blocks = gemini_blocks(request)
        tokens = sum(b.tokens for b in blocks)
        floor = providers.cache_floor("gemini", request["model"])
        if tokens < floor:
            raise CacheRequestError(f"Cached content is too small. total_token_count={tokens}, "
                                    f"min_total_token_count={floor}", "contents", kind="INVALID_ARGUMENT")
        with self._lock:
            for gone in [n for n, c in self._cached.items() if c.expires <= now]:
                del self._cached[gone]
            if len(self._cached) >= self.max_cached_contents:
                raise CacheRequestError("Too many cached contents; delete some first.", None, status=429,
                                        kind="RESOURCE_EXHAUSTED")
            name = f"cachedContents/emulator{next(self._names):06d}"
            cache = CachedContent(name, request["model"], blocks, tokens, now + seconds,
                                  str(body.get("displayName") or body.get("display_name") or ""))
            self._cached[name] = cache
        return cache

    def cached_content(self, name: str) -> CachedContent:
        """A live explicit cache by name; the real 403 when it expired, was deleted or never was."""
        with self._lock:
            cache = self._cached.get(name)
            if cache is None or cache.expires <= self.clock():
                raise CacheRequestError("CachedContent not found (or permission denied)", "cachedContent",
                                        status=403, kind="PERMISSION_DENIED")
            return cache

    def update_cached_content(self, name: str, ttl: Any) -> CachedContent:
        """``cachedContents.patch``: only the expiry can change."""
        cache = self.cached_content(name)
        try:
            seconds = parse_duration(ttl)
        except (ValueError, TypeError, OverflowError):
            raise CacheRequestError(f"Invalid value at 'cached_content.ttl' ({ttl!r})", "ttl",
                                    kind="INVALID_ARGUMENT") from None
        with self._lock:
            cache.expires = self.clock() + seconds
        return cache

    def delete_cached_content(self, name: str) -> None:
        """``cachedContents.delete``; a missing cache is the real 403."""
        self.cached_content(name)
        with self._lock:
            self._cached.pop(name, None)


def _stale_note(entry: _Entry | None, block: Block, now: float) -> str | None:
    if entry is None:
        return None
    return f"the entry at {block.where} expired {now - entry.expires:.0f} s ago (TTL {entry.ttl})"


def _prefix_hashes(model: str, blocks: list[Block]) -> tuple[list[bytes], list[int]]:
    """Cumulative hash and token count of the prefix ending at each block."""
    hashes, cumulative = [], []
    digest, running = hashlib.sha256(model.encode("utf-8")), 0
    for block in blocks:
        digest.update(len(block.data).to_bytes(8, "big"))  # length-prefixed: block boundaries matter
        digest.update(block.data)
        running += block.tokens
        hashes.append(digest.copy().digest())
        cumulative.append(running)
    return hashes, cumulative


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[:mid] == b[:mid] else (lo, mid)
    return lo


def _tokens_of_prefix(blocks: list[Block], nbytes: int, model: str, provider: str = "openai") -> int:
    """Tokens in the first ``nbytes`` bytes of the blocks' concatenation (whole blocks + a part)."""
    tokens = 0
    for block in blocks:
        if nbytes >= len(block.data):
            tokens, nbytes = tokens + block.tokens, nbytes - len(block.data)
            continue
        return tokens + (_count(block.data[:nbytes], provider, model) if nbytes else 0)
    return tokens


def prefix_level(where: str) -> str:
    """The prefix level a block belongs to: ``tools``, ``system``, ``settings``, ``messages``
    (Anthropic) or ``tools``, ``response_format``, ``text``, ``instructions``, ``messages``,
    ``input`` (OpenAI). A change at one level invalidates it and every later one ([A-PC])."""
    return where.split("[", 1)[0].split(".", 1)[0]


def first_difference(a: list[Block], b: list[Block]) -> dict | None:
    """Where request ``b``'s prefix parts from request ``a``'s: the block and its level, the byte
    offset inside the block, and both snippets around it (None when one is a prefix of the other
    and both have the same blocks)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x.data != y.data:
            offset = _common_prefix(x.data, y.data)
            lo = max(0, offset - 30)
            return {
                "block": y.where, "level": prefix_level(y.where), "index": i, "byte_offset": offset,
                "before": x.data[lo:offset + 40].decode("utf-8", "replace"),
                "after": y.data[lo:offset + 40].decode("utf-8", "replace"),
            }
    if len(a) != len(b):
        i = min(len(a), len(b))
        where = (b[i] if i < len(b) else a[i]).where
        return {"block": where, "level": prefix_level(where), "index": i, "byte_offset": 0,
                "before": "" if i >= len(a) else a[i].data[:40].decode("utf-8", "replace"),
                "after": "" if i >= len(b) else b[i].data[:40].decode("utf-8", "replace")}
    return None


MISS_REASONS = {"tools": "tools_changed", "system": "system_changed", "messages": "messages_changed"}
"""Anthropic ``cache_miss_reason`` type per prefix level [A-CD]."""


def cache_miss_reason(previous_model: str, previous: list[Block], model: str, current: list[Block],
                      read: int) -> dict | None:
    """Anthropic cache diagnostics: why ``current`` could not reuse ``previous``'s prefix [A-CD].

    None when nothing diverged (the same blocks, or only blocks appended). Otherwise
    ``{"type": "model_changed" | "tools_changed" | "system_changed" | "messages_changed",
    "cache_missed_input_tokens": N}``, N being what the previous request cached (up to its last
    breakpoint) that this one did not read.
    """
    marked = [i for i, b in enumerate(previous) if b.breakpoint]
    cached = sum(b.tokens for b in previous[:marked[-1] + 1]) if marked else 0
    missed = max(0, cached - read)
    if model != previous_model:
        return {"type": "model_changed", "cache_missed_input_tokens": missed}
    diff = first_difference(previous, current)
    if diff is None or diff["index"] >= len(previous):
        return None  # identical, or entries only appended
    if diff["level"] in ("settings", "speed"):
        return {"type": "unavailable"}  # the API does not diagnose thinking / tool_choice changes [A-CD]
    return {"type": MISS_REASONS.get(diff["level"], "messages_changed"), "cache_missed_input_tokens": missed}


def cost_usd(provider: str, model: str, usage: Usage, output_tokens: int = 0) -> float | None:
    """The cost of one request from the dated price table, or None when no price is recorded."""
    try:
        p = providers.price(provider, model)
    except (providers.UnknownPriceError, providers.UnknownProviderError):
        return None
    write_5m = usage.cache_write - usage.cache_write_1h
    cost = usage.input_tokens * p.input + usage.cache_read * p.cache_read + output_tokens * (p.output or 0.0)
    if provider == "anthropic":
        cost += write_5m * p.cache_write_5m + usage.cache_write_1h * p.cache_write_1h
    else:
        cost += usage.cache_write * p.cache_write
    return cost / 1_000_000


def cache_metrics(usages: list[Usage]) -> dict:
    """The seeds' cache-effectiveness figures over some turns: ``hit_rate`` (tokens read from the
    cache / all prompt tokens) and ``cache_write_share`` (tokens written / all prompt tokens).
    A stable prefix over N turns writes about once: ``cache_write_share`` near 1/N or below; a
    higher share means the prefix is churning. Both are None over zero prompt tokens."""
    total = sum(u.input_tokens + u.cache_read + u.cache_write for u in usages)
    read = sum(u.cache_read for u in usages)
    written = sum(u.cache_write for u in usages)
    return {"turns": len(usages), "prompt_tokens": total, "cache_read": read, "cache_write": written,
            "hit_rate": round(read / total, 4) if total else None,
            "cache_write_share": round(written / total, 4) if total else None}
