"""The analysis of one module: names, the driver that decides which functions to analyse,
summaries (memoised per function), classes, diagnostics and cross-module resolution."""

from __future__ import annotations

import ast
import re

from promptlint.lint.analysis import loops
from promptlint.lint.analysis.function import FunctionAnalysis
from promptlint.lint.analysis.values import (
    _DEPTH, MAX_SUMMARY_DEPTH, ClassInfo, FunctionRef, NextTurn, Summary, Taint, Val, _opaque, frozen_ok, holds_template, merge,
)
from promptlint.lint.catalog import Catalog
from promptlint.lint.diagnostic import Diagnostic, TraceStep
from promptlint.lint.guards import decorator_names, default_factory, tool_written
from promptlint.lint.literal_search import names_test
from promptlint.lint.lifetimes import graph_node, streamlit_script
from promptlint.lint.run_state import writes_state
from promptlint.lint.source import source_lines


#: Terminal and desktop UI toolkits: a module built on one shows messages on screen.
_UI_TOOLKITS = frozenset({"textual", "urwid", "curses", "prompt_toolkit", "tkinter", "PyQt5", "PyQt6", "PySide2",
                          "PySide6", "wx", "kivy"})


def is_abstract(func: ast.AST) -> bool:
    """A method whose body only declares it: ``@abstractmethod``, or a docstring, ``pass``,
    ``...`` or ``raise NotImplementedError``."""
    if "abstractmethod" in decorator_names(func):
        return True
    body = [s for s in getattr(func, "body", ()) if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Raise) and "NotImplementedError" in ast.dump(s)) for s in body)


class ModuleAnalysis:
    """Analyse one module: its module-level code and every function, lazily summarised."""

    def __init__(self, path: str, text: str, tree: ast.Module, catalog: Catalog, project: "Project | None",
                 module_name: str = "", report: bool = True):
        self.path = path
        self.text = text
        self.lines = source_lines(text)
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
        self.run_state_returns: dict[int, Val] = {}
        # run-state field -> [line, column, code, source line, column, note] of a source written there
        self.state_writes: dict[str, list] = {}
        self._called: dict[str, bool] = {}  # function name -> whether this module calls it (calls_itself)
        self.in_progress: set[int] = set()
        self.deps: set[str] = set()  # other files consulted (paths)
        self.failed_deps: set[str] = set()  # helper modules called into that do not parse
        self.imported_roots: set[str] = set()
        self._emitted: set[tuple] = set()
        self._globals_ready = False
        self.template_texts: dict[tuple[int, int], str] = {}  # string constants used as templates
        self.template_ends: dict[tuple[int, int], int] = {}  # the same constants' last source line
        self._collect_names()

    # ------------------------------------------------------------------ names
    def _collect_names(self) -> None:
        # Imports are statements: walk statement bodies only, never expressions (much cheaper).
        stack = list(self.tree.body)
        stars: list[str] = []
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
                        stars.append(base)
                        continue
                    self.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
                if base:
                    self.imported_roots.add(base)
        for node in self.tree.body:
            self._declare(node, self.module_name)
        for base in stars:
            self._import_star(base)

    def _import_star(self, base: str) -> None:
        """``from utils.imports import *`` of a project module: the names it imports and defines
        (``datetime`` there is ``datetime.datetime`` here). A name this module binds itself wins."""
        path = self.project.module_file(base) if self.project is not None and base else None
        other = self.project.analysis(path) if path is not None else None
        if other is None:
            return
        self.deps.add(other.path)  # (its imports are this module's names: a change there changes this)
        for name, qualname in other.imports.items():
            self.imports.setdefault(name, qualname)
        for name in [*other.functions, *other.classes]:
            if name not in self.functions and name not in self.classes:
                self.imports.setdefault(name, f"{base}.{name}")

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

    def attribute_class(self, info: ClassInfo, attr: str, depth: int = 0) -> str | None:
        """The class an attribute is declared with in a class body (``llm: BaseLLM`` of a pydantic
        model or a dataclass) or by the constructor parameter it keeps (``def __init__(self, llm:
        LLMClient): self.llm = llm``), in ``info`` or a base class of it: its qualified name."""
        for stmt in info.node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == attr:
                return self._annotation_class(stmt.annotation)
        init = info.methods.get("__init__")
        if init is not None:
            typed = {a.arg: a.annotation for a in init.node.args.args + init.node.args.kwonlyargs if a.annotation is not None}
            for stmt in init.node.body:
                if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id in typed
                        and any(isinstance(t, ast.Attribute) and t.attr == attr and getattr(t.value, "id", "") == "self"
                                for t in stmt.targets)):
                    return self._annotation_class(typed[stmt.value.id])
        for found in self.base_classes(info) if depth < 4 else ():
            qual = (found.module or self).attribute_class(found, attr, depth + 1)
            if qual is not None:
                return qual
        return None

    def base_classes(self, info: ClassInfo) -> list[ClassInfo]:
        """The project classes ``info`` derives from (its bases as this module names them)."""
        found = (self.classes.get(base) or (self.resolve_function(base) if base else None) for base in info.bases)
        return [f for f in found if isinstance(f, ClassInfo)]

    def _annotation_class(self, annotation: ast.AST) -> str | None:
        """``BaseLLM``, ``"BaseLLM"``, ``Optional[BaseLLM]``, ``BaseLLM | None``: a class's name."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(annotation, ast.Subscript) and self._dotted(annotation.value) in ("Optional", "typing.Optional"):
            annotation = annotation.slice
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            sides = [s for s in (annotation.left, annotation.right) if not (isinstance(s, ast.Constant) and s.value is None)]
            annotation = sides[0] if len(sides) == 1 else None
        dotted = self._dotted(annotation) if annotation is not None else None
        if not dotted or not dotted.rsplit(".", 1)[-1][:1].isupper():
            return None
        return f"{self.module_name}.{dotted}" if dotted in self.classes else dotted

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
        if not text:  # positions of a rewritten newer-syntax line: show the expression itself
            text = " ".join(ast.unparse(node).split())
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

    @property
    def dead(self) -> bool:
        """Whether this module fails at import, so none of its code runs: a top-level import of
        a module its own tree's package does not have (a stale copy beside the live package)."""
        if self.project is None:
            return False
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            if any(self.project.missing_module(name) for name in names):
                return True
        return False

    @property
    def reruns(self) -> bool:
        """Whether this module is a Streamlit script (lifetimes.streamlit_script): its module-level
        code runs per turn, not once at import."""
        return streamlit_script(self.text)

    @property
    def on_screen(self) -> bool:
        """Whether this module is a terminal or desktop UI (it imports a toolkit)."""
        return any(q.split(".")[0] in _UI_TOOLKITS for q in self.imports.values())

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
        catalog = self.catalog
        for info in self.classes.values():  # class-body fields run at import, as module-level code does
            fields = [s for s in info.node.body if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None]
            if any(catalog.prefilter.search(self._segment(s)) for s in fields):
                self.prepare_class(info)
        todo = [r for r in refs if catalog.prefilter.search(seg := self._segment(r.node))
                or catalog.shape_prefilter.search(seg) or catalog.stable_layer_of(r.node.name)
                or r.cls is not None and r.cls.bases and catalog.hook_layer(r.cls.bases, r.node.name)
                or writes_state(seg) or graph_node(r.node)]  # what it writes into a run's state (run_state.py)
        # Globals holding a stable template (`prompt = ChatPromptTemplate.from_messages(...)`):
        # a function that fills one writes a stable layer without naming any sink token.
        names = set(extra_names) | self.template_globals()
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

    def _declaring_bases(self, info: ClassInfo, name: str, depth: int = 0) -> list[str]:
        """The project base classes above ``info`` that declare method ``name`` abstract."""
        out = []
        for found in self.base_classes(info) if depth < 3 else ():
            declared = found.methods.get(name)
            if declared is not None and is_abstract(declared.node):
                out.append(found.name)
            out += (found.module or self)._declaring_bases(found, name, depth + 1)
        return out

    def _segment(self, node: ast.AST) -> str:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return "\n".join(self.lines[start - 1: node.end_lineno])

    def _mentions(self, node: ast.AST, names: set[str]) -> bool:
        return names_test(frozenset(names)).search(self._segment(node))

    def calls_itself(self, func: ast.AST) -> bool:
        """Whether this module calls ``func`` by name (`ctx = _build_context(state, trip)`): then
        what it returns goes to its caller, not to the graph as a node's update."""
        name = getattr(func, "name", "")
        if name not in self._called:  # (asked at every return of a node: once per name)
            self._called[name] = bool(name) and re.search(rf"(?<!def )(?<!\w){re.escape(name)}\(", self.text) is not None
        return self._called[name]

    def template_globals(self) -> set[str]:
        """Module globals holding a stable template (or a registry of them): a function that
        fills one writes a stable layer without naming any sink token."""
        return {n for n, v in self.globals.items() if holds_template(v)}

    def param_sink_functions(self) -> list[str]:
        """Names of this module's functions that carry a parameter into a sink, and of its
        globals that hold a stable template (whoever imports one may fill it)."""
        out = sorted(self.template_globals())
        for ref in [*self.functions.values(), *(m for c in self.classes.values() for m in c.methods.values())]:
            summary = self.summaries.get(id(ref.node))
            if summary is not None and summary.param_sinks:
                if ref.cls is None:
                    out.append(ref.node.name)
                else:  # a method is called as `x.build(text)`; `Builder(text)` names the class
                    # (`__init__` is called by the class's name only), and a caller may hold it as
                    # the base class that declares the method (`llm: BaseLLM`)
                    out += [ref.cls.name] if ref.node.name.startswith("__") else ["." + ref.node.name, ref.cls.name]
                    out += ["+" + base for base in self._declaring_bases(ref.cls, ref.node.name)]
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
            if fa.kept_replies and ref.cls.next_turn is None:
                # A method that keeps the model's reply in its object (`self.facts += parse(reply)`)
                # is called again on the next turn: what it builds from that attribute before the
                # line that keeps it (the system prompt) carries the last turn's reply then.
                ref.cls.next_turn = NextTurn(ref.node, min(fa.kept_replies.values()), frozenset(fa.kept_replies))
                try:
                    result = FunctionAnalysis(self, ref, ref.cls).run_function()
                finally:
                    ref.cls.next_turn = None
        finally:
            _DEPTH[0] = depth
            self.in_progress.discard(key)
        self.summaries[key] = result
        return result

    def nested(self, node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str, env: dict) -> FunctionRef:
        """A function defined inside another, summarised there (its sinks and decorators are checked
        too). It reads the enclosing function's names (`async def detect(): return await
        classify(user_message)`): their sources as they stand here, not its parameters' stand-ins;
        summarised again when a run of the enclosing function hands it a source."""
        closure = {name: val.keep(lambda t: t.param < 0) for name in loops.free_names(node) if (val := env.get(name)) is not None}
        ref = FunctionRef(self, node, qualname, None, closure)
        tainted = any(v.taints for v in closure.values())
        if tainted or getattr(node, "_promptlint_tainted_closure", False):  # (else the summary made before holds)
            self.summaries.pop(id(node), None)
        node._promptlint_tainted_closure = tainted
        self.summary(ref)
        return ref

    def forget_methods(self, cls: ClassInfo) -> None:
        """A method stored a new source in ``self``: the class's other methods read it there, so
        what was summarised of them before (``update_system_prompt()`` called before
        ``set_history()``) is redone when next called."""
        for method in cls.methods.values():
            if id(method.node) not in self.in_progress:
                self.summaries.pop(id(method.node), None)

    def run_state_return(self, ref: FunctionRef, hook: bool = False) -> Val:
        """What an instructions function returns when a framework calls it with the run's context:
        fields it reads from that context carry the field's name (run_state.py). A hook's own
        object (``self`` of a context provider) is run state too."""
        key = id(ref.node)
        done = self.run_state_returns.get(key)
        if done is None:
            self.run_state_returns[key] = Val()  # recursion: nothing
            fa = FunctionAnalysis(self, ref, ref.cls)
            fa.run_state = "self" if hook else True
            ret = fa.run_function().ret
            done = self.run_state_returns[key] = ret.with_taints(tuple(t for t in ret.taints if t.needs))
        return done

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
                if default_factory(stmt.value) is None and not self.reruns:  # (computed once, when the class is defined)
                    val = val.keep_deep(frozen_ok)
                for t in targets:
                    if isinstance(t, ast.Name):
                        info.attrs[t.id] = val.with_taints(tuple(
                            x.then(self.step(stmt, f"class attribute {info.name}.{t.id}")) for x in val.taints))
        for name in ("__init__", "__post_init__", "setup", "model_post_init"):
            if name in info.methods:
                self.summary(info.methods[name])
        for attr, (write, tool) in tool_written(info.node).items():
            step = self.step(write, f"what the model's `{tool}` tool call stores: `{self.snippet(write, 40)}`")
            kept = info.attrs.get(attr)
            info.attrs[attr] = Val(merge(kept.taints if kept else (), (Taint("PC401", "volatile", (step,)),)), node=write)

    # ------------------------------------------------------------ diagnostics
    def emit(self, taint: Taint, sink_node: ast.AST, layer: str, code: str | None = None,
             sink_step: TraceStep | None = None, sent: bool = False) -> None:
        if not self.report or taint.param >= 0 or taint.unread:
            return  # (a file's name in the prompt is not its content: `f"Keep notes in {MEMORY}"`)
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
            name=doc.name, message=message, severity=doc.severity, trace=steps, fix=fix, needs=taint.needs, sent=sent,
        ))

    def emit_check(self, code: str, node: ast.AST, detail: str, layer: str = "") -> None:
        """Report a framework option; with a ``layer``, the framework puts a source of
        ``code``'s family into that layer itself (the option is where the flow starts)."""
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
            message=f"{doc.summary.format(sink=layer)}: {detail}" if layer else doc.summary.format(detail=detail, sink=""),
            severity=doc.severity,
            trace=(self.step(node, detail),),
        ))

    @staticmethod
    def catalog_docs():
        from promptlint.lint.catalog import load_rule_docs

        return load_rule_docs()

    # ----------------------------------------------------------- resolution
    def callable_named(self, origin: str | None) -> FunctionRef | ClassInfo | None:
        """The project function or class a value's origin names (`mod.fn`, `@mod.Cls`); None for
        what a call returned (`mod.make()`) or a method of an unknown receiver (`?.run`)."""
        if not origin or origin.startswith("?") or "()" in origin:
            return None
        return self.resolve_function(origin.lstrip("@"))

    def resolve_function(self, qualname: str) -> FunctionRef | ClassInfo | None:
        """A function or class named by a qualified name: local, or in a project module."""
        if self.module_name and qualname.startswith(self.module_name + "."):
            found = self.local_callable(qualname[len(self.module_name) + 1:])
            if found is not None or not self.path.endswith("__init__.py"):
                return found  # (a package's own name also heads its submodules': `pkg.prompts.base.f`)
        if self.project is None:
            return None
        return self.project.resolve(qualname, self)

    def methods_named(self, name: str) -> list[FunctionRef]:
        """Methods called ``name`` in this module's classes and in the classes it imports."""
        cache = self.__dict__.setdefault("_methods_named", {})
        if name not in cache:
            found = [c.methods[name] for c in self.classes.values() if name in c.methods]
            for qual in self.imports.values():
                if qual.split(".")[-1][:1].isupper() and self.project is not None:
                    info = self.resolve_function(qual)
                    if isinstance(info, ClassInfo) and name in info.methods:
                        found.append(info.methods[name])
            cache[name] = found
        return cache[name]

    def implementation(self, ref: FunctionRef) -> FunctionRef:
        """What a call of ``ref`` runs: the method itself, or, for an abstract method with one
        implementation in the project (``Project.override``), that one. With several (one
        adapter per provider), which one runs is decided at run time: the call stays opaque
        rather than follow one of them, or all, through code the caller may never reach."""
        found = self.project.override(ref, self) if self.project is not None and ref.cls is not None else None
        return found or ref

    def local_callable(self, dotted: str) -> FunctionRef | ClassInfo | None:
        head, _, tail = dotted.partition(".")
        if not tail:
            return self.functions.get(head) or self.classes.get(head)
        info = self.classes.get(head)
        if info is not None and "." not in tail:
            return info.methods.get(tail)
        return None
