"""Provider prompt-caching facts and offline token counting.

The figures (cache floors, prices, breakpoint limits, TTLs, tokenizers) live in
``promptlint/providers/providers.yaml`` with the date they were compiled and a source for each; this
module only reads them. The assembler, the emulator and the simulator all count tokens with
:func:`count_tokens`, so they agree on where a prefix crosses a cache floor.

Token counting never touches the network. OpenAI models are counted with tiktoken only when the
encoding file is already in tiktoken's local cache with the expected hash; everything else uses
:func:`estimate_tokens`, a *lower bound* on the real count. A lower bound is the safe direction
for cache floors: the assembler pads a prefix until the estimate reaches the floor, so the real
prefix is at least as long and really is cacheable. An over-estimate would report a prefix as
cacheable while the provider silently caches nothing.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import re
import tempfile
import unicodedata
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

PROVIDERS: tuple[str, ...] = ("anthropic", "openai", "gemini")


@functools.lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = resources.files("promptlint.providers").joinpath("providers.yaml").read_text("utf-8")
    return yaml.safe_load(text)


DATA_DATE: str = str(_data()["date"])
"""The date the provider data was compiled (ISO 8601)."""


class UnknownProviderError(ValueError):
    """Raised for a provider name promptlint has no data for."""


class UnknownPriceError(LookupError):
    """Raised when no price is recorded for a model."""


def _provider(provider: str) -> dict[str, Any]:
    table = _data()["providers"].get(provider)
    if table is None:
        raise UnknownProviderError(
            f"unknown provider {provider!r}; expected one of: {', '.join(PROVIDERS)}"
        )
    return table


# A dated snapshot of a model id: claude-haiku-4-5-20251001, gpt-4o-2024-08-06, claude-x@20250101.
_SNAPSHOT = re.compile(r"[-@](\d{8}|\d{4}-\d{2}-\d{2})$")


def _lookup(table: dict[str, Any], model: str) -> Any | None:
    """Return the entry for ``model`` or for the model it is a dated snapshot of."""
    if model in table:
        return table[model]
    base = _SNAPSHOT.sub("", model)
    return table.get(base)


def cache_floor(provider: str, model: str) -> int:
    """Minimum cacheable prefix in tokens for ``model``.

    Unknown models get the provider's conservative floor (4,096 for Anthropic and Gemini,
    1,024 for OpenAI), so a prefix padded to it caches on every listed model too.
    """
    table = _provider(provider)
    floor = _lookup(table.get("floors") or {}, model)
    return int(floor if floor is not None else table["unknown_model_floor"])


def known_models(provider: str) -> tuple[str, ...]:
    """Model ids (or, for OpenAI, id prefixes) the data file knows for ``provider``, sorted."""
    table = _provider(provider)
    names = set(table.get("floors") or {}) | set(table.get("prices") or {}) | set(table.get("tokenizers") or {})
    return tuple(sorted(names))


def is_known_model(provider: str, model: str) -> bool:
    """True when the data file knows ``model`` (a dated snapshot of a known model counts;
    for OpenAI, whose floor is the same for every model, a known id prefix such as ``gpt-5``)."""
    names = known_models(provider)
    if _lookup(dict.fromkeys(names, True), model):
        return True
    return provider == "openai" and any(model.startswith(name) for name in names)


def max_breakpoints(provider: str) -> int:
    """How many cache breakpoints one request may carry (Anthropic 4; OpenAI 5.6+ 4 writes)."""
    return int(_provider(provider)["max_breakpoints"])


def lookback_blocks(provider: str) -> int | None:
    """How many block positions a read walks back from a breakpoint (None: no limit)."""
    value = _provider(provider)["lookback_blocks"]
    return None if value is None else int(value)


def read_window_breakpoints(provider: str) -> int | None:
    """How many of the latest breakpoints a read may match (OpenAI GPT-5.6+: 50), else None."""
    value = _provider(provider).get("read_window_breakpoints")
    return None if value is None else int(value)


def ttls(provider: str) -> tuple[str, ...]:
    """Cache lifetimes the provider accepts, as its wire spells them (first is the default)."""
    table = _provider(provider)
    values = list(table["ttls"])
    values.remove(table["default_ttl"])
    return (table["default_ttl"], *values)


def implicit_seconds(provider: str) -> int:
    """How long an implicit (automatic) cache entry lives idle in the emulator's model."""
    return int(_provider(provider).get("implicit_seconds") or 300)


def prefix_step(provider: str) -> int | None:
    """Granularity of automatic prefix hits after the floor (OpenAI pre-5.6: 128), else None."""
    value = _provider(provider).get("prefix_step")
    return None if value is None else int(value)


_GPT_VERSION = re.compile(r"^gpt-(\d+)(?:\.(\d+))?")


def uses_explicit_breakpoints(model: str) -> bool:
    """True for OpenAI models that cache only at breakpoints (GPT-5.6 and later)."""
    match = _GPT_VERSION.match(model)
    if match is None:
        return False
    major, minor = (int(part) for part in _provider("openai")["explicit_breakpoints_from"].split("."))
    version = (int(match.group(1)), int(match.group(2) or 0))
    return version >= (major, minor)


def known_model(provider: str, model: str) -> bool:
    """True when ``model`` (or the model it is a dated snapshot of) is one the data file lists for
    ``provider``: in its floors, its prices or its ``models`` list. The emulator answers the
    provider's 404 for any other model, and the smoke refuses it before sending anything."""
    table = _provider(provider)
    listed = {*(table.get("models") or ()), *(table.get("floors") or {}), *(table.get("prices") or {})}
    return model in listed or _SNAPSHOT.sub("", model) in listed


def accepted_retentions(model: str) -> tuple[str, ...]:
    """The ``prompt_cache_retention`` values an OpenAI model accepts ([O-SDK]: ``24h`` only on the
    listed models, and only ``24h`` from ``retention_24h_only_from`` on)."""
    table = _provider("openai")
    capable = any(model == name or model.startswith(name + "-") for name in table["retention_24h_models"])
    match = _GPT_VERSION.match(model)
    if match is not None:
        major, minor = (int(part) for part in str(table["retention_24h_only_from"]).split("."))
        if (int(match.group(1)), int(match.group(2) or 0)) >= (major, minor):
            return ("24h",)
    return ("in_memory", "24h") if capable else ("in_memory",)


def tokenizer(provider: str, model: str) -> str:
    """Name of the tokenizer ``model`` uses (a tiktoken encoding for OpenAI models)."""
    table = _provider(provider)
    if "tokenizers" not in table:
        return str(table["tokenizer"])
    names = table["tokenizers"]
    for prefix in sorted(names, key=len, reverse=True):
        if model.startswith(prefix):
            return str(names[prefix])
    return str(table["default_tokenizer"])


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model.

    ``cache_read`` is the price of a cache hit; ``cache_write_5m`` / ``cache_write_1h`` are
    Anthropic's write prices by TTL; ``cache_write`` is the single write price of providers
    with one TTL (OpenAI GPT-5.6+; 0.0 where writes are free). ``source`` cites the
    data file's sources of the sourced fields; ``unsourced`` names the fields no source
    states (a price derived from an unsourced one is unsourced too), and ``seen_in`` the
    third-party page where such a figure was seen, if any.
    """

    model: str
    input: float
    output: float | None
    cache_read: float
    cache_write: float
    cache_write_5m: float
    cache_write_1h: float
    source: str
    unsourced: tuple[str, ...] = ()
    seen_in: str | None = None

    @property
    def sourced(self) -> bool:
        """True when every field of this price is stated by a listed source."""
        return not self.unsourced


_CACHE_PRICES = ("cache_read", "cache_write", "cache_write_5m", "cache_write_1h")


def price(provider: str, model: str) -> Price:
    """The recorded price of ``model`` (dated snapshots resolve to their base model).

    Raises :class:`UnknownPriceError` when no price is recorded.
    """
    table = _provider(provider)
    entry = _lookup(table.get("prices") or {}, model)
    if entry is None:
        known = ", ".join(sorted(table.get("prices") or {}))
        raise UnknownPriceError(
            f"no price recorded for {provider} model {model!r} (data of {DATA_DATE}; known: {known})"
        )
    base = float(entry["input"])
    output = entry.get("output")
    unsourced = list(entry.get("unsourced") or ())
    seen_in = entry.get("seen_in")
    if seen_in is not None:
        seen_in = str(_data().get("third_party", {}).get(seen_in, seen_in))
    if provider == "anthropic":
        reads = table.get("read_multipliers") or {}
        read_multiplier = _lookup(reads, model)
        if read_multiplier is None:
            read_multiplier = table["default_read_multiplier"]
        writes = table["write_multipliers"]
        if "input" in unsourced:  # cache prices are multiples of the input price
            unsourced += [name for name in _CACHE_PRICES if name not in unsourced]
        return Price(
            model=model,
            input=base,
            output=None if output is None else float(output),
            cache_read=round(base * float(read_multiplier), 6),
            cache_write=round(base * float(writes["5m"]), 6),
            cache_write_5m=round(base * float(writes["5m"]), 6),
            cache_write_1h=round(base * float(writes["1h"]), 6),
            source=str(entry["source"]),
            unsourced=tuple(unsourced),
            seen_in=seen_in,
        )
    if "cache_write" in entry:
        write = float(entry["cache_write"])
    elif provider == "openai" and uses_explicit_breakpoints(model):
        write = round(base * float(table["explicit_write_multiplier"]), 6)
        if "input" in unsourced:
            unsourced += ["cache_write", "cache_write_5m", "cache_write_1h"]
    else:
        write = 0.0
    return Price(
        model=model,
        input=base,
        output=None if output is None else float(output),
        cache_read=float(entry.get("cached_input", base)),
        cache_write=write,
        cache_write_5m=write,
        cache_write_1h=write,
        source=str(entry["source"]),
        unsourced=tuple(unsourced),
        seen_in=seen_in,
    )


# --- token counting -------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenCount:
    """A token count and how it was obtained.

    ``method`` is ``"tiktoken:<encoding>"`` for an exact count or ``"estimate:<reason>"`` for
    the offline lower-bound estimate.
    """

    n: int
    method: str

    @property
    def exact(self) -> bool:
        """True when a real tokenizer produced the count."""
        return self.method.startswith("tiktoken:")


# Unicode White_Space, which is what the tokenizers' \s means (str.isspace also takes \x1c-\x1f).
_WHITESPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | frozenset(
    chr(code) for code in range(0x2000, 0x200B)
)


class _CharClasses(dict):
    """str.translate table: a character -> its class letter, computed once per character.

    L letter, N number, P punctuation/other, S ``/``, R ``\r``/``\n``, W other whitespace.
    Combining marks and characters unassigned in Python's Unicode tables map to None (dropped):
    marks join letter pieces in o200k but punctuation pieces elsewhere, and unassigned ones may
    be either in the tokenizer's newer tables; dropping them only merges runs, keeping the bound.
    """

    def __missing__(self, code: int) -> str | None:
        char = chr(code)
        category = unicodedata.category(char)
        if char in "\r\n":
            kind: str | None = "R"
        elif char in _WHITESPACE:
            kind = "W"
        elif char == "/":
            kind = "S"
        elif category in ("Cn", "Mn", "Mc", "Me"):
            kind = None
        elif category[0] == "L":
            kind = "L"
        elif category[0] == "N":
            kind = "N"
        else:
            kind = "P"
        self[code] = kind
        return kind


_CLASSES = _CharClasses()
# A punctuation run also swallows the newlines and slashes right after it, as o200k's does.
_RUNS = re.compile(r"(?P<punct>[PS]+)[RS]*|(?P<letters>L+)|(?P<digits>N+)|[RW]+")


@functools.lru_cache(maxsize=2048)
def estimate_tokens(text: str) -> int:
    """A lower bound on the o200k/cl100k token count of ``text``, without a vocabulary.

    tiktoken's BPE never merges across its pre-tokenizer pieces, so the number of pieces is a
    lower bound on the number of tokens. This counts a coarsening of those pieces: one per run
    of letters, one per three digits, one per run of punctuation (zero when a single character
    sits right before letters, where the pre-tokenizer glues it to the word); whitespace counts
    zero. Every unit counted here maps to a distinct real piece, so the result never exceeds
    the real count (a hypothesis test checks this against both tokenizers' real patterns).
    English prose comes out around 75-90% of the real count.
    """
    classes = text.translate(_CLASSES)
    count = 0
    for match in _RUNS.finditer(classes):
        if match.group("letters"):
            count += 1
        elif match.group("digits"):
            count += math.ceil(len(match.group("digits")) / 3)
        elif match.group("punct"):
            glued_to_word = (match.end() - match.start() == 1
                             and classes[match.end():match.end() + 1] == "L")
            count += 0 if glued_to_word else 1
    return count


def _tiktoken_cache_file(url: str) -> str | None:
    """The path where tiktoken caches ``url`` (None when its caching is disabled)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if cache_dir == "":
        return None
    return os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())


@functools.lru_cache(maxsize=8)
def _local_encoding(name: str) -> Any | None:
    """The tiktoken encoding ``name`` if its file is cached locally with the right hash.

    tiktoken downloads a missing or corrupt file, and this machine (like most CI runners) has
    no route to the blob store; so the file is verified here and tiktoken is called only when
    it will read from disk.
    """
    spec = (_data().get("tiktoken_encodings") or {}).get(name)
    if spec is None:
        return None
    path = _tiktoken_cache_file(spec["url"])
    if path is None or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            if hashlib.sha256(handle.read()).hexdigest() != spec["sha256"]:
                return None
        import tiktoken  # optional extra "tokens"; imported late to keep lint light

        return tiktoken.get_encoding(name)
    except Exception:  # noqa: BLE001 - any failure means "not available", never a crash
        return None


def count_tokens(text: str, provider: str, model: str, *, allow_tiktoken: bool = True) -> TokenCount:
    """Count the tokens of ``text`` for ``model``, offline.

    OpenAI models: exact via tiktoken when the encoding file is cached locally (and
    ``allow_tiktoken``), otherwise :func:`estimate_tokens`. Anthropic and Gemini (private
    tokenizers): the estimate times the provider's ``estimate_factor``, rounded down.
    Estimates are lower bounds by design (see the module docstring). Pass
    ``allow_tiktoken=False`` where the result decides bytes (padding, goldens), so they do not
    depend on which machine has tiktoken's cache.
    """
    table = _provider(provider)
    name = tokenizer(provider, model)
    if provider == "openai" and not allow_tiktoken:
        reason = f"{name}-deterministic"
    elif provider == "openai":
        encoding = _local_encoding(name)
        if encoding is not None:
            return TokenCount(len(encoding.encode(text, disallowed_special=())), f"tiktoken:{name}")
        reason = f"{name}-not-cached"
    else:
        reason = f"{name}-tokenizer"
    factor = float(table.get("estimate_factor", 1.0))
    return TokenCount(int(estimate_tokens(text) * factor), f"estimate:{reason}")


def sources() -> dict[str, str]:
    """The short source keys used in the data file (vendor pages and SDK releases, dated) and what each names."""
    return {str(key): str(value) for key, value in _data()["sources"].items()}
