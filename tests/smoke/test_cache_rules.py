"""The cache model pins the providers' documented rules (docs/smoke.md cites each)."""

from __future__ import annotations

import pytest

from promptlint import providers
from promptlint.caching.model import CacheModel, CacheRequestError, cost_usd

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


def test_a_one_hour_marker_after_a_five_minute_marker_is_rejected_like_the_api():
    _, cache = clock()
    body = anthropic_body(BIG)
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "hi",
                                                      "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]
    with pytest.raises(CacheRequestError, match=r"messages\.0\.content\.0\.cache_control\.ttl: a ttl='1h'"):
        cache.anthropic(body)


def test_top_level_cache_control_marks_the_last_block():
    _, cache = clock()
    body = {"model": HAIKU, "max_tokens": 5, "cache_control": MARK,
            "system": BIG, "messages": [{"role": "user", "content": "first question"}]}
    first = cache.anthropic(body)
    follow_up = {**body, "messages": [*body["messages"], {"role": "assistant", "content": "answer"},
                                      {"role": "user", "content": "second question"}]}
    second = cache.anthropic(follow_up)
    assert first.cache_write > 0 and first.input_tokens == 0
    assert second.cache_read == first.cache_write and second.hit_at == "messages[0].content[0]"


def test_top_level_cache_control_with_another_ttl_than_the_last_block_is_rejected():
    _, cache = clock()
    body = {**anthropic_body(BIG), "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": MARK}]}]
    with pytest.raises(CacheRequestError, match="Top-level cache_control has ttl='1h'"):
        cache.anthropic(body)


def test_the_floor_is_per_model():
    _, cache = clock()
    text = "policy line. " * 600  # above Sonnet 4.5's 1,024 tokens, under Haiku 4.5's 4,096
    for model, cached in (("claude-sonnet-4-5", True), (HAIKU, False)):
        body = {**anthropic_body(text), "model": model}
        cache.anthropic(body)
        assert (cache.anthropic(body).cache_read > 0) is cached, model


def test_a_breakpoint_on_a_block_that_changes_every_request_writes_every_time_and_never_reads():
    _, cache = clock()
    for turn in range(3):
        body = anthropic_body(BIG + f"\nNow: {turn}")
        usage = cache.anthropic(body)
        assert usage.cache_read == 0 and usage.cache_write > 0


def test_a_run_of_tool_results_counts_as_one_lookback_position():
    _, cache = clock()
    cache.anthropic({**blocks_body(1), "messages": [{"role": "user", "content": "warm-up"}]})
    results = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"} for i in range(25)]
    results[-1] = {**results[-1], "cache_control": MARK}
    uses = [{"type": "tool_use", "id": f"t{i}", "name": "lookup", "input": {}} for i in range(25)]
    body = {**blocks_body(1), "messages": [{"role": "user", "content": "look it up"},
                                           {"role": "assistant", "content": uses},
                                           {"role": "user", "content": results}]}
    del body["system"][0]["cache_control"]
    assert cache.anthropic(body).cache_read > 0  # 52 blocks, but only 4 positions


def test_openai_reads_the_common_prefix_inside_a_message_rounded_down_to_128_tokens():
    _, cache = clock()
    shared = "rule. " * 900
    first = {"model": "gpt-4o", "messages": [{"role": "system", "content": shared + "tail A " * 300}]}
    second = {"model": "gpt-4o", "messages": [{"role": "system", "content": shared + "tail B " * 300}]}
    cache.openai(first)
    usage = cache.openai(second)
    shared_tokens = providers.count_tokens('{"content":"' + shared + "tail ", "openai", "gpt-4o").n
    assert (usage.cache_read - 1024) % 128 == 0
    assert shared_tokens - 128 - 8 < usage.cache_read <= shared_tokens + 8


def test_openai_entries_are_evicted_after_ten_idle_minutes():
    now, cache = clock()
    cache.openai(openai_body())
    now[0] = 601.0
    assert cache.openai(openai_body()).cache_read == 0


def gpt56(*messages: dict, mode: str | None = None) -> dict:
    body = {"model": "gpt-5.6-luna", "prompt_cache_key": "k", "messages": list(messages)}
    return {**body, "prompt_cache_options": {"mode": mode}} if mode else body


SYSTEM = {"role": "system", "content": "rule. " * 900}


def test_gpt_5_6_implicit_breakpoint_lets_turn_two_read_turn_one():
    _, cache = clock()
    first = cache.openai(gpt56(SYSTEM, {"role": "user", "content": "q1"}))
    second = cache.openai(gpt56(SYSTEM, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                                {"role": "user", "content": "q2"}))
    assert second.cache_read == first.cache_write > 0
    assert second.cache_write > 0  # the new latest user message is written too


def test_gpt_5_6_explicit_mode_without_breakpoints_caches_nothing():
    _, cache = clock()
    body = gpt56(SYSTEM, {"role": "user", "content": "q1"}, mode="explicit")
    cache.openai(body)
    usage = cache.openai(body)
    assert (usage.cache_read, usage.cache_write) == (0, 0)
    assert "no cache breakpoint" in usage.note


def test_gpt_5_6_writes_at_most_four_breakpoints_per_request():
    _, cache = clock()
    # every section alone is above the 1,024-token floor, so only the cap can stop a write
    parts = [{"type": "text", "text": f"section {i}. " + "rule. " * 600, "prompt_cache_breakpoint": {"mode": "explicit"}}
             for i in range(6)]
    cache.openai(gpt56({"role": "user", "content": parts}, mode="explicit"))
    for upto, cached in ((3, True), (2, False)):  # sections 3-6 were written, 1-2 were not
        usage = cache.openai(gpt56({"role": "user", "content": parts[:upto]}, mode="explicit"))
        assert (usage.cache_read > 0) is cached, upto


def test_gpt_5_6_rejects_a_breakpoint_on_assistant_output():
    _, cache = clock()
    marked = {"type": "text", "text": "a1", "prompt_cache_breakpoint": {"mode": "explicit"}}
    with pytest.raises(CacheRequestError) as info:
        cache.openai(gpt56(SYSTEM, {"role": "assistant", "content": [marked]}))
    assert info.value.param == "messages[1].content[0].prompt_cache_breakpoint"


def test_gpt_5_6_rejects_a_breakpoint_on_a_tool_definition():
    _, cache = clock()
    tool = {"type": "function", "function": {"name": "f"}, "prompt_cache_breakpoint": {"mode": "explicit"}}
    with pytest.raises(CacheRequestError, match="tool definitions"):
        cache.openai({**gpt56(SYSTEM, {"role": "user", "content": "q"}), "tools": [tool]})


def tool_use_turn(arguments: dict) -> dict:
    """A cached system prompt, then an assistant tool call whose block carries the breakpoint."""
    return {"model": HAIKU, "max_tokens": 5, "system": [{"type": "text", "text": BIG}],
            "messages": [{"role": "user", "content": "look it up"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup",
                                                            "input": arguments, "cache_control": MARK}]}]}


def test_key_order_inside_tool_use_input_is_part_of_the_prefix():
    _, cache = clock()
    cache.anthropic(tool_use_turn({"account": "acc_1", "month": "March"}))
    assert cache.anthropic(tool_use_turn({"account": "acc_1", "month": "March"})).cache_read > 0
    assert cache.anthropic(tool_use_turn({"month": "March", "account": "acc_1"})).cache_read == 0


def test_key_order_of_a_blocks_own_fields_does_not_matter():
    _, cache = clock()
    body = anthropic_body(BIG)
    cache.anthropic(body)
    block = body["system"][0]
    body["system"] = [{key: block[key] for key in reversed(list(block))}]  # cache_control, text, type
    assert cache.anthropic(body).cache_read > 0


def test_a_miss_after_the_ttl_says_the_entry_expired():
    now, cache = clock()
    cache.anthropic(anthropic_body(BIG))
    now[0] = 400.0
    usage = cache.anthropic(anthropic_body(BIG))
    assert usage.cache_read == 0
    assert usage.note == "the entry at system[0] expired 100 s ago (TTL 5m)"


def test_an_openai_miss_after_eviction_says_so():
    now, cache = clock()
    cache.openai(openai_body())
    now[0] = 700.0
    assert "evicted after 600 s idle" in cache.openai(openai_body()).note


def test_gpt_5_6_reads_only_the_latest_fifty_breakpoints():
    mark = {"mode": "explicit"}
    rules = {"type": "text", "text": "rule. " * 900, "prompt_cache_breakpoint": mark}
    notes = [{"type": "text", "text": f"n{i}", "prompt_cache_breakpoint": mark} for i in range(50)]
    for later, cached in ((49, True), (50, False)):  # the rules block is breakpoint 50 or 51 from the end
        _, cache = clock()
        cache.openai(gpt56({"role": "user", "content": [rules]}, mode="explicit"))
        usage = cache.openai(gpt56({"role": "user", "content": [rules, *notes[:later]]}, mode="explicit"))
        assert (usage.cache_read > 0) is cached, later


def test_gpt_5_6_usage_parts_are_disjoint_and_a_write_is_billed_once():
    _, cache = clock()
    body = {**openai_body(), "model": "gpt-5.6-luna"}
    whole = cache.openai({**body, "prompt_cache_options": {"mode": "explicit"}})  # caches nothing: all fresh
    first = cache.openai(body)
    assert first.input_tokens + first.cache_write == whole.input_tokens
    price = providers.price("openai", "gpt-5.6-luna")
    expected = (first.input_tokens * price.input + first.cache_write * price.cache_write) / 1_000_000
    assert cost_usd("openai", "gpt-5.6-luna", first) == pytest.approx(expected)


def test_changing_tool_choice_invalidates_the_messages_but_not_the_system_prompt():
    _, cache = clock()
    body = {**blocks_body(1), "tool_choice": {"type": "auto"}}  # breakpoints on the system and the message
    first = cache.anthropic(body)
    same = cache.anthropic(body)
    switched = cache.anthropic({**body, "tool_choice": {"type": "none"}})
    assert same.cache_read == first.cache_write
    assert 0 < switched.cache_read < same.cache_read and switched.hit_at == "system[0]"


def test_the_settings_block_takes_no_lookback_position():
    _, cache = clock()
    cache.anthropic({**blocks_body(1), "messages": [{"role": "user", "content": "warm-up"}]})
    body = blocks_body(19)  # the system block plus 19 message blocks: exactly 20 positions
    del body["system"][0]["cache_control"]
    assert cache.anthropic({**body, "thinking": {"type": "disabled"}}).cache_read > 0
