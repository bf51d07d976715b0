"""Callables a template calls each time it renders (issue 14), and where a placeholder is in a
template's text.

Template libraries take functions for placeholders and call them on every render: LangChain's
``PromptTemplate(template="... {date}", partial_variables={"date": _get_datetime})`` and
``prompt.partial(date=_get_datetime)`` (its documented way to put today's date in a prompt),
Mustache/chevron lambdas (``functions={"formatDate": lambda data: datetime.now()...}``), a Jinja
``render(now=datetime.now)``. The template is built once, at import; the clock is read per
render. What such a function returns is a source of the template's text, reported where the
function is handed over (that is where a fixed value goes instead).

A function handed to a call counts only under a name the call's template text uses as a
placeholder (``{date}``, ``{{formatDate}}``), or to ``.partial()``: a tool list or a callback
takes functions too, and their results are not template text.
"""

from __future__ import annotations

import ast
import re

from promptlint.lint.analysis.values import Taint, Val, clip, merge
from promptlint.lint.diagnostic import EVERY_CALL, TraceStep


#: A clock, id or host fact the template engine evaluates: a call or attribute of one
#: (`now()`, `datetime.now()`, `os.environ[...]`) or a filter (`| random`). A bare variable
#: (`{{ datetime }}`) is only a placeholder: what fills it is followed where it is computed.
JINJA_VOLATILE = re.compile(
    r"(\{\{|\{%)[^}]*?\b(now|utcnow|today|datetime|time\.time|timestamp|uuid\d?|random|randint|choice|shuffle|"
    r"getpid|hostname|getcwd|environ|getenv|getActiveWindow|getActiveWindowTitle|getAllTitles)\b"
    r"(?:(?=\s*[(.\[])|(?<=\|random)|(?<=\| random)|(?<=\|shuffle)|(?<=\| shuffle))[^}]*?(\}\}|%\})"
)
JINJA_CODES = {
    "now": "PC101", "utcnow": "PC101", "today": "PC101", "datetime": "PC101", "time.time": "PC101",
    "timestamp": "PC101", "uuid": "PC201", "uuid4": "PC201", "uuid1": "PC201", "random": "PC201",
    "randint": "PC201", "choice": "PC201", "shuffle": "PC201", "getpid": "PC301", "hostname": "PC301",
    "getcwd": "PC301", "environ": "PC302", "getenv": "PC302",
    # Code blocks a host executes on every render (open-interpreter's `{{ }}`): the focused window.
    "getActiveWindow": "PC301", "getActiveWindowTitle": "PC301", "getAllTitles": "PC301",
}


def jinja_taints(text: str, first_line: int, path: str) -> list[Taint]:
    """The clocks, ids and host facts a template's text evaluates each time it is rendered, each
    where it is written (a template string starting at ``first_line`` of ``path``, or a file)."""
    taints = []
    for match in JINJA_VOLATILE.finditer(text):
        code = JINJA_CODES.get(match.group(2), "PC101")
        at = match.start(2)  # the volatile call itself, inside a multi-line block too
        line = first_line + text.count("\n", 0, at)
        col = at - (text.rfind("\n", 0, at) + 1) + 1
        shown = " ".join(match.group(0).split()).replace(": ", ":")  # one short line; ": " splits notes
        shown = shown if len(shown) <= 60 else f"{match.group(1)} … {match.group(2)} … {match.group(3)}"
        step = TraceStep(path, line, col, f"template expression `{shown}`")
        taints.append(Taint(code, "volatile", (step,), report_at=step, per_render=True))
    return taints


def rendered_callables(fa, node: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> list[tuple[int | str, tuple[Taint, ...]]]:
    """(where, taints): the volatile results of the functions ``node`` gives a template for its
    placeholders, by the argument that holds each (a keyword's name, or a position)."""
    holders = [*enumerate(args), *kwargs.items()]
    partial = isinstance(node.func, ast.Attribute) and node.func.attr == "partial"
    texts = [v.const for _, v in holders if isinstance(v.const, str) and "{" in v.const]
    if not partial and not texts:
        return []  # no placeholder to fill: most calls stop here, before any catalog lookup
    named = [(where, name, val) for where, holder in holders
             for name, val in ([(where, holder)] if isinstance(where, str) else []) + list((holder.keys or {}).items())
             if val.func is not None or _library_source(fa, val)]
    if not named:
        return []
    out: list[tuple[int | str, tuple[Taint, ...]]] = []
    for where, name, val in named:
        if partial or any(_placeholder(name).search(text) for text in texts):
            step = fa.m.step(val.node or node, f"called on each render for `{name}`")
            found = tuple(t._replace(steps=clip(t.steps + (step,)), report_at=step, per_render=True) for t in _results(fa, val))
            if found:
                out.append((where, found))
    return out


def _library_source(fa, val: Val) -> list:
    """``datetime.now`` handed over uncalled: the catalog's source it names."""
    if val.origin is None or isinstance(val.node, ast.Call):
        return []
    return fa.m.catalog.source_calls.match(val.origin)


def _results(fa, val: Val) -> list[Taint]:
    """What calling ``val`` returns that differs per call (no parameter taints)."""
    if val.func is not None:
        summary = val.func.module.summary(val.func)
        return [t for t in summary.ret.taints if t.param < 0 and t.label == "volatile"]
    spec = _library_source(fa, val)[0]  # (only callables that name a source get here)
    return [Taint(spec.code, spec.label, (fa.m.step(val.node, f"{spec.note}: `{val.origin}`"),))]


def _placeholder(name: str) -> re.Pattern:
    """The name as a placeholder: ``{name}``, ``{name!r}``, ``{name:...}``, ``{{ name }}``,
    ``{{ name|f }}``, ``{{ name() }}``, Mustache's ``{{#name}}``, ``${name}``."""
    word = re.escape(name)
    return re.compile(r"\{\{?\s*[#^]?\s*%s\s*(?:\(\s*\))?\s*[}|!:.\[]|\$\{?%s\b" % (word, word))


def names_placeholder(text: str, name: str, template_file: bool) -> bool:
    """Whether a template's text can take ``name``: as a placeholder of a constant (the word
    alone is prose: "Given the following tasks"), or anywhere in a template file (Jinja loops)."""
    return (re.search(r"\b%s\b" % re.escape(name), text) if template_file else _placeholder(name).search(text)) is not None


def constant_text(owner, where: TraceStep) -> tuple[str | None, list[str] | None]:
    """The text of the template constant of module ``owner`` at ``where``, and, when it is joined
    from pieces (``"...{a}" + today + "...{b}"``), the module's lines up to its last piece."""
    text = owner.template_texts.get((where.line, where.column))
    if text is None:
        return None, None
    end = owner.template_ends.get((where.line, where.column), where.line)
    return text, (owner.lines[:end] if end - where.line != text.count("\n") else None)


def placeholder_step(owner, where: TraceStep, name: str, text_lines: list[str] | None) -> TraceStep | None:
    """Where ``{name}`` is in the template text at ``where`` (a constant of module ``owner``, or
    the lines of a template file), or None when it is not there."""
    pattern = _placeholder(name)
    if text_lines is None:  # a constant of a module: its text, or its source lines if joined from pieces
        text, text_lines = constant_text(owner, where)
        if text is None:
            return None
    if text_lines is not None:
        for i, line in enumerate(text_lines[where.line - 1:], where.line):
            m = pattern.search(line)
            if m:
                return TraceStep(where.path, i, m.start() + 1, f"placeholder `{{{name}}}` in template")
        return None
    m = pattern.search(text)
    if not m:
        return None
    line = where.line + text.count("\n", 0, m.start())
    # Columns inside a multi-line constant are relative to its own lines.
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + (where.column + 1 if line == where.line else 1)
    return TraceStep(where.path, line, col, f"placeholder `{{{name}}}` in template")


def substitute(fa, node: ast.Call, template_val: Val, args, kwargs) -> Val:
    """``tmpl.format(date=now())``: report volatile substitutions at the template line."""
    where = template_val.template
    out = list(template_val.taints)
    text_lines = fa.m.project.template_lines(where.path) if fa.m.project and where.path != fa.m.path else None
    # A template constant of another module (`from .prompts import PROMPTS`) is read there.
    owner = fa.m.project.analysis(where.path) or fa.m if text_lines is None and where.path != fa.m.path and (
        fa.m.project is not None) else fa.m
    named = list(kwargs.items())
    for a in args:
        named += list(a.keys.items()) if a.keys is not None else [(None, a)]
    if text_lines is not None:
        known = "\n".join(text_lines)
    else:
        known, pieces = constant_text(owner, where)
        if pieces is not None:  # joined from pieces: all of their lines
            known = "\n".join(pieces[where.line - 1:])
    for name, val in named:
        if name is not None and known is not None and not names_placeholder(known, name, text_lines is not None):
            continue  # the template never names this variable: the value goes nowhere
        for t in val.taints:
            report = t.report_at
            if name is not None and t.param < 0 and owner is fa.m:
                report = placeholder_step(owner, where, name, text_lines) or report
            step = fa.m.step(node, f"substituted into template{f' as `{name}`' if name else ''}")
            t = t._replace(steps=t.steps + (step,) + ((report,) if report and report is not t.report_at else ()), report_at=report)
            # (a constant of another module: its text says which names reach it, reported here)
            unknown_text = owner is not fa.m or text_lines is None and (where.line, where.column) not in owner.template_texts
            if template_val.sink_layer is not None and name is not None and (report is not None or unknown_text):
                fa._report(t, node, template_val.sink_layer, "value")
            else:
                out.append(t)
    return Val(merge(out), node=node)


def stuffed(fa, node: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> None:
    """LangChain's `create_stuff_documents_chain(llm, prompt)`: on every call the chain fills
    the prompt's `{context}` with the documents retrieved for this turn's question."""
    prompt = kwargs.get("prompt") or (args[1] if len(args) > 1 else None)
    if prompt is None or prompt.template is None or prompt.sink_layer is None:
        return
    var = kwargs.get("document_variable_name")
    name = var.const if var is not None and isinstance(var.const, str) else "context"
    step = fa.m.step(node, f"per-turn input: the documents the chain retrieves into `{{{name}}}` {EVERY_CALL}")
    substitute(fa, node, prompt, [], {name: Val((Taint("PC401", "volatile", (step,)),))})
