"""The harness: record the requests the user's own agent sends through the real SDKs, and assert
that its stable prefix is byte-identical from turn to turn and read from the cache.

    from promptlint.caching.harness import PrefixHarness

    def test_my_agent_keeps_its_prefix():
        with PrefixHarness() as harness:
            agent = MyAgent(client=harness.anthropic())      # or harness.openai(), harness.gemini()
            agent.respond("first question")
            harness.advance(90)                               # a later turn, 90 s later
            agent.respond("second question")
            harness.assert_stable_prefix()

No network: the SDK clients point at an in-process emulator on loopback (the same cache model as
``promptlint emulate``). ``advance`` moves the emulator's cache clock and, when ``time-machine``
is installed, the wall clock the agent reads (``time.time``, ``datetime.now``) too: a timestamp
leaked into a stable layer then differs between turns inside one test. On failure the message
names the request field, the block and the byte where a turn first differs from the one before,
with both snippets — the words of the golden gate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from promptlint.caching.errors import CacheRequestError
from promptlint.caching.model import CacheModel
from promptlint.caching.prefix import Block, first_difference
from promptlint.caching.request_blocks import anthropic_blocks, gemini_blocks, gemini_request, openai_blocks
from promptlint.caching.server import EmulatorServer

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z: a fixed wall-clock start keeps runs comparable


class PrefixChanged(AssertionError):
    """A turn's stable prefix differs from the turn before, or a later turn read nothing."""


@dataclass
class Recorded:
    """One request the agent sent: which API, its body, and the cache tokens the emulator reported."""

    provider: str
    path: str
    body: dict
    cache_read: int
    status: int

    def blocks(self) -> list[Block]:
        """The request's prefix blocks, as the cache model compares them."""
        if self.provider == "anthropic":
            return anthropic_blocks(self.body)
        if self.provider == "gemini":
            return gemini_blocks(gemini_request(self.body))
        return openai_blocks(self.body)


def _cache_read(payload: Any) -> int:
    if not isinstance(payload, dict):
        return 0
    usage = payload.get("usage") or payload.get("usageMetadata") or {}
    if "cache_read_input_tokens" in usage:
        return int(usage["cache_read_input_tokens"] or 0)
    if "cachedContentTokenCount" in usage:
        return int(usage["cachedContentTokenCount"] or 0)
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
    return int(details.get("cached_tokens") or 0)


class PrefixHarness:
    """An in-process emulator that records every request, with a movable clock.

    Use as a context manager (or call :meth:`close`). ``requests`` lists what was recorded.
    """

    def __init__(self, freeze_wall_clock: bool = True):
        self._now = [0.0]
        # advance() shifts the wall clock waitress times idle connections by: no idle timeout here,
        # or a shift would close the SDK's kept-alive connection under it
        self.server = EmulatorServer(cache=CacheModel(clock=lambda: self._now[0]), idle_seconds=10 * 365 * 86400.0)
        self.requests: list[Recorded] = []
        handle = self.server.app.handle

        def recording(method: str, path: str, query: dict, headers: dict, raw: bytes):
            reply = handle(method, path, query, headers, raw)  # raises for a rejected request: not a turn
            if method == "POST" and reply.status == 200 and not path.endswith(("count_tokens", "input_tokens")) \
                    and "cachedContents" not in path:
                body = json.loads(raw or b"{}")
                provider = "anthropic" if path.startswith("/v1/messages") else (
                    "gemini" if ":generateContent" in path or ":streamGenerateContent" in path else "openai")
                if provider == "gemini":
                    body = {**body, "model": path.rsplit("/", 1)[-1].split(":", 1)[0]}
                self.requests.append(Recorded(provider, path, body, _cache_read(reply.payload), reply.status))
            return reply

        self.server.app.handle = recording
        self._traveller = None
        self._shift = None
        if freeze_wall_clock:
            try:
                import time_machine
            except ImportError:  # optional: without it, advance() moves only the cache clock
                time_machine = None
            if time_machine is not None:
                self._traveller = time_machine.travel(START, tick=False)
                self._shift = self._traveller.start()
        self.server.start()

    # ------------------------------------------------------------------ clients
    @property
    def url(self) -> str:
        """The emulator's base URL."""
        return self.server.url

    def anthropic(self, **options: Any):
        """An ``anthropic.Anthropic`` client pointed at the emulator."""
        import anthropic

        return anthropic.Anthropic(**{"api_key": "harness", "base_url": self.url, "max_retries": 0, "timeout": 30,
                                      **options})

    def openai(self, **options: Any):
        """An ``openai.OpenAI`` client pointed at the emulator."""
        import openai

        return openai.OpenAI(**{"api_key": "harness", "base_url": self.url + "/v1", "max_retries": 0, "timeout": 30,
                                **options})

    def gemini(self):
        """A ``google.genai.Client`` pointed at the emulator."""
        from google import genai
        from google.genai import types

        return genai.Client(api_key="harness", http_options=types.HttpOptions(base_url=self.url, timeout=30_000))

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass: the cache clock (TTL) and, with time-machine, the wall clock."""
        self._now[0] += seconds
        if self._shift is not None:
            self._shift.shift(seconds)

    # --------------------------------------------------------------- assertions
    def assert_stable_prefix(self, min_turns: int = 2) -> None:
        """Every request after the first, per API, keeps the previous one's prefix byte for byte
        (only appends), and reads from the cache. Raises :class:`PrefixChanged` naming the field,
        block and byte where it first differs, with a short diff."""
        by_api: dict[str, list[Recorded]] = {}
        for recorded in self.requests:
            by_api.setdefault(recorded.path, []).append(recorded)
        if max((len(r) for r in by_api.values()), default=0) < min_turns:
            raise PrefixChanged(f"the agent sent {len(self.requests)} request(s); at least {min_turns} turns to one "
                                "API are needed to compare prefixes")
        for turns in by_api.values():
            for n in range(1, len(turns)):
                before, after = turns[n - 1], turns[n]
                try:
                    old, new = before.blocks(), after.blocks()
                except CacheRequestError as exc:
                    raise PrefixChanged(f"turn {n + 1}: the request is invalid: {exc}") from None
                diff = first_difference(old, new)
                if diff is not None and diff["index"] < len(old):
                    raise PrefixChanged(
                        f"turn {n + 1} ({after.provider}): the stable prefix changed at field "
                        f"{diff['level']!r}, block {diff['block']}, byte {diff['byte_offset']}\n"
                        f"  turn {n}: ...{diff['before']!r}\n  turn {n + 1}: ...{diff['after']!r}")
                if after.cache_read == 0:
                    raise PrefixChanged(f"turn {n + 1} ({after.provider}): the prefix is unchanged but nothing was "
                                        "read from the cache (no breakpoint, or under the model's floor?)")

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Stop the emulator and give the wall clock back."""
        self.server.shutdown()
        self.server.server_close()
        if self._traveller is not None:
            self._traveller.stop()
            self._traveller = None

    def __enter__(self) -> "PrefixHarness":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

