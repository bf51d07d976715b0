"""What a call's argument means by where it is passed: its keyword (a lookup key, a filter, a
metadata field, a serializer's `sort_keys`), for a parameter, the expression the call gives for
it, and what a method stores of its parameters on `self`."""

from __future__ import annotations

import ast
import re

from promptlint.lint.analysis.loops import statement_blocks
from promptlint.lint.analysis.values import LOCATORS, Taint, Val, merge
from promptlint.lint.diagnostic import Fix
from promptlint.lint.guards import GROWERS, descendants, self_attribute

#: Methods that change their receiver in place.
MUTATORS = GROWERS | {"__setitem__"}

#: Keywords that name a membership filter (what to leave out or let through, ORM ``__in``).
MEMBERSHIP_KEYWORD = re.compile(
    r"^_*(?:exclude|excluded|exclusions?|disabled|skip|skipped|ignore|ignored|deny|denied|blocked|blocklist|allowlist)(?:_|$)"
    r"|__(?:in|not_in)$")
#: ORM range lookups (Django ``created_at__gte=``): a time there is a cutoff, not text.
RANGE_LOOKUP = re.compile(r"__(?:gte?|lte?|range)$")
#: Keywords that select what a call keeps (``model_dump(include=s)``, ``exclude=``,
#: ``excluded_tool_names=``): a set given there is a filter, its order never reaches the result.
_SELECTOR_KEYWORD = re.compile(r"^(include|exclude|excluded|included|only|skip|skipped|ignore|ignored|allow|allowed|"
                               r"deny|denied|disabled|enabled|selected|filter|blocked)(_|$)")
#: Keywords that name what to look up (``db.get_session(session_id=sid)``): the record found is
#: not made of its key, so a fresh id passed there does not make the record volatile.
_KEY_KEYWORD = re.compile(r"^(id|ids|key|pk|\w+_(id|ids|key|pk))$")
#: Telemetry a call is tagged with (``llm.complete(prompt, trace_meta={"call_id": uuid4()})``,
#: ``metadata=``, ``tags=``, ``run_name=``, ``extra_headers=``): what comes back is not made of it.
_TELEMETRY_KEYWORD = re.compile(r"^(trace_meta(data)?|metadata|tags|run_name|trace_name|span_name|callbacks|"
                                r"extra_headers|headers)$")
#: Metadata fields of an object built by a constructor the analysis cannot see into
#: (``Session(created_at=now())``): one such field does not make the whole object volatile.
#: (Named narrowly: ``current_time=`` is content a builder renders, not metadata.)
_METADATA_KEYWORD = re.compile(r"^(created|updated|modified|timestamp|(created|updated|modified|deleted|expires)_(at|ts)|"
                               r"last_(updated|modified))$")

#: Where a call writes or logs (``complete(prompt, log_file=f"{stamp}.log")``, ``output_dir=``): a
#: clock, an id or a host path in the name is not in what the call returns.
_PATH_KEYWORD = re.compile(r"^(\w+_)?(file|path|dir|folder|filename|filepath|dirname)$")


#: A time limit put on a call (``asyncio.wait_for(task, timeout=budget)``, ``deadline=``, ``ttl=``):
#: it decides how long the call may take, not what comes back.
_LIMIT_KEYWORD = re.compile(r"^(timeout|deadline|ttl|expires?|expiry|max_wait|wait|delay|interval)(_\w+)?$|^\w+_(timeout|deadline)$")


#: A time cut-off of a query (Google Calendar's ``events().list(timeMin=now)``, ``since=``,
#: ``start_date=``): the clock selects what is fetched; what comes back is not made of it.
_CUTOFF_KEYWORD = re.compile(r"^(time_?(min|max)|since|until|after|before|oldest|latest|updated_?min|"
                             r"(start|end|from|to|min|max)_?(time|date|datetime|ts)|\w+_(after|before|since|until))$", re.IGNORECASE)


def passed(keyword: str, val: Val, callee: str, renders: bool) -> tuple[Taint, ...]:
    """The taints an argument passes into the result of a call the analysis cannot see into."""
    if renders:
        return val.taints  # `.format(session_id=...)`: every variable may be rendered
    if _KEY_KEYWORD.match(keyword) or _TELEMETRY_KEYWORD.match(keyword) or _LIMIT_KEYWORD.match(keyword) or (
            callee[:1].isupper() and _METADATA_KEYWORD.match(keyword)):
        return ()
    if _SELECTOR_KEYWORD.match(keyword):
        return tuple(t for t in val.taints if t.label != "unordered")
    if _CUTOFF_KEYWORD.match(keyword):
        return tuple(t for t in val.taints if t.code != "PC101")
    if _PATH_KEYWORD.match(keyword):
        return tuple(t for t in val.taints if not t.code.startswith(LOCATORS))
    return val.taints


def serialized(m, node: ast.Call, serializer, args, kwargs) -> Val:
    """``json.dumps(obj)``: an unordered value keeps its order in the text unless the call sorts
    its keys (``sort_keys=True``, a serializer that sorts by default); the fix adds the keyword."""
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
            step = m.step(node, f"serialized without {serializer.sort_kwarg}=True")
            end_line = getattr(node, "end_lineno", node.lineno)
            fix = Fix("add-sort-keys", node.lineno, m.column(node.lineno, node.col_offset), end_line,
                      m.column(end_line, node.end_col_offset), True, f"add {serializer.sort_kwarg}=True",
                      path=m.path, keyword=serializer.sort_kwarg)
            if t.param >= 0:
                out.append(t._replace(dumped=True, steps=t.steps + (step,), fix=fix))
            else:
                out.append(t._replace(code="PC502", steps=t.steps + (step,), fix=fix))
    return Val(merge(out), node=node)


_QUERY = re.compile(r"\s*(?:SELECT|WITH)\b", re.IGNORECASE)


def sql_query(method: str | None, args: list[Val]) -> bool:
    """``conn.execute("SELECT ...", params)``: rows a query selects are not made of its parameters
    (a clock there is a cut-off, an id a key), except that rows matched to this turn's words
    (``WHERE embedding MATCH ?`` with the message's embedding) are this turn's matches (``MATCHED``)."""
    return method in _QUERY_METHODS and bool(args) and isinstance(args[0].const, str) and bool(_QUERY.match(args[0].const))


#: Methods that run a query given as their first argument: DB-API's, asyncpg's (``fetchrow``),
#: aiosqlite's and the ``databases`` package's (``fetch_one``).
_QUERY_METHODS = frozenset({"execute", "executemany", "fetch", "fetchrow", "fetchval", "fetch_one", "fetch_all",
                            "fetch_val", "execute_fetchall"})


_TABLES = re.compile(r"\b(?:FROM|JOIN)\s+[\"'`\[]?(\w+)", re.IGNORECASE)


def table_read(m, node: ast.Call, query: str) -> tuple[Taint, ...]:
    """Rows a query reads from a table that holds what earlier turns wrote (``SELECT summary FROM
    long_term_memory WHERE ...``: the ``tables`` of the catalog's sources)."""
    for table in _TABLES.findall(query):
        for spec in m.catalog.source_tables.match(table.lower()):
            return (Taint(spec.code, spec.label, (m.step(node, f"{spec.note}: rows of `{table}`"),)),)
    return ()


def model_read(m, node: ast.Call) -> tuple[Taint, ...]:
    """Rows an ORM query reads from a model named for what earlier turns wrote (SQLAlchemy's
    ``session.query(MessageSummary).all()``, ``select(Fact)``): the model's table is its name in
    snake case, singular or plural, matched against the same ``tables`` patterns."""
    for a in node.args:
        if isinstance(a, ast.Name) and a.id[:1].isupper() and not a.id.isupper():
            table = re.sub(r"(?<!^)(?=[A-Z])", "_", a.id).lower()
            for name in (table, table + "s"):
                for spec in m.catalog.source_tables.match(name):
                    return (Taint(spec.code, spec.label, (m.step(node, f"{spec.note}: rows of `{a.id}`"),)),)
    return ()


def bind(signature: ast.arguments, params: list[str], offset: int, args: list[Val], kwargs: dict[str, Val]) -> dict[int, Val]:
    """A call's arguments by the index of the parameter that receives them (``values.parameters``
    order; ``offset`` 1 for a bound method's ``self``). Positionals beyond the named ones go to
    ``*args`` as one tuple; keywords no parameter names go to ``**kwargs`` as one dict, so
    ``render(template, memories=m)`` reaches ``template.format(**kwargs)``."""
    positional = len(signature.posonlyargs) + len(signature.args)
    named = set(params[:positional]) | {a.arg for a in signature.kwonlyargs}
    actual: dict[int, Val] = {}
    extra: list[Val] = []
    for i, a in enumerate(args):
        if i + offset < positional:
            actual[i + offset] = a
        else:
            extra.append(a)
    if extra and signature.vararg is not None:
        actual[positional] = Val(merge(*(a.taints for a in extra)), items=extra)
    spread: dict[str, Val] = {}
    for name, v in kwargs.items():
        if name in named:
            actual[params.index(name)] = v
        else:
            spread[name] = v
    if spread and signature.kwarg is not None:
        actual[len(params) - 1] = Val(merge(*(v.taints for v in spread.values())), keys=spread)
    return actual


def argument_syntax(node: ast.Call, position: int, name: str) -> ast.expr | None:
    """The expression a call passes for a parameter (by position, else by keyword); None when a
    splat (`*args`, `**kwargs`) hides it."""
    if any(isinstance(a, ast.Starred) for a in node.args[:position + 1]):
        return None
    if 0 <= position < len(node.args):
        return node.args[position]
    return next((k.value for k in node.keywords if k.arg == name), None)


#: Calls that run a function they are handed, with the arguments after it (a thread pool, an
#: event loop's executor): method or function name -> the position of the function.
_RUNNERS = {"submit": 0, "to_thread": 0, "run_in_executor": 1, "run_sync": 0}


def run_call(node: ast.Call) -> ast.Call | None:
    """``executor.submit(fetch, user_id)`` as the call it makes: ``fetch(user_id)``. Its future's
    ``.result()`` is that call's result. Built once per call node."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    where = _RUNNERS.get(name)
    if where is None or len(node.args) <= where or isinstance(node.args[where], (ast.Starred, ast.Constant)):
        return None
    made = getattr(node, "_promptlint_run", None)
    if made is None:
        made = node._promptlint_run = ast.copy_location(
            ast.Call(func=node.args[where], args=node.args[where + 1:], keywords=node.keywords), node)
        made.end_lineno, made.end_col_offset = node.end_lineno, node.end_col_offset
    return made


def param_stores(func: ast.AST, params: list[str]) -> list[tuple[str, int]]:
    """``self.attr.append(param)`` / ``self.attr = param`` / ``self.attr += param`` in a method's
    own body: (attribute, parameter index) pairs, read from the syntax (cached on the node)."""
    found = getattr(func, "_promptlint_param_stores", None)
    if found is not None:
        return found
    found = []
    index = {name: i for i, name in enumerate(params)}

    def params_in(expr) -> list[int]:
        return sorted({index[n.id] for n in ast.walk(expr)
                       if isinstance(n, ast.Name) and n.id in index and n.id not in ("self", "cls")})

    for sub in descendants(func):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in MUTATORS:
            attr = self_attribute(sub.func.value)
            if attr:
                found += [(attr[5:], i) for a in sub.args for i in params_in(a)]
        elif isinstance(sub, (ast.Assign, ast.AugAssign)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for t in targets:
                attr = self_attribute(t)
                if attr:
                    found += [(attr[5:], i) for i in params_in(sub.value)]
    func._promptlint_param_stores = found
    return found


#: A wrapper fetching an API's object by its id (`self._retrieve_assistant(assistant_id)`).
_API_OBJECT_FETCH = re.compile(r"^(?:a?retrieve|fetch|get)_(?:assistant|agent|thread|run|file|model|vector_store)$")


def lookup_only(node: ast.Call) -> bool:
    """A lookup by type or by id, not by a query: `self.query_one(ToolSelector)`,
    `client.beta.assistants.retrieve(assistant_id=...)` (an object fetched by its id): a method
    named for retrieval has nothing of this turn's to match there. (Time limits aside; a method
    that names what it fetches, `get_user_memories(user_id=...)`, reads what earlier turns stored.)"""
    if node.args and not node.keywords and all(
            isinstance(a, ast.Name) and a.id[:1].isupper() and not a.id.isupper() for a in node.args):
        return True
    method = getattr(node.func, "attr", "_").lstrip("_")
    if "_" in method and not _API_OBJECT_FETCH.match(method):
        return False
    keywords = [k for k in node.keywords if not (k.arg and _LIMIT_KEYWORD.match(k.arg))]
    named = [name for a in node.args if not _LIMIT_KEYWORD.match(name := getattr(a, "id", None) or getattr(a, "attr", None) or "")]
    return bool(named or keywords) and all(n == "id" or n.endswith("_id") for n in named) and all(
        k.arg is not None and (k.arg == "id" or k.arg.endswith("_id")) for k in keywords)


#: A tool object made from a function (`Function.from_callable(search)`, `StructuredTool(...)`).
_TOOL_MADE = re.compile(r"(?:^|\.)\w*(?:Tool|Function)(?:\.from_\w+)?$")


def makes_tool(func: ast.AST) -> bool:
    """Whether a function returns a function it defines (or a tool made from one) rather than
    calling it: `_search_past_sessions_function(team)` hands the model a tool; what the tool finds
    comes back as a tool result when the model calls it. Read from the syntax: a summary made
    deep in a chain of calls may not have followed the body."""
    defined = {n.name for n in getattr(func, "body", ()) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if not defined:
        return False
    returns, todo = [], list(func.body)
    while todo:  # its own returns, not those of the functions it defines
        n = todo.pop()
        if isinstance(n, ast.Return):
            returns.append(n.value)
        elif not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(stmt for block in statement_blocks(n) for stmt in block)
    return bool(returns) and all(
        isinstance(r, ast.Name) and r.id in defined
        or isinstance(r, ast.Call) and _TOOL_MADE.search(ast.unparse(r.func)) is not None and any(
            isinstance(a, ast.Name) and a.id in defined for a in r.args) for r in returns)


def keyword_values(evaluate, node: ast.Call) -> tuple[dict[str, Val], list[Val]]:
    """A call's keyword arguments' values (`**kwargs` spread by its known keys) and the spreads."""
    kwargs: dict[str, Val] = {}
    splat = []
    for kw in node.keywords:
        if kw.arg is None:
            v = evaluate(kw.value)
            splat.append(v)
            if v.keys is not None:
                kwargs.update(v.keys)
        elif MEMBERSHIP_KEYWORD.search(kw.arg):
            # `exclude_ids=`, `disabled_tools=`, `id__in=`: a set that only filters by
            # membership; its iteration order reaches nothing.
            kwargs[kw.arg] = evaluate(kw.value).keep(lambda t: t.label != "unordered")
        elif RANGE_LOOKUP.search(kw.arg):
            # `filter(updated_at__gte=cutoff)`: the clock selects rows, its text goes nowhere.
            kwargs[kw.arg] = evaluate(kw.value).keep(lambda t: not t.code.startswith("PC1"))
        else:
            kwargs[kw.arg] = evaluate(kw.value)
    return kwargs, splat
