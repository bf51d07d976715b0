"""Provider data tables and offline token counting."""

from __future__ import annotations

import hashlib
import socket
import time

import pytest
from hypothesis import given, settings, strategies as st

from promptlint import providers


def test_data_is_dated_2026_11_23():
    assert providers.DATA_DATE == "2026-11-23"


def test_haiku_4_5_floor_is_4096():
    assert providers.cache_floor("anthropic", "claude-haiku-4-5") == 4096


def test_dated_snapshot_resolves_to_its_base_model():
    assert providers.cache_floor("anthropic", "claude-sonnet-4-5-20250929") == 1024


def test_unknown_anthropic_model_gets_the_conservative_4096_floor():
    assert providers.cache_floor("anthropic", "claude-future-9") == 4096


def test_openai_floor_is_1024_with_128_token_steps():
    assert providers.cache_floor("openai", "gpt-4o") == 1024
    assert providers.prefix_step("openai") == 128


def test_gemini_implicit_floor_for_2_5_flash_is_2048():
    assert providers.cache_floor("gemini", "gemini-2.5-flash") == 2048


def test_anthropic_limits_are_four_breakpoints_and_twenty_blocks():
    assert providers.max_breakpoints("anthropic") == 4
    assert providers.lookback_blocks("anthropic") == 20


def test_anthropic_ttls_default_to_5m():
    assert providers.ttls("anthropic") == ("5m", "1h")


def test_anthropic_cache_writes_cost_125_and_200_percent_and_reads_10_percent():
    price = providers.price("anthropic", "claude-sonnet-4-5")
    assert (price.input, price.cache_write_5m, price.cache_write_1h, price.cache_read) == (3.0, 3.75, 6.0, 0.3)


def test_opus_5_5_reads_at_5_percent_when_priced():
    # read multipliers are per model even where no base price is recorded
    assert providers._provider("anthropic")["read_multipliers"]["claude-opus-5-5"] == 0.05


def test_unsourced_price_fields_are_marked():
    price = providers.price("openai", "gpt-5.6-luna")
    assert price.output is None and "output" in price.unsourced


def test_gpt_5_6_luna_pays_for_cache_writes():
    assert providers.price("openai", "gpt-5.6-luna").cache_write == 0.25


def test_pre_5_6_openai_cache_writes_are_free():
    assert providers.price("openai", "gpt-4o").cache_write == 0.0


def test_unknown_price_is_a_clear_error():
    with pytest.raises(providers.UnknownPriceError, match="no price recorded"):
        providers.price("openai", "gpt-unknown")


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(providers.UnknownProviderError, match="expected one of"):
        providers.cache_floor("mistral", "m")


@pytest.mark.parametrize("model,expected", [
    ("gpt-5.6-luna", True), ("gpt-5.6", True), ("gpt-6", True), ("gpt-5.10", True),
    ("gpt-5.5", False), ("gpt-5", False), ("gpt-4o", False), ("o3", False),
])
def test_explicit_breakpoint_regime_starts_at_gpt_5_6(model, expected):
    assert providers.uses_explicit_breakpoints(model) is expected


@pytest.mark.parametrize("model,encoding", [
    ("gpt-4o", "o200k_base"), ("gpt-5.6-luna", "o200k_base"), ("gpt-oss-120b", "o200k_harmony"),
    ("gpt-4", "cl100k_base"), ("gpt-3.5-turbo", "cl100k_base"),
])
def test_openai_tokenizer_per_model(model, encoding):
    assert providers.tokenizer("openai", model) == encoding


def test_every_price_source_cites_a_listed_source_key():
    keys = set(providers.sources())
    for provider in providers.PROVIDERS:
        for model in providers._provider(provider).get("prices") or {}:
            cited = providers.price(provider, model).source
            assert any(key in cited for key in keys), (model, cited)


def test_unsourced_markers_name_real_price_fields():
    fields = {"input", "output", "cache_read", "cache_write", "cache_write_5m", "cache_write_1h"}
    for provider in providers.PROVIDERS:
        for model in providers._provider(provider).get("prices") or {}:
            assert set(providers.price(provider, model).unsourced) <= fields, model


@pytest.mark.parametrize("model", ["claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5"])
def test_anthropic_base_prices_absent_from_providers_md_are_unsourced(model):
    price = providers.price("anthropic", model)
    assert {"input", "output"} <= set(price.unsourced) and not price.sourced


def test_anthropic_cache_prices_derived_from_an_unsourced_input_are_unsourced():
    assert "cache_read" in providers.price("anthropic", "claude-haiku-4-5").unsourced


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1", "gpt-5"])
def test_openai_per_model_rates_absent_from_providers_md_are_unsourced(model):
    assert {"input", "cache_read", "output"} <= set(providers.price("openai", model).unsourced)


def test_gpt_5_6_luna_rates_quoted_in_providers_md_are_sourced():
    price = providers.price("openai", "gpt-5.6-luna")
    assert (price.input, price.cache_read, price.cache_write) == (0.2, 0.02, 0.25)
    assert not {"input", "cache_read", "cache_write"} & set(price.unsourced)


def test_a_third_party_sighting_resolves_to_its_page():
    assert providers.price("anthropic", "claude-haiku-4-5").seen_in.startswith("https://")


@pytest.fixture
def no_network(monkeypatch):
    """Any socket connection attempt fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("count_tokens tried to use the network")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_without_a_cached_encoding_counting_is_an_offline_estimate(tmp_path, monkeypatch, no_network):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    providers._local_encoding.cache_clear()
    start = time.monotonic()
    count = providers.count_tokens("Hello, world. " * 50, "openai", "gpt-4o")
    assert count.method == "estimate:o200k_base-not-cached" and not count.exact
    assert time.monotonic() - start < 1.0


def test_a_corrupt_cached_encoding_is_not_handed_to_tiktoken(tmp_path, monkeypatch, no_network):
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"not a bpe file")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    providers._local_encoding.cache_clear()
    assert providers.count_tokens("hello", "openai", "gpt-4o").method.startswith("estimate:")


def test_deterministic_counting_never_uses_tiktoken():
    assert providers.count_tokens("hello", "openai", "gpt-4o", allow_tiktoken=False).method == "estimate:o200k_base-deterministic"


def test_anthropic_counts_are_shaved_estimates():
    text = "word " * 1000
    count = providers.count_tokens(text, "anthropic", "claude-haiku-4-5")
    assert count.method == "estimate:anthropic-private-tokenizer"
    assert count.n == int(providers.estimate_tokens(text) * 0.9)


O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
])
CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200)
       | st.text(alphabet="ab AB1234567890'\".,;:!?()[]{}_-/\n\t\u0301\x85", max_size=200))
def test_estimate_never_exceeds_the_o200k_and_cl100k_pretokenizer_pieces(text):
    # tiktoken's BPE never merges across these pieces, so pieces <= tokens; the estimate must
    # stay at or under the pieces to be a lower bound on the real token count.
    regex = pytest.importorskip("regex")
    estimate = providers.estimate_tokens(text)
    assert estimate <= len(regex.findall(O200K_PATTERN, text))
    assert estimate <= len(regex.findall(CL100K_PATTERN, text))


def test_estimate_of_english_prose_is_close_to_its_piece_count():
    regex = pytest.importorskip("regex")
    text = "The quick brown fox jumps over the lazy dog, twice; then it rests. " * 20
    pieces = len(regex.findall(O200K_PATTERN, text))
    assert 0.75 * pieces <= providers.estimate_tokens(text) <= pieces


def test_estimate_matches_tiktoken_from_below_when_an_encoding_is_cached():
    providers._local_encoding.cache_clear()
    encoding = providers._local_encoding("o200k_base")
    if encoding is None:
        pytest.skip("o200k_base is not in tiktoken's local cache (offline machine)")
    text = open(providers.__file__, encoding="utf-8").read()
    assert providers.estimate_tokens(text) <= len(encoding.encode(text, disallowed_special=()))


def test_padding_to_the_estimate_lifts_the_real_token_count_over_the_floor():
    # Conservative direction: the estimate is a lower bound, so padding until the *estimate*
    # reaches the floor leaves the real count (>= the o200k pieces) at or above it.
    regex = pytest.importorskip("regex")
    from promptlint.contract import Layer, PromptContract
    from promptlint.contract.layers import canonical_json

    contract = PromptContract("short", "v1", [
        Layer("identity", text="You are brief.", stability="global"),
        Layer("tools", tools=[{"name": "find", "description": "Find.", "parameters": {"type": "object"}}], stability="project"),
    ])
    request = contract.placeholder_session().render("openai", "gpt-4.1", messages=[{"role": "user", "content": "hi"}])
    stable = canonical_json(request["tools"]).decode() + request["messages"][0]["content"]
    assert len(regex.findall(O200K_PATTERN, stable)) >= providers.cache_floor("openai", "gpt-4.1")


def test_a_verified_cached_encoding_file_is_handed_to_tiktoken(tmp_path, monkeypatch, no_network):
    # A stand-in file and its hash replace the real 3 MB encoding; tiktoken's loader is
    # replaced too, so this checks promptlint's gate (file present + hash right -> tiktoken).
    import tiktoken

    blob = b"stand-in encoding file"
    url = "https://example.invalid/o200k_base.tiktoken"
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(blob)
    data = dict(providers._data())
    data["tiktoken_encodings"] = {"o200k_base": {"url": url, "sha256": hashlib.sha256(blob).hexdigest()}}
    monkeypatch.setattr(providers, "_data", lambda: data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))

    class Encoding:
        def encode(self, text, disallowed_special=()):
            return text.split()

    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: Encoding())
    providers._local_encoding.cache_clear()
    try:
        count = providers.count_tokens("one two three", "openai", "gpt-4o")
    finally:
        providers._local_encoding.cache_clear()
    assert (count.n, count.method, count.exact) == (3, "tiktoken:o200k_base", True)
