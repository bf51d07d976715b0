"""The rule catalog: codes and their docs, sources, sinks and sanitizers, loaded from YAML.

Everything the analysis knows about the outside world (which call is wall-clock time, which
keyword of which SDK call is a system prompt) is data in ``rules/*.yaml``; users add their
own files through ``rule-files`` in ``[tool.promptlint]``. A broken rule file is a
``CatalogError`` naming the file and the entry, never a traceback.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple
from pathlib import Path

from promptlint import __version__
from promptlint.lint.diagnostic import SOURCE_FAMILIES, RuleDoc, Settings
from promptlint.lint.literal_search import SHAPE_TOKENS, TextTest, merged_tokens, token_test
from promptlint.lint.patterns import PatternTable

_HERE = Path(__file__).resolve().parent.parent  # the promptlint package


class CatalogError(Exception):
    """A rule file is missing, unreadable or does not match the schema."""


def rules_dir() -> Path:
    """The bundled rules folder (``promptlint/_rules`` in a wheel, ``rules/`` in a checkout)."""
    for candidate in (_HERE / "_rules", _HERE.parent / "rules"):
        if (candidate / "codes.yaml").is_file():
            return candidate
    raise CatalogError(f"bundled rule files not found next to {_HERE}")


def _load_yaml(path: Path) -> dict:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read rule file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{path}: rule file is not UTF-8: {exc.reason}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        what = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise CatalogError(f"{path}: invalid YAML: {what}{where}") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level")
    return data


_DOC_KEYS = {
    "name", "family", "severity", "summary", "what", "why", "example", "use_instead",
    "fix_safety", "valid", "invalid", "sources",
}
_CODE_RE = re.compile(r"^PC\d{3}$")


@functools.lru_cache(maxsize=1)
def load_rule_docs() -> dict[str, RuleDoc]:
    """Every rule code with its documentation, in code order."""
    path = rules_dir() / "codes.yaml"
    raw = _load_yaml(path).get("codes")
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: 'codes' must be a mapping")
    docs: dict[str, RuleDoc] = {}
    for code in sorted(raw):
        entry = raw[code]
        where = f"{path}: {code}"
        if not _CODE_RE.match(str(code)):
            raise CatalogError(f"{where}: codes look like PC123")
        if not isinstance(entry, dict):
            raise CatalogError(f"{where}: expected a mapping")
        unknown = set(entry) - _DOC_KEYS
        if unknown:
            raise CatalogError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        if entry.get("sources", "") not in ("", *SOURCE_FAMILIES):
            raise CatalogError(f"{where}: 'sources' is one of {', '.join(SOURCE_FAMILIES)}")
        try:
            docs[code] = RuleDoc(
                code=code,
                name=str(entry["name"]),
                family=str(entry["family"]),
                summary=str(entry["summary"]),
                severity=entry.get("severity", "error"),
                what=str(entry["what"]).strip(),
                why=str(entry["why"]).strip(),
                example=str(entry.get("example", "")),
                use_instead=str(entry.get("use_instead", "")),
                fix_safety=str(entry.get("fix_safety", "Not auto-fixable.")),
                valid=tuple(entry.get("valid", ()) or ()),
                invalid=tuple(entry.get("invalid", ()) or ()),
                sources=str(entry.get("sources", "")),
            )
        except KeyError as exc:
            raise CatalogError(f"{where}: missing key {exc.args[0]!r}") from None
        if docs[code].severity not in ("error", "warning"):
            raise CatalogError(f"{where}: severity must be 'error' or 'warning'")
    return docs


def known_codes() -> frozenset[str]:
    """All rule codes."""
    return frozenset(load_rule_docs())


def expand_selector(selector: str, codes: frozenset[str] | None = None) -> frozenset[str]:
    """The codes a selector names: a full code (``PC101``) or a prefix (``PC1``, ``PC``).

    Raises ``ValueError`` when it names no code, so config errors can name the key.
    """
    codes = known_codes() if codes is None else codes
    selector = selector.strip().upper()
    if selector == "ALL":
        return codes
    hits = frozenset(c for c in codes if c.startswith(selector))
    if not hits:
        raise ValueError(f"unknown rule code or prefix {selector!r}")
    return hits


def fingerprint_files(paths: list[Path]) -> str:
    """A short hash of rule files' bytes, for cache keys (no YAML parsing needed)."""
    digest = hashlib.blake2b(digest_size=12)
    for path in paths:
        digest.update(str(path).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


# --------------------------------------------------------------------------------------
# Sources, sinks, sanitizers (rules/sources.yaml, sinks.yaml, sanitizers.yaml + user files)

LABELS = ("volatile", "unordered")
ARG_KINDS = (
    "value", "template", "anthropic-system", "anthropic-messages", "chat-messages", "role-tuples",
    "dict-keys", "callable", "state-template", "cache-key",
)


class SourceSpec(NamedTuple):
    """One family of sources: how to recognise it and the code it reports under."""

    id: str
    code: str
    label: str
    note: str
    calls: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    state_fields: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    newest_of: tuple[str, ...] = ()
    conversations: tuple[str, ...] = ()  # names of a whole conversation, rendered into text
    message_types: tuple[str, ...] = ()  # a chat platform's incoming message: its text is this turn's
    receiver_methods: tuple[tuple[str, tuple[str, ...]], ...] = ()
    strings: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()  # database tables whose rows a query reads back (what earlier turns wrote)
    max_args: int | None = None
    sortable: bool = False
    rendered: bool = False


class ArgSpec(NamedTuple):
    """Where a sink call carries a stable layer and how to read it."""

    kind: str
    layer: str
    keyword: str | None = None
    position: int | None = None
    keys: tuple[str, ...] = ()


class Condition(NamedTuple):
    """A constraint on one keyword of a call (see the `checks` section of sinks.yaml)."""

    keyword: str
    op: str
    value: object


class SinkSpec(NamedTuple):
    """A call that writes stable layers."""

    id: str
    layer: str
    callees: tuple[str, ...]
    args: tuple[ArgSpec, ...]
    shapes: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    when: tuple[Condition, ...] = ()


class DecoratorSpec(NamedTuple):
    """A decorator whose function's return value is a stable layer on every request."""

    id: str
    layer: str
    decorators: tuple[str, ...]
    shapes: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    when: tuple[Condition, ...] = ()  # on the decorator call's keywords (`dynamic=True`)


class CheckSpec(NamedTuple):
    """A framework option that makes a stable layer volatile by design.

    With a ``layer``, the option puts a source of the code's family (PC101 time, PC401
    memory) into that framework-built layer; ``reference`` cites the framework's code."""

    code: str
    callees: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    when: tuple[Condition, ...] = ()
    detail: str = ""
    layer: str = ""
    reference: str = ""


class StableNameSpec(NamedTuple):
    """Names that say a value is a stable layer: a function returning it, an attribute holding it."""

    id: str
    layer: str
    pattern: str
    #: Only methods of a class with one of these bases (fnmatch on the dotted base): a hook the
    #: framework calls on every request (atomic-agents ``BaseDynamicContextProvider.get_info``).
    bases: tuple[str, ...] = ()


class SanitizerSpec(NamedTuple):
    """Calls whose result no longer carries the given labels."""

    id: str
    calls: tuple[str, ...]
    clears: tuple[str, ...]


class SerializerSpec(NamedTuple):
    """A dict-to-text call whose output order follows the dict unless keys are sorted."""

    call: str
    sort_kwarg: str
    default_sorted: bool


@dataclass
class Catalog:
    """Every source, sink, sanitizer and check, with lookup tables for the analysis."""

    sources: list[SourceSpec] = field(default_factory=list)
    sinks: list[SinkSpec] = field(default_factory=list)
    decorators: list[DecoratorSpec] = field(default_factory=list)
    checks: list[CheckSpec] = field(default_factory=list)
    sanitizers: list[SanitizerSpec] = field(default_factory=list)
    stable_names: list[StableNameSpec] = field(default_factory=list)
    serializers: list[SerializerSpec] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def compile(self) -> "Catalog":
        """Build the lookup tables once all files are loaded."""
        self.source_calls = PatternTable([(p, s) for s in self.sources for p in s.calls])
        #: set displays and comprehensions are sources when `set()` is (rules/optional/ordering.yaml)
        self.set_order = next((s for s in self.sources if "builtins.set" in s.calls), None)
        self.source_attrs = PatternTable([(p, s) for s in self.sources for p in s.attributes])
        self.source_methods = {m: s for s in self.sources for m in s.methods if not any(c in m for c in "*?[")}
        self.source_method_globs = PatternTable([(m, s) for s in self.sources for m in s.methods if any(c in m for c in "*?[")])
        self.source_params = {p: s for s in self.sources for p in s.params}
        self.source_state_fields = {f: s for s in self.sources for f in s.state_fields}
        self.source_fields = {f: s for s in self.sources for f in s.fields}
        self.source_newest_of = PatternTable([(p, s) for s in self.sources for p in s.newest_of])
        self.source_conversations = PatternTable([(p, s) for s in self.sources for p in s.conversations])
        self.source_message_types = PatternTable([(p, s) for s in self.sources for p in s.message_types])
        self.source_receiver_methods = PatternTable([(f"{receiver}.{m}", s) for s in self.sources
                                                     for receiver, methods in s.receiver_methods for m in methods])
        self.source_strings = PatternTable([(p, s) for s in self.sources for p in s.strings])
        self.source_tables = PatternTable([(p.lower(), s) for s in self.sources for p in s.tables])
        self.sink_calls = PatternTable([(p, s) for s in self.sinks for p in s.callees])
        self.sink_shapes = [(sh, s) for s in self.sinks for sh in s.shapes]
        self.decorator_calls = PatternTable([(p, d) for d in self.decorators for p in d.decorators])
        self.decorator_shapes = [(sh, d) for d in self.decorators for sh in d.shapes]
        self.check_calls = PatternTable([(p, c) for c in self.checks for p in c.callees])
        self.check_shapes = [(sh, c) for c in self.checks for sh in c.shapes]
        self.sanitizer_calls = PatternTable([(p, s) for s in self.sanitizers for p in s.calls])
        self.serializer_calls = {s.call: s for s in self.serializers}
        self.prefilter = self._prefilter_regex()
        plain = [n for n in self.stable_names if not n.bases]
        self.stable_name_regex = re.compile("|".join(f"(?:{n.pattern})" for n in plain) or r"(?!)")
        self._stable_layers = [(re.compile(n.pattern), n.layer) for n in plain]
        self._hooks = [(re.compile(n.pattern), n.layer, n.bases) for n in self.stable_names if n.bases]
        # Admission without an SDK import: a stable-layer shape or name anywhere in the text;
        # for a hook, a class deriving from its base.
        names = "|".join(f"(?:{n.pattern.strip('^$')})" for n in plain)
        hooks = "|".join(re.escape(b.rsplit(".", 1)[-1]).replace(r"\*", r"\w*") for _, _, bases in self._hooks for b in bases)
        self.shape_prefilter = TextTest(SHAPE_TOKENS + (rf"|\bdef\s+(?:{names})\b|\bclass\s+(?:{names})\b|\.(?:{names})\s*(?:\+?=|\.append)" if names else "")
                                        + (rf"|\bclass\s+\w+\([^)]*\b(?:{hooks})\b" if hooks else ""))
        return self

    @staticmethod
    def _spec_roots(spec) -> set[str]:
        patterns = getattr(spec, "callees", ()) + getattr(spec, "decorators", ())
        # The first component, keeping a trailing * ("langchain*" covers langchain_core).
        roots = {re.split(r"[.(]", p, maxsplit=1)[0] for p in patterns}
        roots.update(i.split(".")[0] for i in spec.imports)
        roots.discard("")
        return roots

    @staticmethod
    def _spec_tokens(spec) -> dict[str, bool]:
        """The names a sink is called by, each with whether it is written after a dot: a class
        or function (``SystemMessage``, ``completion``) may be called bare; a method
        (``().chat``, ``ChatPromptTemplate.from_messages``) is always ``x.chat``. Sink shapes
        match only calls on an attribute; decorator and check shapes may be imported names."""
        tokens = {shape: isinstance(spec, SinkSpec) for shape in spec.shapes}
        for pattern in getattr(spec, "callees", ()) + getattr(spec, "decorators", ()):
            if "()" in pattern:
                tail, method = pattern.rsplit("()", 1)[1].lstrip("."), True
            else:
                parts = pattern.rsplit(".", 2)
                tail, method = parts[-1], len(parts) > 1 and parts[-2][:1].isupper()
            tail = tail.strip("*")
            if tail and all(part.isidentifier() for part in tail.split(".")):
                tokens[tail] = tokens.get(tail, True) and method
        return tokens

    def library_roots(self) -> set[str]:
        """Top-level modules that a file must import to contain a sink."""
        return set(self._tokens_by_root)

    def _prefilter_regex(self) -> TextTest:
        """Tokens without which no sink can appear in a piece of code (any library).

        Keyword names such as ``content=`` are not tokens: they would let most files of a
        framework through.
        """
        specs_by_root: dict[str, list[dict[str, bool]]] = {}
        for spec in [*self.sinks, *self.checks, *self.decorators]:
            for root in self._spec_roots(spec):
                specs_by_root.setdefault(root, []).append(self._spec_tokens(spec))
        self._tokens_by_root = {root: merged_tokens(tokens) for root, tokens in specs_by_root.items()}
        self._test_by_roots: dict[frozenset, TextTest] = {}
        roots = "|".join(sorted(re.escape(r).replace(r"\*", r"\w*") for r in self._tokens_by_root))
        self._import_regex = re.compile(
            r"^[ \t]*(?:from[ \t]+(%s)\b|import[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*(%s)\b)" % (roots, roots), re.MULTILINE)
        # Inside an admitted file, any mention picks a function for eager analysis, as before.
        return token_test(dict.fromkeys(merged_tokens(self._tokens_by_root.values()), False))

    def source_method(self, name: str) -> SourceSpec | None:
        """The source a method of this name reads (``retrieve``, or a pattern: ``search_*``);
        a private helper is named for what it reads too (``_retrieve_context``)."""
        if name.startswith("_") and not name.startswith("__"):
            name = name[1:]
        found = self.source_methods.get(name)
        if found is None:
            globbed = self.source_method_globs.match(name)
            found = globbed[0] if globbed else None
        return found

    def hook_layer(self, bases: list[str], name: str) -> str | None:
        """The layer a method builds when the framework calls it on every request (by its class's bases)."""
        for regex, layer, patterns in self._hooks:
            if regex.search(name) and any(fnmatch.fnmatchcase(b, p) for b in bases for p in patterns):
                return layer
        return None

    def stable_layer_of(self, name: str) -> str | None:
        """The layer an identifier names (``build_system_prompt`` -> system prompt), if any."""
        for regex, layer in self._stable_layers:
            if regex.search(name):
                return layer
        return None

    def might_contain_sink(self, text: str) -> bool:
        """Cheap text test: a stable-layer shape or name, or an imported sink library naming one of *its* sinks."""
        if self.shape_prefilter.search(text):
            return True
        roots = frozenset(a or b for a, b in self._import_regex.findall(text))
        if not roots:
            return False
        test = self._test_by_roots.get(roots)
        if test is None:
            wanted = [t for key, t in self._tokens_by_root.items() if any(fnmatch.fnmatchcase(r, key) for r in roots)]
            test = self._test_by_roots[roots] = token_test(merged_tokens(wanted))
        return test.search(text)


def _as_tuple(value, where: str, key: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise CatalogError(f"{where}: '{key}' must be a list")
    return tuple(value)


def _conditions(raw, where: str) -> tuple[Condition, ...]:
    if raw is None:
        return ()
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for item in items:
        if not isinstance(item, dict) or "keyword" not in item:
            raise CatalogError(f"{where}: each 'when' condition needs a 'keyword'")
        ops = [k for k in item if k != "keyword"]
        if len(ops) != 1 or ops[0] not in ("is", "regex", "in", "missing", "dict_has", "dict_lacks"):
            raise CatalogError(f"{where}: condition on {item['keyword']!r} needs one of is/regex/in/missing/dict_has/dict_lacks")
        value = item[ops[0]]
        if ops[0] == "in":
            value = tuple(value)
        elif ops[0] == "dict_has":
            value = tuple(sorted(value.items()))
        out.append(Condition(item["keyword"], ops[0], value))
    return tuple(out)


def _receiver_methods(raw, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: 'receiver_methods' must map receiver names to method lists")
    return tuple((str(k), _as_tuple(v, where, f"receiver_methods.{k}")) for k, v in raw.items())


def _check_keys(entry: dict, allowed: set[str], where: str) -> None:
    if not isinstance(entry, dict):
        raise CatalogError(f"{where}: expected a mapping")
    unknown = set(entry) - allowed
    if unknown:
        raise CatalogError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")


#: The rule-file schema this promptlint reads (``version:`` in a rule file; absent means this one).
RULE_FILE_VERSION = 1


def _merge_file(catalog: Catalog, path: Path, codes: frozenset[str]) -> None:
    data = _load_yaml(path)
    unknown = set(data) - {"version", "sources", "sinks", "decorators", "checks", "sanitizers", "serializers",
                           "stable_names"}
    if unknown:
        raise CatalogError(f"{path}: unknown section(s) {', '.join(sorted(unknown))}")
    version = data.get("version", RULE_FILE_VERSION)
    if version != RULE_FILE_VERSION or isinstance(version, bool):
        # A newer schema may mean something this promptlint would silently misread.
        raise CatalogError(f"{path}: unsupported rule file version {version!r}; "
                           f"this promptlint reads version {RULE_FILE_VERSION}")
    for i, e in enumerate(data.get("sources") or []):
        where = f"{path}: sources[{i}]"
        _check_keys(e, {"id", "code", "label", "note", "calls", "attributes", "methods", "params", "strings", "max_args", "sortable",
                       "rendered", "state_fields", "receiver_methods", "fields", "newest_of", "conversations", "message_types",
                       "tables"}, where)
        if e.get("code") not in codes:
            raise CatalogError(f"{where}: unknown code {e.get('code')!r}")
        if e.get("label") not in LABELS:
            raise CatalogError(f"{where}: label must be one of {', '.join(LABELS)}")
        catalog.sources.append(SourceSpec(
            id=str(e.get("id", f"source-{i}")), code=e["code"], label=e["label"], note=str(e.get("note", e["code"])),
            calls=_as_tuple(e.get("calls"), where, "calls"), attributes=_as_tuple(e.get("attributes"), where, "attributes"),
            methods=_as_tuple(e.get("methods"), where, "methods"), params=_as_tuple(e.get("params"), where, "params"),
            strings=_as_tuple(e.get("strings"), where, "strings"), max_args=e.get("max_args"), sortable=bool(e.get("sortable", False)),
            rendered=bool(e.get("rendered", False)), state_fields=_as_tuple(e.get("state_fields"), where, "state_fields"),
            receiver_methods=_receiver_methods(e.get("receiver_methods"), where),
            fields=_as_tuple(e.get("fields"), where, "fields"),
            newest_of=_as_tuple(e.get("newest_of"), where, "newest_of"),
            conversations=_as_tuple(e.get("conversations"), where, "conversations"),
            message_types=_as_tuple(e.get("message_types"), where, "message_types"),
            tables=_as_tuple(e.get("tables"), where, "tables"),
        ))
    for i, e in enumerate(data.get("sinks") or []):
        where = f"{path}: sinks[{i}]"
        _check_keys(e, {"id", "layer", "callees", "shapes", "imports", "args", "when"}, where)
        args = []
        for j, a in enumerate(e.get("args") or []):
            _check_keys(a, {"keyword", "position", "kind", "layer", "keys"}, f"{where}.args[{j}]")
            if a.get("kind") not in ARG_KINDS:
                raise CatalogError(f"{where}.args[{j}]: kind must be one of {', '.join(ARG_KINDS)}")
            if a.get("keyword") is None and a.get("position") is None:
                raise CatalogError(f"{where}.args[{j}]: needs a keyword or a position")
            args.append(ArgSpec(kind=a["kind"], layer=str(a.get("layer", e.get("layer", "stable layer"))),
                                keyword=a.get("keyword"), position=a.get("position"),
                                keys=_as_tuple(a.get("keys"), where, "keys")))
        if not args:
            raise CatalogError(f"{where}: a sink needs 'args'")
        callees = _as_tuple(e.get("callees"), where, "callees")
        if not callees and not e.get("shapes"):
            raise CatalogError(f"{where}: a sink needs 'callees' or 'shapes'")
        catalog.sinks.append(SinkSpec(
            id=str(e.get("id", f"sink-{i}")), layer=str(e.get("layer", "stable layer")), callees=callees,
            args=tuple(args), shapes=_as_tuple(e.get("shapes"), where, "shapes"),
            imports=_as_tuple(e.get("imports"), where, "imports"), when=_conditions(e.get("when"), where),
        ))
    for i, e in enumerate(data.get("decorators") or []):
        where = f"{path}: decorators[{i}]"
        _check_keys(e, {"id", "layer", "decorators", "shapes", "imports", "when"}, where)
        catalog.decorators.append(DecoratorSpec(
            id=str(e.get("id", f"decorator-{i}")), layer=str(e.get("layer", "stable layer")),
            decorators=_as_tuple(e.get("decorators"), where, "decorators"), shapes=_as_tuple(e.get("shapes"), where, "shapes"),
            imports=_as_tuple(e.get("imports"), where, "imports"), when=_conditions(e.get("when"), where),
        ))
    for i, e in enumerate(data.get("checks") or []):
        where = f"{path}: checks[{i}]"
        _check_keys(e, {"code", "callees", "shapes", "imports", "when", "detail", "layer", "reference"}, where)
        if e.get("code") not in codes:
            raise CatalogError(f"{where}: unknown code {e.get('code')!r}")
        if not e["code"].startswith("PC6") and not (e.get("layer") and e.get("detail")):
            raise CatalogError(f"{where}: a check reporting a source family ({e['code']}) needs 'layer' and 'detail'")
        catalog.checks.append(CheckSpec(
            code=e["code"], callees=_as_tuple(e.get("callees"), where, "callees"), shapes=_as_tuple(e.get("shapes"), where, "shapes"),
            imports=_as_tuple(e.get("imports"), where, "imports"), when=_conditions(e.get("when"), where), detail=str(e.get("detail", "")),
            layer=str(e.get("layer", "")), reference=str(e.get("reference", "")),
        ))
    for i, e in enumerate(data.get("sanitizers") or []):
        where = f"{path}: sanitizers[{i}]"
        _check_keys(e, {"id", "calls", "clears"}, where)
        clears = _as_tuple(e.get("clears"), where, "clears")
        if not clears or set(clears) - set(LABELS):
            raise CatalogError(f"{where}: clears must list labels from {', '.join(LABELS)}")
        catalog.sanitizers.append(SanitizerSpec(id=str(e.get("id", f"sanitizer-{i}")), calls=_as_tuple(e.get("calls"), where, "calls"), clears=clears))
    for i, e in enumerate(data.get("stable_names") or []):
        where = f"{path}: stable_names[{i}]"
        _check_keys(e, {"id", "layer", "pattern", "bases"}, where)
        try:
            re.compile(str(e.get("pattern", "")))
        except re.error as exc:
            raise CatalogError(f"{where}: pattern is not a regular expression: {exc}") from None
        if not e.get("pattern"):
            raise CatalogError(f"{where}: a stable name needs a 'pattern'")
        catalog.stable_names.append(StableNameSpec(str(e.get("id", f"name-{i}")), str(e.get("layer", "stable layer")),
                                                   str(e["pattern"]), _as_tuple(e.get("bases"), where, "bases")))
    for i, e in enumerate(data.get("serializers") or []):
        where = f"{path}: serializers[{i}]"
        _check_keys(e, {"call", "sort_kwarg", "default_sorted"}, where)
        if "call" not in e or "sort_kwarg" not in e:
            raise CatalogError(f"{where}: a serializer needs 'call' and 'sort_kwarg'")
        catalog.serializers.append(SerializerSpec(call=e["call"], sort_kwarg=e["sort_kwarg"], default_sorted=bool(e.get("default_sorted", False))))


BUNDLED_FILES = ("sources.yaml", "sinks.yaml", "sanitizers.yaml")


def catalog_files(extra: tuple[str, ...] = ()) -> list[Path]:
    """The rule files of a run: the bundled ones, then the user's."""
    base = rules_dir()
    return [base / "codes.yaml", *(base / name for name in BUNDLED_FILES), *(Path(p) for p in extra)]


def load_catalog(extra_files: tuple[str, ...] = (), memory_files: tuple[str, ...] = ()) -> Catalog:
    """Load, validate and compile the bundled rule files plus ``extra_files``."""
    codes = known_codes()
    catalog = Catalog()
    for path in catalog_files(extra_files)[1:]:
        if not path.is_file():
            raise CatalogError(f"{path}: rule file not found")
        _merge_file(catalog, path, codes)
        catalog.files.append(path)
    if memory_files:
        catalog.sources.append(SourceSpec(id="memory-files-config", code="PC401", label="volatile",
                                          note="file that changes during a session", strings=tuple(memory_files)))
    return catalog.compile()


def rule_files(settings: Settings) -> tuple[str, ...]:
    """The configured rule files, relative paths taken from the project root."""
    root = settings.root or "."
    return tuple(p if os.path.isabs(p) else os.path.join(root, p) for p in settings.rule_files)


def settings_fingerprint(settings: Settings) -> str:
    """What a cached result depends on besides the file: version, rules, analysis settings."""
    rule_paths = [Path(p) for p in catalog_files(rule_files(settings))]
    parts = [__version__, fingerprint_files([p for p in rule_paths if p.is_file()]), repr(settings.memory_files),
             repr(settings.src), str(settings.max_file_bytes), repr(sorted(settings.rule_files))]
    return "|".join(parts)
