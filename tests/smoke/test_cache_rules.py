"""The cache model pins the providers' documented rules (docs/smoke.md cites each)."""

from __future__ import annotations

import pytest

from promptlint import providers
from promptlint.cachemodel import CacheModel, CacheRequestError

HAIKU = "claude-haiku-4-5"
BIG = "policy line. " * 2500  # well above the 4,096-token floor of claude-haiku-4-5
MARK = {"type": "ephemeral"}


def clock():
    now = [0.0]
    return now, CacheModel(clock=lambda: now[0])


def anthropic_body(system_text: str, question: str = "hi", ttl: str | None = None) -> dict:
    marker = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {"model": HAIKU, "max_tokens": 5, "messages": [{"role": "user", "content": question}],
            "system": [{"type": "text", "text": system_text, "cache_control": marker}]}


def test_first_request_writes_and_second_reads_the_same_prefix():
    _, cache = clock()
    first = cache.anthropic(anthropic_body(BIG))
    second = cache.anthropic(anthropic_body(BIG, "another question"))
    assert first.cache_write > 0 and first.cache_read == 0
    assert second.cache_read == first.cache_write and second.cache_write == 0


def test_usage_parts_add_up_to_the_whole_prompt():
    _, cache = clock()
    usage = cache.anthropic(anthropic_body(BIG))
    total = providers.count_tokens('{"text":"%s","type":"text"}' % BIG, "anthropic", HAIKU).n
    assert usage.cache_write >= total - 5
    assert usage.input_tokens > 0


def test_a_prefix_under_the_model_floor_is_not_cached_and_not_an_error():
    _, cache = clock()
    short = "Be brief. " * 50
    first = cache.anthropic(anthropic_body(short))
    second = cache.anthropic(anthropic_body(short))
    assert (first.cache_write, second.cache_read) == (0, 0)
    assert "under the 4096-token minimum" in second.note


def test_one_changed_byte_in_the_system_prompt_misses():
    _, cache = clock()
    cache.anthropic(anthropic_body(BIG))
    changed = cache.anthropic(anthropic_body(BIG.replace("policy", "Policy", 1)))
    assert changed.cache_read == 0 and changed.cache_write > 0


def test_more_than_four_breakpoints_is_rejected():
    _, cache = clock()
    body = {"model": HAIKU, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
            "system": [{"type": "text", "text": f"part {i}", "cache_control": MARK} for i in range(5)]}
    with pytest.raises(CacheRequestError, match="A maximum of 4 blocks with cache_control"):
        cache.anthropic(body)


def test_entries_expire_after_their_ttl_and_hits_refresh_them():
    now, cache = clock()
    cache.anthropic(anthropic_body(BIG))
    now[0] = 299.0
    assert cache.anthropic(anthropic_body(BIG)).cache_read > 0  # a hit at 299 s refreshes the 5 min TTL
    now[0] = 598.0
    assert cache.anthropic(anthropic_body(BIG)).cache_read > 0
    now[0] = 899.0  # 301 s after the last hit
    assert cache.anthropic(anthropic_body(BIG)).cache_read == 0


def test_one_hour_ttl_outlives_five_minutes():
    now, cache = clock()
    cache.anthropic(anthropic_body(BIG, ttl="1h"))
    now[0] = 1800.0
    assert cache.anthropic(anthropic_body(BIG, ttl="1h")).cache_read > 0


def blocks_body(n_after: int) -> dict:
    """A cached system block, then ``n_after`` message blocks with the breakpoint on the last one."""
    content = [{"type": "text", "text": f"note {i}"} for i in range(n_after)]
    content[-1] = {**content[-1], "cache_control": MARK}
    return {"model": HAIKU, "max_tokens": 5, "system": [{"type": "text", "text": BIG, "cache_control": MARK}],
            "messages": [{"role": "user", "content": content}]}


def test_lookback_finds_an_earlier_entry_within_twenty_blocks():
    _, cache = clock()
    cache.anthropic({**blocks_body(1), "messages": [{"role": "user", "content": "warm-up"}]})
    body = blocks_body(19)
    del body["system"][0]["cache_control"]  # only the late breakpoint: it must look back 20 blocks
    assert cache.anthropic(body).cache_read > 0


def test_lookback_stops_after_twenty_blocks():
    _, cache = clock()
    cache.anthropic({**blocks_body(1), "messages": [{"role": "user", "content": "warm-up"}]})
    body = blocks_body(20)
    del body["system"][0]["cache_control"]
    assert cache.anthropic(body).cache_read == 0


def openai_body(key: str = "", extra: str = "") -> dict:
    return {"model": "gpt-4o", "prompt_cache_key": key,
            "messages": [{"role": "system", "content": "rule. " * 900}, {"role": "user", "content": "hi" + extra}]}


def test_openai_reads_in_128_token_steps_from_1024():
    _, cache = clock()
    cache.openai(openai_body())
    usage = cache.openai(openai_body(extra=" again"))
    assert usage.cache_read >= 1024 and (usage.cache_read - 1024) % 128 == 0
    assert usage.cache_write == 0  # writes are free before GPT-5.6


def test_openai_prompt_cache_key_separates_caches():
    _, cache = clock()
    cache.openai(openai_body(key="tenant-a"))
    assert cache.openai(openai_body(key="tenant-b")).cache_read == 0
    assert cache.openai(openai_body(key="tenant-a")).cache_read > 0


def test_openai_under_1024_tokens_is_never_cached():
    _, cache = clock()
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": "short"}, {"role": "user", "content": "hi"}]}
    cache.openai(body)
    assert cache.openai(body).cache_read == 0


def test_gpt_5_6_reports_paid_writes_at_breakpoints():
    _, cache = clock()
    body = {**openai_body(), "model": "gpt-5.6-luna"}
    first = cache.openai(body)
    assert first.cache_write > 0
    assert cache.openai(body).cache_read > 0
