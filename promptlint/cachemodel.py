"""One model of provider prompt caches, shared by the emulator and the simulator.

The rules (docs/smoke.md cites each; facts dated in promptlint/data/providers.yaml):

Anthropic (Messages API)
- The prefix is tools → system → messages, compared byte for byte, block by block.
- A ``cache_control`` marker on a block is a breakpoint; a top-level ``cache_control`` marks
  the last block. More than ``max_breakpoints`` (4) is a 400 error.
- A breakpoint writes one entry: the hash of the prefix ending at that block, if the prefix
  reaches the model's minimum cacheable length. Nothing is written at other positions.
- On read, each breakpoint looks back over at most ``lookback_blocks`` (20) positions for an
  entry an *earlier* request wrote; the longest hit is read.
- Entries live for their TTL (5 minutes or 1 hour) from the request that wrote or last read them.
- Usage: ``cache_read_input_tokens`` (up to the hit), ``cache_creation_input_tokens`` (from the
  hit to the last breakpoint that wrote), ``input_tokens`` (the rest, after the last breakpoint).

OpenAI (Chat Completions / Responses), models before GPT-5.6
- Automatic: the longest prefix, at message boundaries, that an earlier request with the same
  model and ``prompt_cache_key`` sent is read, in steps of 128 tokens from 1,024; writes are free.
- GPT-5.6 and later: only prefixes ending at a breakpoint (explicit ``prompt_cache_breakpoint``
  blocks, plus the implicit one at the latest message unless ``prompt_cache_options.mode`` is
  ``explicit``) are cached; writes are reported as ``cache_write_tokens``.

The clock is injectable, so TTL expiry is testable without sleeping.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from promptlint import providers

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
OPENAI_RETENTION_SECONDS = 600.0  # in-memory retention: evicted after ~5-10 min idle


class CacheRequestError(ValueError):
    """The request breaks a cache rule the real API rejects (HTTP 400)."""


def canonical(value: Any) -> bytes:
    """Canonical bytes of a JSON value: sorted keys, fixed separators, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass
class Block:
    """One cacheable position of a request's prefix."""

    where: str  # "tools[0]", "system[1]", "messages[2].content[0]"
    data: bytes  # canonical bytes of the block without its cache marker
    tokens: int
    breakpoint: str | None = None  # TTL of a cache_control marker on this block


@dataclass
class Usage:
    """What one request read, wrote and paid as fresh input."""

    input_tokens: int
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    hit_at: str | None = None
    note: str = ""


@dataclass
class _Entry:
    expires: float
    tokens: int
    ttl: str


def _strip_marker(block: dict) -> dict:
    return {k: v for k, v in block.items() if k not in ("cache_control", "prompt_cache_breakpoint")}


def _count(text: str, provider: str, model: str) -> int:
    return providers.count_tokens(text, provider, model).n


def anthropic_blocks(body: dict) -> list[Block]:
    """The request's cacheable blocks in prefix order (tools, system, messages)."""
    model = str(body.get("model", ""))
    blocks: list[Block] = []

    def add(where: str, block: Any) -> None:
        marker = None
        if isinstance(block, dict) and isinstance(block.get("cache_control"), dict):
            marker = str(block["cache_control"].get("ttl", "5m"))
            block = _strip_marker(block)
        data = canonical(block)
        blocks.append(Block(where, data, _count(data.decode("utf-8"), "anthropic", model), marker))

    for i, tool in enumerate(body.get("tools") or []):
        add(f"tools[{i}]", tool)
    system = body.get("system")
    if isinstance(system, str) and system:
        add("system[0]", {"type": "text", "text": system})
    elif isinstance(system, list):
        for i, block in enumerate(system):
            add(f"system[{i}]", block)
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        role = message.get("role") if isinstance(message, dict) else None
        if isinstance(content, str):
            add(f"messages[{m}].content[0]", {"role": role, "type": "text", "text": content})
        elif isinstance(content, list):
            for i, block in enumerate(content):
                marked = dict(block) if isinstance(block, dict) else block
                if isinstance(marked, dict):
                    marked = {**marked, "role": role}
                add(f"messages[{m}].content[{i}]", marked)
    auto = body.get("cache_control")
    if isinstance(auto, dict) and blocks:
        ttl = str(auto.get("ttl", "5m"))
        if blocks[-1].breakpoint not in (None, ttl):
            raise CacheRequestError("top-level cache_control TTL differs from the TTL already on the last block")
        blocks[-1].breakpoint = ttl
    return blocks


@dataclass
class CacheModel:
    """Provider caches in memory: ``anthropic(body)`` and ``openai(body)`` return the usage."""

    clock: Callable[[], float] = time.monotonic
    _anthropic: dict[tuple[str, bytes], _Entry] = field(default_factory=dict)
    _openai: dict[tuple[str, str, bytes], _Entry] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------------ Anthropic
    def anthropic(self, body: dict) -> Usage:
        model = str(body.get("model", ""))
        blocks = anthropic_blocks(body)
        marked = [i for i, b in enumerate(blocks) if b.breakpoint]
        limit = providers.max_breakpoints("anthropic")
        if len(marked) > limit:
            raise CacheRequestError(f"A maximum of {limit} blocks with cache_control may be provided. Found {len(marked)}.")
        total = sum(b.tokens for b in blocks)
        if not marked:
            return Usage(total, note="no cache breakpoint")
        floor = providers.cache_floor("anthropic", model)
        lookback = providers.lookback_blocks("anthropic") or 20
        hashes, cumulative = [], []
        digest, running = hashlib.sha256(model.encode()), 0
        for block in blocks:
            digest.update(len(block.data).to_bytes(8, "big"))
            digest.update(block.data)
            running += block.tokens
            hashes.append(digest.copy().digest())
            cumulative.append(running)
        now = self.clock()
        with self._lock:
            hit = -1
            for bp in marked:
                for pos in range(bp, max(-1, bp - lookback), -1):
                    entry = self._anthropic.get((model, hashes[pos]))
                    if entry is not None and entry.expires > now:
                        hit = max(hit, pos)
                        break
            read = cumulative[hit] if hit >= 0 else 0
            if hit >= 0:
                entry = self._anthropic[(model, hashes[hit])]
                entry.expires = now + TTL_SECONDS.get(entry.ttl, 300.0)  # a hit refreshes the TTL
            last = marked[-1]
            written, written_1h = 0, 0
            covered = read
            for bp in marked:
                if bp <= hit or cumulative[bp] < floor:
                    continue
                ttl = blocks[bp].breakpoint or "5m"
                key = (model, hashes[bp])
                if key not in self._anthropic or self._anthropic[key].expires <= now:
                    self._anthropic[key] = _Entry(now + TTL_SECONDS.get(ttl, 300.0), cumulative[bp], ttl)
                part = cumulative[bp] - covered
                covered = cumulative[bp]
                if ttl == "1h":
                    written_1h += part
                written += part
        if cumulative[last] < floor and not read:
            return Usage(total, note=f"prefix of {cumulative[last]} tokens is under the {floor}-token minimum for {model}")
        return Usage(total - read - written, read, written, written_1h, blocks[hit].where if hit >= 0 else None)

    # --------------------------------------------------------------------- OpenAI
    def openai(self, body: dict) -> Usage:
        model = str(body.get("model", ""))
        key = str(body.get("prompt_cache_key") or "")
        parts = _openai_parts(body)
        tokens = [_count(p.decode("utf-8"), "openai", model) for p, _ in parts]
        total = sum(tokens)
        floor = providers.cache_floor("openai", model)
        step = providers.prefix_step("openai") or 128
        explicit = providers.uses_explicit_breakpoints(model)
        options = body.get("prompt_cache_options") or {}
        digest, running = hashlib.sha256(model.encode()), 0
        prefixes = []
        for (data, marked), n in zip(parts, tokens):
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
            running += n
            prefixes.append((digest.copy().digest(), running, marked))
        if explicit:
            candidates = [i for i, (_, _, marked) in enumerate(prefixes) if marked]
            if options.get("mode") != "explicit" and prefixes:
                candidates.append(len(prefixes) - 2 if len(prefixes) > 1 else 0)  # before the latest message
            candidates = sorted(set(candidates))
        else:
            candidates = list(range(len(prefixes)))
        now = self.clock()
        with self._lock:
            read = 0
            for i in candidates:
                digest_i, upto, _ = prefixes[i]
                entry = self._openai.get((model, key, digest_i))
                if entry is not None and entry.expires > now:
                    read = max(read, upto)
                    entry.expires = now + OPENAI_RETENTION_SECONDS
            if read and not explicit:
                read = floor + ((read - floor) // step) * step if read >= floor else 0
            write = 0
            for i in candidates:
                digest_i, upto, _ = prefixes[i]
                if upto < floor:
                    continue
                k = (model, key, digest_i)
                if k not in self._openai or self._openai[k].expires <= now:
                    self._openai[k] = _Entry(now + OPENAI_RETENTION_SECONDS, upto, "in_memory")
                    write = max(write, upto - read)
        note = "" if total >= floor else f"prompt of {total} tokens is under the {floor}-token minimum"
        return Usage(total - read, read, write if explicit else 0, note=note)


def _openai_parts(body: dict) -> list[tuple[bytes, bool]]:
    """Prefix units of an OpenAI request: tools and schema first, then one per message/item."""
    parts: list[tuple[bytes, bool]] = []
    for name in ("tools", "response_format", "text"):
        if body.get(name):
            parts.append((canonical({name: body[name]}), False))
    if body.get("instructions"):
        parts.append((canonical({"instructions": body["instructions"]}), False))
    items = body.get("messages")
    if items is None:
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
    for item in items or []:
        marked = False
        if isinstance(item, dict) and isinstance(item.get("content"), list):
            marked = any(isinstance(b, dict) and "prompt_cache_breakpoint" in b for b in item["content"])
            item = {**item, "content": [_strip_marker(b) if isinstance(b, dict) else b for b in item["content"]]}
        parts.append((canonical(item), marked))
    return parts


def first_difference(a: list[Block], b: list[Block]) -> dict | None:
    """Where two requests' prefixes part: block, byte offset inside it, and both snippets."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x.data != y.data:
            offset = next((j for j, (p, q) in enumerate(zip(x.data, y.data)) if p != q), min(len(x.data), len(y.data)))
            lo = max(0, offset - 30)
            return {
                "block": y.where, "index": i, "byte_offset": offset,
                "before": x.data[lo:offset + 40].decode("utf-8", "replace"),
                "after": y.data[lo:offset + 40].decode("utf-8", "replace"),
            }
    if len(a) != len(b):
        i = min(len(a), len(b))
        return {"block": (b[i] if i < len(b) else a[i]).where, "index": i, "byte_offset": 0,
                "before": "" if i >= len(a) else a[i].data[:40].decode("utf-8", "replace"),
                "after": "" if i >= len(b) else b[i].data[:40].decode("utf-8", "replace")}
    return None


def openai_blocks(body: dict) -> list[Block]:
    """OpenAI prefix units as blocks (for the simulator's difference report)."""
    model = str(body.get("model", ""))
    out = []
    for i, (data, marked) in enumerate(_openai_parts(body)):
        out.append(Block(f"part[{i}]", data, _count(data.decode("utf-8"), "openai", model), "bp" if marked else None))
    return out


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
