"""promptlint: keep LLM prompt caches warm.

A static linter that follows volatile values (time, ids, host facts, per-turn content,
unordered collections) into the stable layers of LLM requests, a reference prompt
assembler, golden prefix-hash tests and a cache smoke test.
"""

__version__ = "0.1.0"
