"""A request's prefix as the provider caches see it: blocks, their bytes, hashes and where two differ.

Every provider's prefix is a list of :class:`Block` (``promptlint.caching.request_blocks`` builds
them from request bodies). Blocks are compared byte for byte, a block's own keys sorted and
nested JSON in the order sent; :func:`prefix_hashes` names each prefix for cache entries;
:func:`first_difference` and :func:`cache_miss_reason` say where two requests' prefixes part.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from promptlint import providers

__all__ = ["Block", "block_bytes", "cache_miss_reason", "common_prefix", "count_tokens", "first_difference",
           "prefix_hashes", "prefix_level", "tokens_of_prefix"]


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


def count_tokens(data: bytes, provider: str, model: str) -> int:
    """promptlint's offline token count of some prefix bytes (the count the assembler pads with)."""
    return providers.count_tokens(data.decode("utf-8", "ignore"), provider, model).n


def prefix_hashes(model: str, blocks: list[Block]) -> tuple[list[bytes], list[int]]:
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


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of ``a`` and ``b``, in bytes."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[:mid] == b[:mid] else (lo, mid)
    return lo


def tokens_of_prefix(blocks: list[Block], nbytes: int, model: str, provider: str = "openai") -> int:
    """Tokens in the first ``nbytes`` bytes of the blocks' concatenation (whole blocks + a part)."""
    tokens = 0
    for block in blocks:
        if nbytes >= len(block.data):
            tokens, nbytes = tokens + block.tokens, nbytes - len(block.data)
            continue
        return tokens + (count_tokens(block.data[:nbytes], provider, model) if nbytes else 0)
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
            offset = common_prefix(x.data, y.data)
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
