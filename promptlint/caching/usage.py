"""What a request read, wrote and paid: the usage counts, their cost and the run's cache metrics."""

from __future__ import annotations

from dataclasses import dataclass

from promptlint import providers

__all__ = ["Usage", "cache_metrics", "cost_usd"]




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
