"""One model of provider prompt caches, shared by the emulator and the simulator.

What each request's prefix is, and which markers a provider rejects, is
``promptlint.caching.request_blocks``; comparing prefixes is ``promptlint.caching.prefix``;
usage, cost and metrics are ``promptlint.caching.usage``. This module keeps the cache state and
the read/write rules (docs/smoke.md cites the provider page for each; per-model numbers are
dated data in promptlint/providers/providers.yaml, read through ``promptlint.providers``):

Anthropic (Messages API)
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
  implicit one taking a slot; writes are reported as ``cache_write_tokens``.

Gemini: implicit caching like OpenAI's automatic prefix; explicit ``cachedContents`` are kept here.

The clock is injectable, so TTL expiry is testable without sleeping. A miss that an expired
entry explains says so in ``Usage.note``. The names this module always offered (``Block``,
``Usage``, ``cost_usd``, ``first_difference``, the ``*_blocks`` functions, ...) stay importable
from it.
"""

from __future__ import annotations

import itertools
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
from promptlint.caching.prefix import (
    Block, cache_miss_reason, common_prefix, first_difference, prefix_hashes, prefix_level, tokens_of_prefix,
)
from promptlint.caching.request_blocks import (
    TTL_SECONDS, anthropic_blocks, check_anthropic_breakpoints, gemini_blocks, gemini_request, lookback_positions,
    openai_blocks,
)
from promptlint.caching.usage import Usage, cache_metrics, cost_usd

__all__ = ["Block", "CacheModel", "CacheRequestError", "CachedContent", "Usage", "anthropic_blocks",
           "cache_metrics", "cache_miss_reason", "cost_usd", "first_difference", "gemini_blocks", "gemini_request",
           "openai_blocks", "parse_duration", "prefix_level"]

OPENAI_IN_MEMORY_SECONDS = 600.0
"""Pre-5.6 ``in_memory`` retention: evicted after ~5-10 minutes idle [O-PC]; the upper end."""

KEPT_PROMPTS_PER_KEY = 16
"""Automatic-caching prompts (OpenAI before 5.6, Gemini implicit) remembered per cache key."""
KEPT_KEYS = 1024
"""Automatic-caching keys ((provider, model, prompt_cache_key)) remembered; the least recently used go first."""
KEPT_ENTRIES = 8192
"""Breakpoint entries kept in all; past this, expired entries go first, then those expiring soonest.
Together with the two above this bounds the model's memory whatever the traffic (real caches evict too)."""
_EXPLAIN_EXPIRY_SECONDS = 3600.0  # how long an expired entry still explains a miss


@dataclass
class _Entry:
    expires: float
    ttl: str


@dataclass
class _Prompt:
    data: bytes
    expires: float


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
        marked = check_anthropic_breakpoints(blocks)
        total = sum(b.tokens for b in blocks)
        if not marked:
            return Usage(total, note="no cache breakpoint")
        floor = providers.cache_floor("anthropic", model)
        lookback = providers.lookback_blocks("anthropic") or 20
        hashes, cumulative = prefix_hashes(model, blocks)
        positions = lookback_positions(blocks)
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
                n = common_prefix(prompt.data, data)
                if n > common:
                    best, common = prompt, n
            read = 0
            if best is not None:
                read = tokens_of_prefix(blocks, common, model, provider)
                read = floor + ((read - floor) // step) * step if read >= floor else 0
                if read:
                    best.expires = now + idle
            kept = [p for p in kept if p.data != data] + [_Prompt(data, now + idle)]
            self._prompts[key] = kept[-KEPT_PROMPTS_PER_KEY:]
            while len(self._prompts) > self.max_keys:
                self._prompts.popitem(last=False)  # the least recently used key
        note = ""
        if not read and any(tokens_of_prefix(blocks, common_prefix(p.data, data), model, provider) >= floor
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
        hashes, cumulative = prefix_hashes(model, blocks)
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

