"""Shell-style name patterns, compiled once: discovery's excludes and the catalog's qualified names."""

from __future__ import annotations

import fnmatch
import functools
import re


def glob_match(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """True when ``name`` matches one of the shell-style ``patterns``."""
    return _glob_regex(tuple(patterns)).match(name) is not None


@functools.lru_cache(maxsize=64)
def _glob_regex(patterns: tuple[str, ...]) -> re.Pattern:
    # One compiled alternation instead of fnmatch per pattern: discovery calls this per file.
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


class PatternTable:
    """Shell patterns compiled into one regex; ``match`` returns the payloads that match."""

    def __init__(self, entries: list[tuple[str, object]]):
        self._exact: dict[str, list] = {}
        self._globs: list[tuple[re.Pattern, object]] = []
        for pattern, payload in entries:
            if any(ch in pattern for ch in "*?["):
                self._globs.append((re.compile(fnmatch.translate(pattern)), payload))
            else:
                self._exact.setdefault(pattern, []).append(payload)

        self._seen: dict[str, tuple] = {}

    def match(self, name: str) -> list:
        # The analysis asks about the same few thousand names hundreds of thousands of times.
        hits = self._seen.get(name)
        if hits is None:
            found = list(self._exact.get(name, ()))
            found += [payload for regex, payload in self._globs if regex.match(name)]
            if len(self._seen) >= 200_000:  # string constants are names too: bound the memory
                self._seen.clear()
            hits = self._seen[name] = tuple(found)
        return list(hits)
