"""Searching a regex alternation for whether it occurs in a text, fast on whole files.

The admission test of a lint run (``Catalog.shape_prefilter``) asks of every file of a tree
whether one of a dozen shapes occurs in it. Python's regex engine scans quickly only for a
pattern that starts with a literal; an alternation whose branches start with ``\\b`` or a
character class is tried branch by branch at nearly every position of the text, which cost
seconds on a large tree. ``TextTest`` gives the same answers as ``re.search`` from literals.
"""

from __future__ import annotations

import functools
import re


def _top_level_branches(pattern: str) -> list[str]:
    """The alternatives of a regex's outermost ``|`` (escapes, classes and groups kept whole)."""
    branches, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "^":
                i += 1
            if pattern[i + 1:i + 2] == "]":  # a leading ] is a member, not the end
                i += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    branches.append(pattern[start:])
    return branches


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class TextTest:
    """``search(text)``: does a regex alternation occur in a text? Fast on whole files.

    Python's regex engine scans quickly for a pattern that starts with a literal; an
    alternation whose branches start with ``\\b`` or a class is tried branch by branch at
    nearly every position of the text (for the admission test, seconds on a large tree). So
    each branch is searched on its own, from a literal: a leading ``\\b`` is checked on the
    match, and a leading class of a few characters (``["']``) becomes one branch per character.
    """

    _CLASS_LEAD = re.compile(r"\[([^\]\\^-]{1,4})\]")

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._branches: list[tuple[re.Pattern, bool]] = []
        for branch in _top_level_branches(pattern):
            lead = self._CLASS_LEAD.match(branch)
            if lead:
                self._branches += [(re.compile(re.escape(ch) + branch[lead.end():]), False) for ch in lead.group(1)]
            elif branch.startswith("\\b") and branch[2:3].isalnum():
                self._branches.append((re.compile(branch[2:]), True))
            else:
                self._branches.append((re.compile(branch), False))

    def search(self, text: str) -> bool:
        for regex, bounded in self._branches:
            found = regex.search(text)
            while found is not None and bounded and not self._at_boundary(text, found.start()):
                found = regex.search(text, found.start() + 1)
            if found is not None:
                return True
        return False

    @staticmethod
    def _at_boundary(text: str, pos: int) -> bool:
        return (pos > 0 and _word_char(text[pos - 1])) != (pos < len(text) and _word_char(text[pos]))


def token_test(tokens: dict[str, bool]) -> TextTest:
    """Whether a text names one of ``tokens`` as a word: name -> written after a dot (a method:
    ``.invoke``); a dotted name (``messages.create``) is matched with its dots."""
    branches = []
    for name, dotted in sorted(tokens.items()):
        words = r"\s*\.\s*".join(map(re.escape, name.split(".")))
        branches.append(rf"\.\s*{words}\b" if dotted and "." not in name else rf"\b{words}\b")
    return TextTest("|".join(branches) or r"(?!)")


class NamesTest:
    """Whether a text names one of ``names`` as a word; a name with a leading dot is a method
    (``.start``: ``agent.start(`` but not ``.startswith(``; ``LLM`` but not ``LLMConfig``).
    ``str.find`` per name (the names are plain words): a run asks it of every function of every
    file that may call another module's builder, with hundreds of names."""

    def __init__(self, names):
        self.tokens = sorted(merged_tokens({name.lstrip("."): name.startswith(".")} for name in names).items())

    def search(self, text: str) -> bool:
        for name, dotted in self.tokens:
            at = text.find(name)
            while at >= 0:
                end = at + len(name)
                if not (end < len(text) and _word_char(text[end])) and (
                        _after_dot(text, at) if dotted else not (at and _word_char(text[at - 1]))):
                    return True
                at = text.find(name, end)
        return False


def _after_dot(text: str, at: int) -> bool:
    """``text[at]`` follows a dot (``agent.start``, ``agent. start``)."""
    at -= 1
    while at >= 0 and text[at] in " \t":
        at -= 1
    return at >= 0 and text[at] == "."


@functools.lru_cache(maxsize=64)
def names_test(names: frozenset[str]) -> NamesTest:
    """``NamesTest`` of ``names``, built once per set."""
    return NamesTest(names)


def merged_tokens(token_maps) -> dict[str, bool]:
    """Several specs' or libraries' tokens together: a name written bare by any is bare."""
    merged: dict[str, bool] = {}
    for tokens in token_maps:
        for name, dotted in tokens.items():
            merged[name] = merged.get(name, True) and dotted
    return merged


# Shapes that are stable layers whatever library sends them: a system/developer-role message
# in any spelling, a ("system", ...) pair, a request payload's system/instructions keys, a
# template with a clock inside.
#: Methods named for writing a stable layer (`append_instructions`, `set_system_prompt`): a
#: shape token here, and a sink for the analysis (analysis/sinks.py).
LAYER_WRITER_NAME = (r"(?:set|update|append|add|extend|inject|prepend)_(?:to_)?"
                     r"(?:system_?(?:prompt|message|instruction)s?|instructions|developer_?(?:message|instructions))")
SHAPE_TOKENS = (
    r"""["']role["']\s*:\s*(?:["'](?:system|developer)["']|(?:[\w.]*\.)?(?:SYSTEM|DEVELOPER)\b)"""
    r"""|\brole\s*=\s*(?:["'](?:system|developer)["']|(?:[\w.]*\.)?(?:SYSTEM|DEVELOPER)\b|[\w.]*\.(?:system|developer)\b)"""
    # A role test: the system message is edited in place (`if msgs[0][ROLE] == SYSTEM: ... +=`).
    r"""|\b(?:role|ROLE)["']?\s*\]?\s*==\s*(?:["'](?:system|developer)["']|(?:[\w.]*\.)?(?:SYSTEM|DEVELOPER|system|developer)\b)"""
    # The head of a conversation rewritten in place (`conversation_history[0]["content"] = prompt`).
    r"""|(?:messages|history)\[0\](?:\[["']content["']\]|\.content)\s*\+?=(?!=)"""
    r"""|\bSystem(?:Message|Content|Prompt|PromptPart|MessagePromptTemplate)\s*\("""
    r"""|\(\s*["']system["']\s*,"""
    r"""|["']system(?:_instruction|Instruction)?["']\s*:|["']instructions["']\s*:|["']preamble["']\s*:"""
    r"""|\bsystem(?:_prompt|_instruction)?=(?!=)|\bpreamble=(?!=)"""
    r"""|\{[{%][^}\n]{0,80}\bnow\s*\("""
    rf"""|\.{LAYER_WRITER_NAME}\s*\("""
    r"""|["']input_schema["']\s*:|["']inputSchema["']\s*:|["']parameters["']\s*:\s*\{\s*["']type["']"""
)
