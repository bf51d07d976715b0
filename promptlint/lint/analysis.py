"""The taint analysis of one module: sources, propagation, sanitizers, sinks.

It runs on CPython's ``ast`` (C-speed parsing, exact positions): the issue's corpus of
3,000+ files rules out full libcst metadata on every file. libcst is used where the concrete
tree matters, for fixes (``promptlint.lint.fix``).

The analysis is an abstract interpretation over statements in order. Every expression
evaluates to a ``Val``: the taints it carries, plus what is statically known about it (the
qualified name it refers to, a string constant, the items of a list or dict display, the
function it names). Functions are summarised once: which taints their return value always
carries, which parameters flow into it, and which parameters reach a sink inside them.
Summaries of functions in other project modules come from ``promptlint.lint.project``.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from promptlint.lint.catalog import ArgSpec, Catalog, Condition, SinkSpec
from promptlint.lint.diagnostic import Diagnostic, Fix, TraceStep

if TYPE_CHECKING:
    from promptlint.lint.project import Project

MAX_TAINTS = 6
MAX_STEPS = 14
_BUILTINS = frozenset(dir(builtins))
_MUTATORS = {"append", "extend", "insert", "update", "add", "setdefault", "appendleft", "extendleft", "__setitem__"}
_ORDERED_CONSUMERS = {"builtins.list", "builtins.tuple", "builtins.enumerate", "builtins.iter", "builtins.next"}
_TEMPLATE_METHODS = {"format", "format_map", "render", "substitute", "safe_substitute", "partial", "invoke"}
_FILE_TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2", ".yaml", ".yml", ".txt", ".md", ".prompt", ".tmpl")
_JINJA_VOLATILE = re.compile(
    r"(\{\{|\{%)[^}]*?\b(now|utcnow|today|datetime|time\.time|timestamp|uuid\d?|random|randint|choice|shuffle|"
    r"getpid|hostname|getcwd|environ|getenv)\b[^}]*?(\}\}|%\})"
)
_JINJA_CODES = {
    "now": "PC101", "utcnow": "PC101", "today": "PC101", "datetime": "PC101", "time.time": "PC101",
    "timestamp": "PC101", "uuid": "PC201", "uuid4": "PC201", "uuid1": "PC201", "random": "PC201",
    "randint": "PC201", "choice": "PC201", "shuffle": "PC201", "getpid": "PC301", "hostname": "PC301",
    "getcwd": "PC301", "environ": "PC302", "getenv": "PC302",
}


class Taint(NamedTuple):
    """A labelled fact about a value: where it came from and how it travelled."""

    code: str  # rule code, or "" for a symbolic parameter taint inside a summary
    label: str  # "volatile" | "unordered"
    steps: tuple[TraceStep, ...]
    param: int = -1  # >= 0: stands for the taint of parameter ``param`` (summaries)
    dumped: bool = False  # a parameter taint that went through an unsorted serializer
    fix: Fix | None = None
    report_at: TraceStep | None = None  # template line: report there instead of at the sink

    def key(self) -> tuple:
        first = self.steps[0] if self.steps else None
        return (self.code, self.label, self.param, self.dumped, first and (first.path, first.line, first.column))

    def then(self, step: TraceStep) -> "Taint":
        if len(self.steps) >= MAX_STEPS or (self.steps and self.steps[-1] == step):
            return self
        return self._replace(steps=self.steps + (step,))


def merge(*groups) -> tuple[Taint, ...]:
    """Union of taint tuples, deduplicated, bounded, shortest trace kept."""
    seen: dict[tuple, Taint] = {}
    for group in groups:
        for t in group:
            k = t.key()
            old = seen.get(k)
            if old is None:
                if len(seen) < MAX_TAINTS:
                    seen[k] = t
            elif len(t.steps) < len(old.steps):
                seen[k] = t
    return tuple(seen.values())


class Val:
    """What the analysis knows about a value."""

    __slots__ = ("taints", "origin", "const", "items", "keys", "func", "node", "template", "sink_layer")

    def __init__(self, taints=(), origin=None, const=None, items=None, keys=None, func=None, node=None, template=None,
                 sink_layer=None):
        self.taints: tuple[Taint, ...] = taints
        self.origin: str | None = origin  # qualified name or call chain: "anthropic.Anthropic().messages"
        self.const = const  # str/int/bool/None constant, when known
        self.items: list[Val] | None = items  # list/tuple display
        self.keys: dict[str, Val] | None = keys  # dict display with constant keys
        self.func = func  # FunctionRef for a function object
        self.node: ast.AST | None = node  # the expression, for ranges
        self.template: TraceStep | None = template  # a template text's location (file or constant)
        self.sink_layer: str | None = sink_layer  # a stable template: what its substitutions reach

    def with_taints(self, taints) -> "Val":
        return Val(taints, self.origin, self.const, self.items, self.keys, self.func, self.node, self.template, self.sink_layer)


EMPTY = Val()


def join(a: Val | None, b: Val | None) -> Val:
    """Either value (branches): taints merged, structure kept only when it agrees."""
    if a is None:
        return b or EMPTY
    if b is None:
        return a
    return Val(merge(a.taints, b.taints), a.origin if a.origin == b.origin else (a.origin or b.origin),
               a.const if a.const == b.const else None, a.items if a.items is b.items else (b.items or a.items),
               a.keys if a.keys is b.keys else (b.keys or a.keys), a.func or b.func, a.node or b.node, a.template or b.template)


@dataclass
class FunctionRef:
    """A function the analysis can summarise: in this module or another project module."""

    module: "ModuleAnalysis"
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    qualname: str
    cls: "ClassInfo | None" = None


@dataclass
class ParamSink:
    """Parameter ``param`` reaches a sink inside the function (label-specific)."""

    param: int
    label: str
    dumped: bool
    steps: tuple[TraceStep, ...]
    layer: str
    arg_kind: str


@dataclass
class Summary:
    """What a call of a function does to taint."""

    ret: Val = field(default_factory=Val)
    param_sinks: list[ParamSink] = field(default_factory=list)


@dataclass
class ClassInfo:
    """A class of the module: its methods and what its attributes hold."""

    name: str
    qualname: str
    node: ast.ClassDef
    methods: dict[str, FunctionRef] = field(default_factory=dict)
    attrs: dict[str, Val] = field(default_factory=dict)
    bases: list[str] = field(default_factory=list)
    ready: bool = False
    module: "ModuleAnalysis | None" = None


def _const_str(val: Val | None) -> str | None:
    return val.const if val is not None and isinstance(val.const, str) else None


MAX_SUMMARY_DEPTH = 6
_DEPTH = [0]  # current nesting of summary computations (one analysis runs at a time per process)


def _opaque(ref: FunctionRef) -> Summary:
    a = ref.node.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
    taints = tuple(Taint("", label, (), param=i) for i in range(n) for label in ("volatile", "unordered"))
    return Summary(Val(taints[: MAX_TAINTS]))


class ModuleAnalysis:
    """Analyse one module: its module-level code and every function, lazily summarised."""

    def __init__(self, path: str, text: str, tree: ast.Module, catalog: Catalog, project: "Project | None",
                 module_name: str = "", report: bool = True):
        self.path = path
        self.text = text
        self.lines = text.splitlines()
        self.tree = tree
        self.catalog = catalog
        self.project = project
        self.module_name = module_name
        self.report = report
        self.diagnostics: list[Diagnostic] = []
        self.imports: dict[str, str] = {}  # local name -> qualified name
        self.functions: dict[str, FunctionRef] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.globals: dict[str, Val] = {}
        self.summaries: dict[int, Summary] = {}
        self.in_progress: set[int] = set()
        self.deps: set[str] = set()  # other files consulted (paths)
        self.failed_deps: set[str] = set()  # helper modules called into that do not parse
        self.imported_roots: set[str] = set()
        self._emitted: set[tuple] = set()
        self._globals_ready = False
        self.template_texts: dict[tuple[int, int], str] = {}  # string constants used as templates
        self._collect_names()

    # ------------------------------------------------------------------ names
    def _collect_names(self) -> None:
        # Imports are statements: walk statement bodies only, never expressions (much cheaper).
        stack = list(self.tree.body)
        while stack:
            node = stack.pop()
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                    children = getattr(node, name, None)
                    if children:
                        stack.extend(children)
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        self.imports[root] = root
                    self.imported_roots.add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = self._resolve_relative(node.module or "", node.level)
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    self.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
                if base:
                    self.imported_roots.add(base)
        for node in self.tree.body:
            self._declare(node, self.module_name)

    def _declare(self, node: ast.stmt, prefix: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions[node.name] = FunctionRef(self, node, f"{prefix}.{node.name}" if prefix else node.name)
        elif isinstance(node, ast.ClassDef):
            qual = f"{prefix}.{node.name}" if prefix else node.name
            info = ClassInfo(node.name, qual, node, bases=[self._dotted(b) or "" for b in node.bases], module=self)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    info.methods[item.name] = FunctionRef(self, item, f"{qual}.{item.name}", info)
            self.classes[node.name] = info
        elif isinstance(node, (ast.If, ast.Try)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self._declare(child, prefix)

    def _resolve_relative(self, module: str, level: int) -> str:
        if not level:
            return module
        parts = self.module_name.split(".") if self.module_name else []
        is_package = self.path.endswith("__init__.py")
        base = parts if is_package else parts[:-1]
        if level > 1:
            base = base[: len(base) - (level - 1)]
        return ".".join([*base, module] if module else base)

    def _dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.imports.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            inner = self._dotted(node.value)
            return f"{inner}.{node.attr}" if inner else None
        return None

    def imports_library(self, names: tuple[str, ...]) -> bool:
        return any(imp == n or imp.startswith(n + ".") for n in names for imp in self.imported_roots)

    # --------------------------------------------------------------- positions
    def step(self, node: ast.AST, note: str) -> TraceStep:
        line = getattr(node, "lineno", 1)
        return TraceStep(self.path, line, self.column(line, getattr(node, "col_offset", 0)), note)

    def column(self, line: int, byte_col: int) -> int:
        """1-based character column from ast's UTF-8 byte offset."""
        if 0 < line <= len(self.lines):
            text = self.lines[line - 1]
            if not text.isascii():
                return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1
        return byte_col + 1

    def snippet(self, node: ast.AST, limit: int = 48) -> str:
        """The source text of a node, on one line, shortened (for messages and traces)."""
        line, end_line = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if line is None or end_line is None or line > len(self.lines):
            return ""
        if end_line - line > 3:
            end_line = line  # only the head of a long expression is worth showing
            chunk = self.lines[line - 1].encode("utf-8")[node.col_offset:]
        else:
            chunk = "\n".join(self.lines[line - 1:end_line]).encode("utf-8")
            end = len(chunk) - len(self.lines[end_line - 1].encode("utf-8")) + (node.end_col_offset or 0)
            chunk = chunk[node.col_offset:end]
        text = " ".join(chunk.decode("utf-8", "replace").split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    # ------------------------------------------------------------------ driver
    def run_body(self) -> None:
        """Evaluate module-level code once: the values of the module's globals."""
        if self._globals_ready:
            return
        self._globals_ready = True
        body = FunctionAnalysis(self, None, None)
        body.env = self.globals  # functions summarised during the body see globals so far
        body.run_block(self.tree.body)

    def run(self, extra_names: frozenset[str] = frozenset()) -> None:
        """Analyse module-level code and every function that can hold a sink.

        A function can report only if its text names a sink token, or calls a function
        whose parameters reach a sink (``extra_names`` from other modules, and local ones
        found here, to a fixpoint). Other functions are summarised only when called.
        """
        self.run_body()
        refs = list(self.functions.values())
        for info in self.classes.values():
            refs += info.methods.values()
        todo = [r for r in refs if self.catalog.prefilter.search(self._segment(r.node))]
        # Globals holding a stable template (`prompt = ChatPromptTemplate.from_messages(...)`):
        # a function that fills one writes a stable layer without naming any sink token.
        names = set(extra_names) | {n for n, v in self.globals.items() if v.sink_layer}
        if names:
            todo += [r for r in refs if r not in todo and self._mentions(r.node, names)]
        while todo:
            for ref in todo:
                if ref.cls is not None:
                    self.prepare_class(ref.cls)
                self.summary(ref)
            new = {r.node.name for r in refs if self.summaries.get(id(r.node)) and self.summaries[id(r.node)].param_sinks} - names
            names |= new
            todo = [r for r in refs if id(r.node) not in self.summaries and new and self._mentions(r.node, new)]

    def _segment(self, node: ast.AST) -> str:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return "\n".join(self.lines[start - 1: node.end_lineno])

    def _mentions(self, node: ast.AST, names: set[str]) -> bool:
        text = self._segment(node)
        return any(name in text for name in names)

    def param_sink_functions(self) -> list[str]:
        """Names of this module's functions that carry a parameter into a sink."""
        out = []
        for ref in [*self.functions.values(), *(m for c in self.classes.values() for m in c.methods.values())]:
            summary = self.summaries.get(id(ref.node))
            if summary is not None and summary.param_sinks:
                out.append(ref.node.name)
                if ref.cls is not None:  # `Builder(text)` names the class, not `__init__`
                    out.append(ref.cls.name)
        return sorted(set(out))

    def summary(self, ref: FunctionRef) -> Summary:
        key = id(ref.node)
        done = self.summaries.get(key)
        if done is not None:
            return done
        if key in self.in_progress:
            return Summary()  # recursion: assume nothing (a sound fixpoint is not worth it here)
        depth = _DEPTH[0]
        if depth >= MAX_SUMMARY_DEPTH:
            return _opaque(ref)  # too deep: the call passes its arguments through, not memoised
        self.in_progress.add(key)
        _DEPTH[0] = depth + 1
        try:
            fa = FunctionAnalysis(self, ref, ref.cls)
            result = fa.run_function()
        finally:
            _DEPTH[0] = depth
            self.in_progress.discard(key)
        self.summaries[key] = result
        return result

    def prepare_class(self, info: ClassInfo) -> None:
        """Fill class attributes: class body fields, then ``__init__``-like methods first."""
        if info.ready:
            return
        info.ready = True
        fa = FunctionAnalysis(self, None, info)
        for stmt in info.node.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                val = fa.eval_field_default(stmt.value)
                for t in targets:
                    if isinstance(t, ast.Name):
                        info.attrs[t.id] = val.with_taints(tuple(
                            x.then(self.step(stmt, f"class attribute {info.name}.{t.id}")) for x in val.taints))
        for name in ("__init__", "__post_init__", "setup", "model_post_init"):
            if name in info.methods:
                self.summary(info.methods[name])

    # ------------------------------------------------------------ diagnostics
    def emit(self, taint: Taint, sink_node: ast.AST, layer: str, code: str | None = None,
             sink_step: TraceStep | None = None) -> None:
        if not self.report or taint.param >= 0:
            return
        code = code or taint.code
        docs = self.catalog_docs()
        doc = docs.get(code)
        if doc is None:
            return
        sink_step = sink_step or self.step(sink_node, f"reaches {layer}")
        steps = taint.steps + (sink_step,)
        where = taint.report_at or sink_step
        if taint.report_at is not None:
            line, col, end_line, end_col = where.line, where.column, where.line, where.column + 1
            path = where.path
        else:
            path = self.path
            line = sink_node.lineno
            col = self.column(line, sink_node.col_offset)
            end_line = getattr(sink_node, "end_lineno", line) or line
            end_col = self.column(end_line, getattr(sink_node, "end_col_offset", sink_node.col_offset) or 0)
        first = taint.steps[0] if taint.steps else None
        source_note = first.note if first else "a volatile value"
        message = doc.summary.format(sink=layer, detail=source_note.split(": ", 1)[-1])
        if code != "PC604" and first is not None:
            what = source_note.split(": ", 1)[-1]
            where = f"line {first.line}" if first.path == path else f"{first.path}:{first.line}"
            message = f"{message}: {what} ({where})"
        key = (path, line, col, code, taint.key())
        if key in self._emitted:
            return
        self._emitted.add(key)
        fix = taint.fix if code in ("PC501", "PC502") else None
        self.diagnostics.append(Diagnostic(
            path=path, line=line, column=col, end_line=end_line, end_column=end_col, code=code,
            name=doc.name, message=message, severity=doc.severity, trace=steps, fix=fix,
        ))

    def emit_check(self, code: str, node: ast.AST, detail: str) -> None:
        if not self.report:
            return
        doc = self.catalog_docs().get(code)
        if doc is None:
            return
        key = (self.path, node.lineno, node.col_offset, code)
        if key in self._emitted:
            return
        self._emitted.add(key)
        end_line = getattr(node, "end_lineno", node.lineno) or node.lineno
        self.diagnostics.append(Diagnostic(
            path=self.path, line=node.lineno, column=self.column(node.lineno, node.col_offset), end_line=end_line,
            end_column=self.column(end_line, getattr(node, "end_col_offset", 0) or 0), code=code, name=doc.name,
            message=doc.summary.format(detail=detail, sink=""), severity=doc.severity,
            trace=(self.step(node, detail),),
        ))

    @staticmethod
    def catalog_docs():
        from promptlint.lint.catalog import load_rule_docs

        return load_rule_docs()

    # ----------------------------------------------------------- resolution
    def resolve_function(self, qualname: str) -> FunctionRef | ClassInfo | None:
        """A function or class named by a qualified name: local, or in a project module."""
        if self.module_name and qualname.startswith(self.module_name + "."):
            rest = qualname[len(self.module_name) + 1:]
            return self.local_callable(rest)
        if self.project is None:
            return None
        return self.project.resolve(qualname, self)

    def local_callable(self, dotted: str) -> FunctionRef | ClassInfo | None:
        head, _, tail = dotted.partition(".")
        if not tail:
            return self.functions.get(head) or self.classes.get(head)
        info = self.classes.get(head)
        if info is not None and "." not in tail:
            return info.methods.get(tail)
        return None


_ROLE_WORDS = {"system", "developer", "SYSTEM", "DEVELOPER"}


def _is_role_test(node: ast.AST) -> int:
    """1 when a test or match pattern singles out the system/developer role."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and sub.value in _ROLE_WORDS:
            return 1
        if isinstance(sub, ast.Attribute) and sub.attr in _ROLE_WORDS:
            return 1
    return 0


class FunctionAnalysis:
    """Abstract interpretation of one function body (or the module body)."""

    def __init__(self, module: ModuleAnalysis, ref: FunctionRef | None, cls: ClassInfo | None):
        self.m = module
        self.ref = ref
        self.cls = cls
        self.env: dict[str, Val] = {}
        self.ret: Val | None = None
        self.param_sinks: list[ParamSink] = []
        self.loop_unordered: list[tuple[Taint, ...]] = []
        self.depth = 0  # > 0 inside branches/loops: assignments are weak updates
        self.params: list[str] = []
        self.sink_via: tuple | None = None  # (steps inside the callee, its sink step, dumped, label)
        self.stable_template: tuple | None = None  # (template step, layer) of a system template being built
        self.role_branch = 0  # > 0 inside `if role == "system":` (a role dispatch)

    # ------------------------------------------------------------- entry points
    def run_function(self) -> Summary:
        node = self.ref.node
        args = node.args
        all_args = [*args.posonlyargs, *args.args]
        if args.vararg:
            all_args.append(args.vararg)
        all_args += args.kwonlyargs
        if args.kwarg:
            all_args.append(args.kwarg)
        self.params = [a.arg for a in all_args]
        for i, a in enumerate(all_args):
            taints = [Taint("", "volatile", (), param=i), Taint("", "unordered", (), param=i)]
            spec = self.m.catalog.source_params.get(a.arg)
            if spec is not None:
                taints.append(Taint(spec.code, spec.label, (self.m.step(a, f"{spec.note}: parameter `{a.arg}`"),)))
            val = Val(tuple(taints), node=a)
            if i == 0 and self.cls is not None and a.arg in ("self", "cls"):
                val = Val((), origin=f"@{self.cls.qualname}()", node=a)
            self.env[a.arg] = val
        defaults = [*args.defaults, *[d for d in args.kw_defaults if d is not None]]
        for d in defaults:
            self.eval(d)
        if isinstance(node, ast.Lambda):
            self.ret = self.eval(node.body)
        else:
            self.run_block(node.body)
            self.check_decorators(node)
        return Summary(self.ret or Val(), self.param_sinks)

    def run_block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            try:
                self.stmt(stmt)
            except RecursionError:
                raise
            except Exception:  # noqa: BLE001 - one odd statement must not lose the file
                if self.m.project is not None and self.m.project.strict:
                    raise

    # --------------------------------------------------------------- statements
    def stmt(self, node: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child)

    def stmt_Expr(self, node: ast.Expr) -> None:
        self.eval(node.value)

    def stmt_Assign(self, node: ast.Assign) -> None:
        val = self.eval(node.value)
        for target in node.targets:
            self.assign(target, val, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value), node)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        old = self.eval(node.target)
        new = self.eval(node.value)
        taints = merge(old.taints, new.taints, *self.loop_unordered)
        items = None
        if old.items is not None and new.items is not None and isinstance(node.op, ast.Add):
            items = old.items + new.items
        self.assign(node.target, Val(taints, items=items, node=node.value), node, weak=True)

    def stmt_Return(self, node: ast.Return) -> None:
        if node.value is None:
            return
        val = self.eval(node.value)
        if self.loop_unordered:
            val = val.with_taints(merge(val.taints, *self.loop_unordered))
        name = self.ref.qualname.rsplit(".", 1)[-1] if self.ref else "function"
        step = self.m.step(node.value, f"returned by {name}()")
        val = val.with_taints(tuple(t.then(step) for t in val.taints))
        self.ret = join(self.ret, val) if self.ret is not None else val
        self.return_nodes.append(node.value)

    @property
    def return_nodes(self) -> list:
        if not hasattr(self, "_return_nodes"):
            self._return_nodes = []
        return self._return_nodes

    def stmt_If(self, node: ast.If) -> None:
        self.eval(node.test)
        self.depth += 1
        dispatch = _is_role_test(node.test)
        self.role_branch += dispatch
        self.run_block(node.body)
        self.role_branch -= dispatch
        self.run_block(node.orelse)
        self.depth -= 1

    def _loop(self, iter_val: Val, target, body, orelse, node) -> None:
        unordered = tuple(t for t in iter_val.taints if t.label == "unordered")
        element = iter_val.with_taints(tuple(t for t in iter_val.taints if t.label != "unordered"))
        element = Val(element.taints, node=element.node)
        self.depth += 1
        self.loop_unordered.append(tuple(self._consumed(t, node.iter) for t in unordered))
        for _ in range(2):  # twice: values assigned late in the body flow to its start
            if target is not None:
                self.assign(target, element, node)
            self.run_block(body)
        self.loop_unordered.pop()
        self.run_block(orelse)
        self.depth -= 1

    def stmt_For(self, node: ast.For) -> None:
        self._loop(self.eval(node.iter), node.target, node.body, node.orelse, node)

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node: ast.While) -> None:
        self.eval(node.test)
        self.depth += 1
        for _ in range(2):
            self.run_block(node.body)
        self.run_block(node.orelse)
        self.depth -= 1

    def stmt_With(self, node: ast.With) -> None:
        for item in node.items:
            val = self.eval(item.context_expr)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, val, node)
        self.run_block(node.body)

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, node) -> None:
        self.depth += 1
        self.run_block(node.body)
        for handler in node.handlers:
            self.run_block(handler.body)
        self.run_block(node.orelse)
        self.depth -= 1
        self.run_block(node.finalbody)

    stmt_TryStar = stmt_Try

    def stmt_Match(self, node) -> None:
        self.eval(node.subject)
        self.depth += 1
        for case in node.cases:
            dispatch = _is_role_test(case.pattern)
            self.role_branch += dispatch
            self.run_block(case.body)
            self.role_branch -= dispatch
        self.depth -= 1

    def stmt_FunctionDef(self, node) -> None:
        if self.ref is None and self.cls is None:
            return  # module-level functions are summarised on their own
        inner = FunctionRef(self.m, node, f"{self.ref.qualname if self.ref else ''}.{node.name}", None)
        self.env[node.name] = Val(origin=inner.qualname, func=inner, node=node)
        self.m.summary(inner)  # nested functions: their sinks and decorators are checked too

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node) -> None:
        return

    def stmt_Global(self, node) -> None:
        return

    # -------------------------------------------------------------- assignment
    def assign(self, target: ast.AST, val: Val, stmt: ast.AST, weak: bool = False) -> None:
        if isinstance(target, ast.Name):
            step = self.m.step(target, f"assigned to `{target.id}`")
            val = val.with_taints(tuple(t.then(step) for t in val.taints))
            self._store(target.id, val, weak)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    elt = elt.value
                part = val.items[i] if val.items is not None and i < len(val.items) else Val(val.taints)
                self.assign(elt, part, stmt, weak)
        elif isinstance(target, ast.Attribute):
            base = self._dotted_local(target)
            step = self.m.step(target, f"stored in `{self.m.snippet(target)}`")
            val = val.with_taints(tuple(t.then(step) for t in val.taints))
            if base is not None:
                self._store(base, val, weak)
            if (self.cls is not None and isinstance(target.value, ast.Name) and target.value.id == "self"):
                old = self.cls.attrs.get(target.attr)
                self.cls.attrs[target.attr] = join(old, val) if old is not None else val
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value)
            key = self.eval(target.slice)
            taints = merge(container.taints, val.taints, *self.loop_unordered)
            keys = container.keys
            if keys is not None and isinstance(key.const, str):
                keys = dict(keys)
                keys[key.const] = val
            self._update_container(target.value, Val(taints, origin=container.origin, items=container.items, keys=keys, node=container.node))
        elif isinstance(target, ast.Starred):
            self.assign(target.value, val, stmt, weak)

    def _store(self, name: str, val: Val, weak: bool) -> None:
        if (weak or self.depth > 0) and name in self.env:
            val = join(self.env[name], val)
        self.env[name] = val

    def _dotted_local(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            inner = self._dotted_local(node.value)
            return f"{inner}.{node.attr}" if inner else None
        return None

    def _update_container(self, node: ast.AST, val: Val) -> None:
        name = self._dotted_local(node)
        if name is None:
            return
        self.env[name] = val if name not in self.env or self.depth == 0 else join(self.env[name], val)
        if self.cls is not None and name.startswith("self.") and name.count(".") == 1:
            self.cls.attrs[name[5:]] = self.env[name]

    # ------------------------------------------------------------- expressions
    def eval(self, node: ast.AST | None) -> Val:
        if node is None:
            return EMPTY
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            taints = merge(*(self.eval(c).taints for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)))
            return Val(taints, node=node)
        val = method(node)
        if val.node is None:
            val.node = node
        return val

    def eval_Constant(self, node: ast.Constant) -> Val:
        val = Val(const=node.value, node=node)
        if isinstance(node.value, str) and node.value:
            taints = []
            if len(node.value) < 300:
                for spec in self.m.catalog.source_strings.match(node.value.rsplit("/", 1)[-1]):
                    taints.append(Taint(spec.code, spec.label, (self.m.step(node, f"{spec.note}: reads `{node.value}`"),)))
            if "{{" in node.value or "{%" in node.value:
                taints += self._jinja_taints(node.value, node.lineno, self.m.path, node)
            if node.value.endswith(_FILE_TEMPLATE_SUFFIXES) and "\n" not in node.value and self.m.project is not None:
                taints += self._template_file_taints(node, node.value)
                val.template = self.m.project.template_step(self.m, node.value)
            if "{" in node.value and val.template is None:
                val.template = self.m.step(node, "template")
                self.m.template_texts[(val.template.line, val.template.column)] = node.value
            val.taints = merge(taints)
        return val

    def _jinja_taints(self, text: str, first_line: int, path: str, node: ast.AST | None) -> list[Taint]:
        taints = []
        for match in _JINJA_VOLATILE.finditer(text):
            code = _JINJA_CODES.get(match.group(2), "PC101")
            line = first_line + text.count("\n", 0, match.start())
            col = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
            step = TraceStep(path, line, col, f"template expression `{match.group(0)}`")
            taints.append(Taint(code, "volatile", (step,), report_at=step))
        return taints

    def _template_file_taints(self, node: ast.Constant, name: str) -> list[Taint]:
        found = self.m.project.template_text(self.m, name)
        if found is None:
            return []
        path, text = found
        return self._jinja_taints(text, 1, path, None)

    def eval_JoinedStr(self, node: ast.JoinedStr) -> Val:
        taints = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                taints.append(self.eval(part.value).taints)
                if part.format_spec is not None:
                    taints.append(self.eval(part.format_spec).taints)
        return Val(merge(*taints), node=node)

    def eval_Name(self, node: ast.Name) -> Val:
        name = node.id
        if name in self.env:
            return self.env[name]
        if name in self.m.globals:
            return self.m.globals[name]
        if name in self.m.imports:
            qual = self.m.imports[name]
            return self._qualified(qual, node)
        if name in self.m.functions:
            ref = self.m.functions[name]
            return Val(origin=ref.qualname, func=ref, node=node)
        if name in self.m.classes:
            return Val(origin="@" + self.m.classes[name].qualname, node=node)
        if name in _BUILTINS:
            return Val(origin="builtins." + name, node=node)
        return Val(node=node)

    def _qualified(self, qual: str, node: ast.AST) -> Val:
        taints = ()
        specs = self.m.catalog.source_attrs.match(qual)
        if specs:
            spec = specs[0]
            taints = (Taint(spec.code, spec.label, (self.m.step(node, f"{spec.note}: `{qual}`"),)),)
        return Val(taints, origin=qual, node=node)

    def eval_Attribute(self, node: ast.Attribute) -> Val:
        local = self._dotted_local(node)
        if local is not None and local in self.env:
            return self.env[local]
        base = self.eval(node.value)
        origin = f"{base.origin}.{node.attr}" if base.origin else None
        if base.origin and base.origin.startswith("@"):
            found = self._instance_attr(base.origin, node.attr, node)
            if found is not None:
                return found
        if origin is not None and not origin.startswith("@") and "()" not in origin:
            specs = self.m.catalog.source_attrs.match(origin)
            if specs:
                return self._qualified(origin, node)
        if base.keys is not None and node.attr in base.keys:
            return base.keys[node.attr]
        if origin is None:
            origin = f"?.{node.attr}" if not isinstance(node.value, ast.Attribute) or base.origin is None else None
            if origin is None and base.origin is None:
                inner = self._tail(node.value)
                origin = f"?.{inner}.{node.attr}" if inner else f"?.{node.attr}"
        return Val(base.taints, origin=origin, node=node, template=base.template)

    def _tail(self, node: ast.AST) -> str | None:
        """Dotted attribute chain of an unknown receiver: ``self.client.messages`` -> ``client.messages``."""
        if isinstance(node, ast.Attribute):
            inner = self._tail(node.value)
            return f"{inner}.{node.attr}" if inner else node.attr
        return None

    def _instance_attr(self, origin: str, attr: str, node: ast.AST) -> Val | None:
        """``obj.attr`` where ``obj`` is an instance (``@mod.Cls()``) or class of a known class."""
        qual = origin[1:]
        instance = qual.endswith("()")
        qual = qual[:-2] if instance else qual
        info = self._class_info(qual)
        if info is None:
            return None
        owner, info = info
        owner.prepare_class(info)
        if attr in info.methods:
            ref = info.methods[attr]
            decorators = {owner._dotted(d) for d in ref.node.decorator_list}
            if "property" in decorators or "functools.cached_property" in decorators:
                summary = owner.summary(ref)
                return summary.ret.with_taints(tuple(t for t in summary.ret.taints if t.param < 0))
            return Val(origin=ref.qualname, func=ref, node=node)
        if attr in info.attrs:
            return info.attrs[attr]
        return None

    def _class_info(self, qual: str) -> tuple[ModuleAnalysis, ClassInfo] | None:
        found = self.m.resolve_function(qual)
        if isinstance(found, ClassInfo):
            return found.module or self.m, found
        return None

    def eval_Subscript(self, node: ast.Subscript) -> Val:
        base = self.eval(node.value)
        key = self.eval(node.slice)
        if base.keys is not None and isinstance(key.const, str) and key.const in base.keys:
            return base.keys[key.const]
        if base.items is not None and isinstance(key.const, int) and -len(base.items) <= key.const < len(base.items):
            return base.items[key.const]
        taints = base.taints
        if isinstance(node.slice, ast.Slice):
            items = base.items
            return Val(taints, items=items, node=node, template=base.template)
        return Val(merge(taints, tuple(t for t in key.taints if t.label == "volatile")), node=node,
                   origin=f"{base.origin}[]" if base.origin else None, template=self._template_entry(base.template, key.const))

    def _template_entry(self, where: TraceStep | None, key) -> TraceStep | None:
        """``config["system_prompt"]`` of a YAML/JSON template file: narrow to that key's line."""
        if where is None or not isinstance(key, str) or where.path == self.m.path or self.m.project is None:
            return where
        lines = self.m.project.template_lines(where.path) or []
        pattern = re.compile(r"^\s*[\"']?%s[\"']?\s*:" % re.escape(key))
        for i, line in enumerate(lines[where.line - 1:], where.line):
            if pattern.match(line):
                return TraceStep(where.path, i, 1, f"`{key}` in {where.path}")
        return where

    def eval_BinOp(self, node: ast.BinOp) -> Val:
        left, right = self.eval(node.left), self.eval(node.right)
        items = None
        if isinstance(node.op, ast.Add) and left.items is not None:
            items = left.items + (right.items or [])
        # `"..." % x` keeps the template; `PROMPTS_DIR / "agent.yaml"` and `+` keep a file's.
        template = left.template if isinstance(node.op, ast.Mod) else (
            (left.template or right.template) if isinstance(node.op, (ast.Div, ast.Add)) else None)
        return Val(merge(left.taints, right.taints), items=items, node=node, template=template)

    def eval_BoolOp(self, node: ast.BoolOp) -> Val:
        vals = [self.eval(v) for v in node.values]
        out = vals[0]
        for v in vals[1:]:
            out = join(out, v)
        return Val(out.taints, origin=out.origin, items=out.items, keys=out.keys, func=out.func, node=node)

    def eval_IfExp(self, node: ast.IfExp) -> Val:
        self.eval(node.test)
        return join(self.eval(node.body), self.eval(node.orelse))

    def eval_Compare(self, node: ast.Compare) -> Val:
        vals = [self.eval(node.left), *(self.eval(c) for c in node.comparators)]
        return Val(merge(*(tuple(t for t in v.taints if t.label == "volatile") for v in vals)), node=node)

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Val:
        return Val(self.eval(node.operand).taints, node=node)

    def eval_NamedExpr(self, node: ast.NamedExpr) -> Val:
        val = self.eval(node.value)
        self.assign(node.target, val, node)
        return val

    def eval_Await(self, node: ast.Await) -> Val:
        return self.eval(node.value)

    def eval_Starred(self, node: ast.Starred) -> Val:
        return self.eval(node.value)

    def eval_Lambda(self, node: ast.Lambda) -> Val:
        ref = FunctionRef(self.m, node, f"{self.ref.qualname if self.ref else self.m.module_name}.<lambda>", None)
        return Val(origin=ref.qualname, func=ref, node=node)

    def eval_List(self, node) -> Val:
        items = [self.eval(e) for e in node.elts]
        return Val(merge(*(v.taints for v in items)), items=items, node=node)

    eval_Tuple = eval_List

    def eval_Set(self, node: ast.Set) -> Val:
        items = [self.eval(e) for e in node.elts]
        strings = all(isinstance(v.const, str) for v in items)
        source = self._set_source(node, "set display", sortable=strings)
        return Val(merge(*(v.taints for v in items), (source,)) if len(items) > 1 else merge(*(v.taints for v in items)), node=node)

    def _set_source(self, node: ast.AST, what: str, sortable: bool) -> Taint:
        step = self.m.step(node, f"set iteration order: {what} `{self.m.snippet(node, 40)}`")
        return Taint("PC501", "unordered", (step,), fix=None if not sortable else Fix("wrap-sorted", 0, 0, 0, 0, True, "sortable"))

    def eval_Dict(self, node: ast.Dict) -> Val:
        keys: dict[str, Val] = {}
        taints = []
        for k, v in zip(node.keys, node.values):
            val = self.eval(v)
            taints.append(val.taints)
            if k is None:  # {**other}
                if val.keys is not None:
                    keys.update(val.keys)
                continue
            kv = self.eval(k)
            taints.append(kv.taints)
            if isinstance(kv.const, str):
                keys[kv.const] = val
        return Val(merge(*taints), keys=keys, node=node)

    def _comprehension(self, node, elements: list[ast.AST], unordered_result: bool) -> Val:
        saved = dict(self.env)
        carried = []
        for gen in node.generators:
            it = self.eval(gen.iter)
            unordered = tuple(self._consumed(t, gen.iter) for t in it.taints if t.label == "unordered")
            if unordered_result:
                carried.append(unordered)
            self.assign(gen.target, Val(tuple(t for t in it.taints if t.label != "unordered")), gen)
            for cond in gen.ifs:
                self.eval(cond)
        vals = [self.eval(e) for e in elements]
        self.env = saved
        return Val(merge(*(v.taints for v in vals), *carried), node=node)

    def eval_ListComp(self, node: ast.ListComp) -> Val:
        return self._comprehension(node, [node.elt], True)

    eval_GeneratorExp = eval_ListComp

    def eval_DictComp(self, node: ast.DictComp) -> Val:
        return self._comprehension(node, [node.key, node.value], True)

    def eval_SetComp(self, node: ast.SetComp) -> Val:
        val = self._comprehension(node, [node.elt], False)
        return Val(merge(val.taints, (self._set_source(node, "set comprehension", sortable=False),)), node=node)

    def eval_field_default(self, node: ast.AST) -> Val:
        """A class-body default: ``field(default_factory=f)`` / ``Field(default_factory=f)`` calls ``f``."""
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "default_factory":
                    return self.call_reference(kw.value, node)
        return self.eval(node)

    def call_reference(self, func_node: ast.AST, at: ast.AST) -> Val:
        """The value of calling the callable ``func_node`` with no arguments."""
        fake = ast.Call(func=func_node, args=[], keywords=[])
        ast.copy_location(fake, func_node)
        fake.end_lineno, fake.end_col_offset = getattr(func_node, "end_lineno", None), getattr(func_node, "end_col_offset", None)
        return self.eval_Call(fake)

    def _consumed(self, taint: Taint, node: ast.AST) -> Taint:
        """Record where an unordered value is consumed in order: the place to wrap in sorted()."""
        if taint.fix is not None and taint.fix.line == 0:
            end_line = getattr(node, "end_lineno", node.lineno)
            fix = Fix("wrap-sorted", node.lineno, self.m.column(node.lineno, node.col_offset), end_line,
                      self.m.column(end_line, node.end_col_offset), taint.fix.safe,
                      f"wrap `{self.m.snippet(node, 30)}` in sorted()", path=self.m.path)
            return taint._replace(fix=fix)
        return taint

    # -------------------------------------------------------------------- calls
    def eval_Call(self, node: ast.Call) -> Val:
        func = self.eval(node.func)
        args = [self.eval(a) for a in node.args]
        kwargs: dict[str, Val] = {}
        splat = []
        for kw in node.keywords:
            if kw.arg is None:
                v = self.eval(kw.value)
                splat.append(v)
                if v.keys is not None:
                    kwargs.update(v.keys)
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        origin = func.origin
        call_origin = f"{origin}()" if origin else None
        if origin:
            self.check_sinks(node, origin, args, kwargs)
        # 1. sources
        if origin:
            for spec in self.m.catalog.source_calls.match(origin):
                if spec.max_args is not None and len(node.args) > spec.max_args:
                    continue
                return self._source_result(node, spec, origin, args, kwargs)
        if isinstance(node.func, ast.Attribute):
            spec = self.m.catalog.source_methods.get(node.func.attr)
            if spec is not None and not (origin and self._is_module_path(origin)):
                return self._source_result(node, spec, node.func.attr, args, kwargs, receiver=func)
        # 2. sanitizers and serializers
        arg_taints = merge(*(a.taints for a in args), *(v.taints for v in kwargs.values()), *(s.taints for s in splat))
        if origin:
            sanitizers = self.m.catalog.sanitizer_calls.match(origin)
            if sanitizers:
                clears = {label for s in sanitizers for label in s.clears}
                return Val(tuple(t for t in arg_taints if t.label not in clears), node=node)
            serializer = self.m.catalog.serializer_calls.get(origin)
            if serializer is not None:
                return self._serialize(node, serializer, args, kwargs)
            if origin in _ORDERED_CONSUMERS and args:
                consumed = tuple(self._consumed(t, node.args[0]) if t.label == "unordered" else t for t in args[0].taints)
                return Val(merge(consumed), items=args[0].items, node=node)
        # 3. functions we can summarise
        target = func.func
        if target is None and origin and not origin.startswith("?"):
            found = self.m.resolve_function(origin.lstrip("@")) if "()" not in origin else None
            if isinstance(found, FunctionRef):
                target = found
            elif isinstance(found, ClassInfo):
                return self._construct(node, found, args, kwargs)
        if target is not None:
            return self._apply_summary(node, target, func, args, kwargs)
        if origin and origin.startswith("@") and origin.endswith("()") is False:
            info = self._class_info(origin[1:])
            if info is not None:
                return self._construct(node, info[1], args, kwargs)
        # 4. templates, joins, mutators, everything else: taint flows through
        receiver = func if isinstance(node.func, ast.Attribute) else EMPTY
        recv_val = self.eval(node.func.value) if isinstance(node.func, ast.Attribute) else EMPTY
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if method == "join" and args:
            consumed = tuple(self._consumed(t, node.args[0]) if t.label == "unordered" else t for t in args[0].taints)
            return Val(merge(recv_val.taints, consumed), node=node)
        if method in _MUTATORS and isinstance(node.func, ast.Attribute):
            self._mutate(node, recv_val, method, args, kwargs)
            return Val(node=node)
        if method in _TEMPLATE_METHODS and recv_val.template is not None:
            return self._substitute(node, recv_val, args, kwargs, arg_taints)
        if method == "copy" or method == "model_copy":
            return recv_val
        taints = merge(recv_val.taints, arg_taints)
        # Template text travels through reads, loads and string methods (``yaml.safe_load(path.read_text())``).
        template = recv_val.template or next((a.template for a in args if a.template is not None), None)
        result = Val(taints, origin=call_origin, node=node, template=template)
        if self.stable_template is not None:  # a system template was just built: remember its layer
            result.template, result.sink_layer = self.stable_template
            self.stable_template = None
        return result

    def _is_module_path(self, origin: str) -> bool:
        head = origin.split(".")[0]
        return head in {v.split(".")[0] for v in self.m.imports.values()} and "()" not in origin

    def _source_result(self, node, spec, what, args, kwargs, receiver: Val | None = None) -> Val:
        step = self.m.step(node, f"{spec.note}: `{self.m.snippet(node, 40)}`")
        fix = None
        if spec.label == "unordered":
            fix = Fix("wrap-sorted", 0, 0, 0, 0, spec.sortable, "sortable" if spec.sortable else "")
        taint = Taint(spec.code, spec.label, (step,), fix=fix)
        extra = merge(*(a.taints for a in args), *(v.taints for v in kwargs.values()), receiver.taints if receiver else ())
        return Val(merge((taint,), extra), origin=f"{what}()", node=node)

    def _serialize(self, node: ast.Call, serializer, args, kwargs) -> Val:
        sort = kwargs.get(serializer.sort_kwarg)
        if sort is None:
            is_sorted = serializer.default_sorted
        else:
            is_sorted = bool(sort.const) if sort.const is not None or isinstance(sort.node, ast.Constant) else True
        taints = merge(*(a.taints for a in args[:1]), *(v.taints for k, v in kwargs.items() if k in ("obj", "data")))
        out = []
        for t in taints:
            if t.label != "unordered":
                out.append(t)
            elif not is_sorted:
                step = self.m.step(node, f"serialized without {serializer.sort_kwarg}=True")
                end_line = getattr(node, "end_lineno", node.lineno)
                fix = Fix("add-sort-keys", node.lineno, self.m.column(node.lineno, node.col_offset), end_line,
                          self.m.column(end_line, node.end_col_offset), True, f"add {serializer.sort_kwarg}=True",
                          path=self.m.path, keyword=serializer.sort_kwarg)
                if t.param >= 0:
                    out.append(t._replace(dumped=True, steps=t.steps + (step,), fix=fix))
                else:
                    out.append(t._replace(code="PC502", steps=t.steps + (step,), fix=fix))
        return Val(merge(out), node=node)

    def _mutate(self, node: ast.Call, recv: Val, method: str, args: list[Val], kwargs) -> None:
        new = merge(recv.taints, *(a.taints for a in args), *(v.taints for v in kwargs.values()), *self.loop_unordered)
        if method in ("extend", "update") and args:
            new = merge(new, tuple(self._consumed(t, node.args[0]) if t.label == "unordered" else t for t in args[0].taints))
        items = recv.items
        keys = recv.keys
        if items is not None:
            if method == "append" and args:
                items = items + [args[0]]
            elif method == "extend" and args and args[0].items is not None:
                items = items + args[0].items
            elif method == "insert" and len(args) == 2 and isinstance(args[0].const, int):
                items = list(items)
                items.insert(args[0].const, args[1])
            else:
                items = None
        if keys is not None and method == "update" and args and args[0].keys is not None:
            keys = {**keys, **args[0].keys}
        self._update_container(node.func.value, Val(new, origin=recv.origin, items=items, keys=keys, node=recv.node, template=recv.template))

    def _substitute(self, node: ast.Call, template_val: Val, args, kwargs, arg_taints) -> Val:
        """``tmpl.format(date=now())``: report volatile substitutions at the template line."""
        where = template_val.template
        out = list(template_val.taints)
        text_lines = self.m.project.template_lines(where.path) if self.m.project and where.path != self.m.path else None
        named = list(kwargs.items())
        for a in args:
            named += list(a.keys.items()) if a.keys is not None else [(None, a)]
        for name, val in named:
            for t in val.taints:
                report = t.report_at
                if name is not None and t.param < 0:
                    report = self._placeholder_step(where, name, text_lines) or report
                step = self.m.step(node, f"substituted into template{f' as `{name}`' if name else ''}")
                t = t._replace(steps=t.steps + (step,) + ((report,) if report and report is not t.report_at else ()), report_at=report)
                if template_val.sink_layer is not None and name is not None and report is not None:
                    self._report(t, node, template_val.sink_layer, "value")
                else:
                    out.append(t)
        return Val(merge(out), node=node)

    def _placeholder_step(self, where: TraceStep, name: str, text_lines: list[str] | None) -> TraceStep | None:
        pattern = re.compile(r"\{\{?\s*%s\s*[}|!:.\[]|\$\{?%s\b" % (re.escape(name), re.escape(name)))
        if text_lines is not None:
            for i, line in enumerate(text_lines[where.line - 1:], where.line):
                m = pattern.search(line)
                if m:
                    return TraceStep(where.path, i, m.start() + 1, f"placeholder `{{{name}}}` in template")
            return None
        # A string constant of this module: search its own text.
        text = self.m.template_texts.get((where.line, where.column))
        if text is None:
            return None
        m = pattern.search(text)
        if not m:
            return None
        line = where.line + text.count("\n", 0, m.start())
        # Columns inside a multi-line constant are relative to its own lines.
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + (where.column + 1 if line == where.line else 1)
        return TraceStep(self.m.path, line, col, f"placeholder `{{{name}}}` in template")

    def _construct(self, node: ast.Call, info: ClassInfo, args, kwargs) -> Val:
        found = self._class_info(info.qualname)
        owner = found[0] if found else self.m
        owner.prepare_class(info)
        init = info.methods.get("__init__")
        if init is not None:
            self._apply_summary(node, init, Val(origin=f"@{info.qualname}()"), args, kwargs, bound=True)
        else:  # dataclass / pydantic: fields by name
            fields = [s.target.id for s in info.node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
            for name, val in [*zip(fields, args), *kwargs.items()]:
                if val.taints:
                    old = info.attrs.get(name)
                    info.attrs[name] = join(old, val) if old is not None else val
        return Val(origin=f"@{info.qualname}()", node=node)

    def _apply_summary(self, node: ast.Call, ref: FunctionRef, func: Val, args: list[Val], kwargs: dict[str, Val],
                       bound: bool | None = None) -> Val:
        summary = ref.module.summary(ref)
        if ref.module is not self.m:
            self.m.deps.add(ref.module.path)
            self.m.deps.update(ref.module.deps)
        params = self._param_names(ref)
        if bound is None:
            bound = ref.cls is not None and isinstance(node.func, ast.Attribute) and params[:1] in (["self"], ["cls"])
        actual: dict[int, Val] = {}
        offset = 1 if bound else 0
        for i, a in enumerate(args):
            if i + offset < len(params):
                actual[i + offset] = a
        for name, v in kwargs.items():
            if name in params:
                actual[params.index(name)] = v
        if bound and isinstance(node.func, ast.Attribute):
            actual.setdefault(0, self.eval(node.func.value))
        name = ref.qualname.rsplit(".", 1)[-1]
        call_step = self.m.step(node, f"via {name}()")

        def substitute(taints: tuple[Taint, ...]) -> tuple[Taint, ...]:
            """Parameter taints of the summary replaced by the actual arguments' taints."""
            out = []
            for t in taints:
                if t.param < 0:
                    out.append(t)
                    continue
                arg = actual.get(t.param)
                for at in (arg.taints if arg is not None else ()):
                    if at.label != t.label:
                        continue
                    if t.dumped and at.param < 0 and at.label == "unordered":
                        at = at._replace(code="PC502", fix=t.fix)
                    elif t.dumped:
                        at = at._replace(dumped=True, fix=t.fix)
                    out.append(at._replace(steps=(at.steps + (call_step,) + t.steps)[-MAX_STEPS:]))
            return merge(out)

        def structure(val: Val | None, depth: int = 0) -> Val | None:
            """A returned display (a message list, a block dict) keeps its shape at the call site."""
            if val is None or depth > 4:
                return val
            # Positions inside another module cannot be reported here: point at the call instead.
            here = val.node if val.node is not None and ref.module is self.m else node
            return Val(substitute(val.taints), const=val.const, node=here, template=val.template,
                       items=[structure(v, depth + 1) for v in val.items] if val.items is not None else None,
                       keys={k: structure(v, depth + 1) for k, v in val.keys.items()} if val.keys is not None else None)

        for ps in summary.param_sinks:
            arg = actual.get(ps.param)
            if arg is None:
                continue
            arg_node = arg.node if isinstance(arg.node, ast.expr) else node
            passed = self.m.step(arg_node, f"passed to {name}()")
            saved = self.sink_via
            self.sink_via = ((passed,) + ps.steps[:-1], ps.steps[-1] if ps.steps else None, ps.dumped, ps.label)
            try:
                self.sink_value(arg, arg_node, ps.arg_kind, ps.layer)
            finally:
                self.sink_via = saved
        ret = summary.ret
        shaped = structure(ret)
        return Val(shaped.taints, origin=ret.origin if ret.origin and ret.origin.startswith("@") else f"{ref.qualname}()",
                   items=shaped.items, keys=shaped.keys, func=ret.func, node=node, template=ret.template)

    @staticmethod
    def _param_names(ref: FunctionRef) -> list[str]:
        a = ref.node.args
        names = [x.arg for x in [*a.posonlyargs, *a.args]]
        if a.vararg:
            names.append(a.vararg.arg)
        names += [x.arg for x in a.kwonlyargs]
        if a.kwarg:
            names.append(a.kwarg.arg)
        return names

    # ------------------------------------------------------------------ sinks
    def check_sinks(self, node: ast.Call, origin: str, args: list[Val], kwargs: dict[str, Val]) -> None:
        catalog = self.m.catalog
        specs = catalog.sink_calls.match(origin) if not origin.startswith("?") else []
        if not specs and "." in origin:
            tail = origin.lstrip("?.")
            specs = [s for shape, s in catalog.sink_shapes
                     if (tail == shape or tail.endswith("." + shape)) and self.m.imports_library(s.imports)
                     and (origin.startswith("?") or "()" in origin or origin.startswith("@"))]
        for spec in specs:
            if spec.when and not all(self._condition(c, kwargs) for c in spec.when):
                continue
            self._check_sink_args(node, spec, args, kwargs)
        checks = catalog.check_calls.match(origin)
        tail = origin.rsplit(".", 1)[-1]
        checks += [c for shape, c in catalog.check_shapes if shape == tail and self.m.imports_library(c.imports)]
        for check in checks:
            if all(self._condition(c, kwargs) for c in check.when):
                # Point at the offending keyword when the check is about one (inject_date=...).
                at = next((k.value for c in check.when if c.op != "missing" for k in node.keywords if k.arg == c.keyword), node)
                self.m.emit_check(check.code, at, check.detail or origin)
        if specs and specs[0].id == "anthropic-messages":
            self._count_breakpoints(node, kwargs)

    def _condition(self, cond: Condition, kwargs: dict[str, Val]) -> bool:
        val = kwargs.get(cond.keyword)
        if cond.op == "missing":
            return val is None
        if val is None:
            return False
        const = val.const
        if const is None and isinstance(val.node, ast.Attribute):
            const = self.m.snippet(val.node).split(".", 1)[-1] if "." in self.m.snippet(val.node) else None
            const = self.m.snippet(val.node) if const is None else const
        if cond.op == "is":
            return const == cond.value
        if cond.op == "regex":
            return isinstance(const, str) and re.search(cond.value, const) is not None
        if cond.op == "in":
            snippet = self.m.snippet(val.node) if val.node is not None else None
            return const in cond.value or snippet in cond.value
        if cond.op == "dict_has":
            return val.keys is not None and all(_const_str(val.keys.get(k)) == v for k, v in cond.value)
        if cond.op == "dict_lacks":
            if val.keys is None:
                return False
            entry = val.keys.get(cond.value)
            return entry is None or entry.const is not True
        return False

    def _arg(self, spec: ArgSpec, node: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> tuple[Val, ast.AST] | None:
        if spec.keyword and spec.keyword in kwargs:
            val = kwargs[spec.keyword]
            kw_node = next((k.value for k in node.keywords if k.arg == spec.keyword), node)
            return val, kw_node
        if spec.position is not None and spec.position < len(node.args):
            arg_node = node.args[spec.position]
            if isinstance(arg_node, ast.Starred):
                return None
            return args[spec.position], arg_node
        return None

    def _check_sink_args(self, node: ast.Call, spec: SinkSpec, args, kwargs) -> None:
        for arg in spec.args:
            found = self._arg(arg, node, args, kwargs)
            if found is None:
                continue
            val, arg_node = found
            self.sink_value(val, arg_node, arg.kind, arg.layer, arg.keys)

    def sink_value(self, val: Val, node: ast.AST, kind: str, layer: str, keys: tuple[str, ...] = ()) -> None:
        """Report the taints of ``val`` that reach a stable layer, per how the arg is read."""
        params = tuple(t for t in val.taints if t.param >= 0)
        if params:
            for t in params:
                self._report(t, node, layer, kind)
            val = val.with_taints(tuple(t for t in val.taints if t.param < 0))
        if kind == "value":
            self._report_val(val, node, layer, kind)
        elif kind == "cache-key":
            self._report_val(val, node, layer, kind)
        elif kind == "anthropic-system":
            if val.items is None:
                self._report_val(val, node, layer, "value")
                return
            marked = [i for i, b in enumerate(val.items) if b.keys is not None and "cache_control" in b.keys]
            last = marked[-1] if marked else len(val.items) - 1
            for block in val.items[: last + 1]:
                self._report_val(block, block.node or node, layer, "value")
        elif kind == "anthropic-messages":
            if val.items is None:
                return
            messages = val.items
            if any(m.keys is None for m in messages):
                # Replayed history (`[*history, turn]`): the latest turn is volatile by design and
                # is read back verbatim next turn, so a rolling breakpoint on it is correct.
                messages = messages[:-1]
            blocks = []
            for msg in messages:
                content = msg.keys.get("content") if msg.keys is not None else None
                if content is None:
                    blocks.append((msg, False))
                elif content.items is not None:
                    blocks += [(b, b.keys is not None and "cache_control" in b.keys) for b in content.items]
                else:
                    blocks.append((content, msg.keys is not None and "cache_control" in msg.keys))
            marked = [i for i, (_, has) in enumerate(blocks) if has]
            if marked:
                for block, _ in blocks[: marked[-1] + 1]:
                    self._report_val(block, block.node or node, layer, "value")
        elif kind == "chat-messages":
            if val.items is None:
                return
            # Only the leading run of system/developer messages is the stable prefix; a system
            # message appended later sits after the history and is volatile by position.
            for msg in val.items:
                role = _const_str(msg.keys.get("role")) if msg.keys is not None else None
                if role not in ("system", "developer"):
                    break
                content = msg.keys.get("content")
                if content is not None:
                    self._report_val(content, content.node or node, layer, "value")
        elif kind == "role-tuples":
            if val.items is None:
                return
            for item in val.items:
                if item.items is not None and len(item.items) == 2 and _const_str(item.items[0]) == "system":
                    self._report_val(item.items[1], item.items[1].node or node, layer, "value")
                    if item.items[1].template is not None:
                        self.stable_template = (item.items[1].template, layer)
        elif kind == "dict-keys":
            if val.keys is None:
                if val.origin and val.origin.endswith("()"):
                    return  # a config object: its constructor is a sink of its own
                return
            for key in keys:
                if key in val.keys:
                    sub = val.keys[key]
                    self._report_val(sub, sub.node or node, "prompt_cache_key" if key == "prompt_cache_key" else layer,
                                     "cache-key" if key == "prompt_cache_key" else "value")
        elif kind == "callable":
            if val.func is not None:
                ref = val.func
                summary = ref.module.summary(ref)
                if ref.module is not self.m:
                    self.m.deps.add(ref.module.path)
                name = ref.qualname.rsplit(".", 1)[-1]
                step = self.m.step(node, f"{name}() is evaluated per request")
                ret = summary.ret.with_taints(tuple(t.then(step) for t in summary.ret.taints if t.param < 0))
                self._report_val(ret, node, layer, "value")
            else:
                self._report_val(val, node, layer, "value")

    def _report_val(self, val: Val, node: ast.AST, layer: str, kind: str) -> None:
        for t in val.taints:
            self._report(t, node, layer, kind)

    def _report(self, taint: Taint, node: ast.AST, layer: str, kind: str) -> None:
        """One taint reaches a sink: a diagnostic, or (a parameter) a sink of this function's summary."""
        if kind == "cache-key" and taint.label != "volatile":
            return
        sink_step = None
        if self.sink_via is not None:  # the sink is inside a called function
            middle, sink_step, dumped, label = self.sink_via
            if taint.label != label:
                return
            if dumped and taint.label == "unordered":
                taint = taint._replace(dumped=True) if taint.param >= 0 else taint._replace(code="PC502")
            taint = taint._replace(steps=(taint.steps + middle)[-MAX_STEPS:])
        if taint.param >= 0:
            # A sink inside a role dispatch (`if role == "system": SystemMessage(content)`) is
            # reached only for that role; generic converters would otherwise make every
            # caller's user message a "system prompt". Concrete taints there are still reported.
            if self.ref is not None and not self.role_branch:
                steps = taint.steps + (sink_step or self.m.step(node, f"reaches {layer}"),)
                self.param_sinks.append(ParamSink(taint.param, taint.label, taint.dumped, steps, layer, kind))
            return
        self.m.emit(taint, node, layer, "PC604" if kind == "cache-key" else None, sink_step)

    def _count_breakpoints(self, node: ast.Call, kwargs: dict[str, Val]) -> None:
        count = 1 if "cache_control" in kwargs else 0

        def walk(v: Val | None, depth: int = 0) -> int:
            if v is None or depth > 6:
                return 0
            n = 1 if v.keys is not None and "cache_control" in v.keys else 0
            for child in (v.items or []):
                n += walk(child, depth + 1)
            for k, child in (v.keys or {}).items():
                if k != "cache_control":
                    n += walk(child, depth + 1)
            return n

        for key in ("system", "tools", "messages"):
            count += walk(kwargs.get(key))
        if count > 4:
            self.m.emit_check("PC606", node, str(count))  # detail is the count

    # ------------------------------------------------------------- decorators
    def check_decorators(self, node) -> None:
        """Functions whose return value is a stable layer (``@agent.instructions``)."""
        if not node.decorator_list or not self.return_nodes:
            return
        catalog = self.m.catalog
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            origin = self.eval(target).origin
            if not origin:
                continue
            specs = catalog.decorator_calls.match(origin)
            if not specs:
                tail = origin.rsplit(".", 1)[-1]
                specs = [d for shape, d in catalog.decorator_shapes if shape == tail and "." in origin and self.m.imports_library(d.imports)]
            for spec in specs:
                for ret_node in self.return_nodes:
                    self._report_val(self.ret_for(ret_node), ret_node, spec.layer, "value")
                return

    def ret_for(self, ret_node: ast.AST) -> Val:
        """The taints of one return expression (re-evaluated in the final environment)."""
        val = self.eval(ret_node)
        if val.taints:
            return val
        return Val(tuple(t for t in (self.ret.taints if self.ret else ()) if t.steps and t.steps[-1].line == ret_node.lineno))
