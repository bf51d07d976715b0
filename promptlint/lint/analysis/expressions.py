"""Expressions other than calls: names, attributes, constants and templates, displays, operators."""

from __future__ import annotations

import ast
import builtins
import re

from promptlint.lint.analysis import loops
from promptlint.lint.analysis.values import (ANY_KEY, EMPTY, HISTORY, NEWEST, RUN_STATE, ClassInfo, FunctionRef, Taint, Val, frozen_ok, join,
                                             as_fallback, common_fields, holds_template, key_of, merge, narrowed, read_at, system_only)
from promptlint.lint.analysis.rendered import jinja_taints
from promptlint.lint.analysis.sinks import last_system, role_of, system_side
from promptlint.lint.diagnostic import PARAMETER, Fix, TraceStep
from promptlint.lint.lifetimes import graph_node
from promptlint.lint.run_state import state_key, state_object
from promptlint.lint.guards import default_factory, describes, expiry_check, list_name, picks_system, set_test, windowed, written_role

_BUILTINS = frozenset(dir(builtins))
_TURN_TEXT_ATTRS = {"text", "content", "message", "messages", "query", "input", "prompt", "body", "question"}
_FILE_TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2", ".yaml", ".yml", ".txt", ".md", ".prompt", ".tmpl")
def _is_last(node: ast.AST) -> bool:
    """``x[-1]``"""
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.UnaryOp) and isinstance(
        node.slice.op, ast.USub) and isinstance(node.slice.operand, ast.Constant) and node.slice.operand.value == 1


#: Lists that hold a conversation's history: what is put ahead of one leads every request.
_HISTORY_LIST = re.compile(r"(?i)(?:^|_)(?:history|conversation|chat_log|dialog(?:ue)?)s?$")
_POSITION = re.compile(r"(?:[ijkn]|idx|index|pos|position|offset|num|count|start|end|\w*_(?:idx|index|pos|num))$")


def _by_name(key_node: ast.AST, key: Val) -> bool:
    """A subscript that picks by name (`d["sales"]`, `d[config.persona]`), not by position."""
    if isinstance(key.const, str):
        return True
    name = key_node.attr if isinstance(key_node, ast.Attribute) else getattr(key_node, "id", None)
    return key.const is None and isinstance(name, str) and not _POSITION.match(name.lower())


#: Fields of a message that say who spoke, and the origins of a message's speaker and words.
_SPEAKER_FIELDS = {"role", "source", "name", "sender", "author", "speaker", "type"}
_SPEAKER, _SPOKEN = "~history:who", "~history:what"


def _message_part(name: str) -> str | None:
    """Whether a message's field says who spoke (``role``) or what was said (``content``)."""
    return _SPEAKER if name in _SPEAKER_FIELDS else _SPOKEN if name in ("content", "text") else None


def _turn_param(t: Taint) -> bool:
    """A per-turn parameter itself (``user_input``), before anything was read from it."""
    return t.code == "PC401" and len(t.steps) == 1 and PARAMETER in t.steps[0].note


class Expressions:
    """Expression evaluation of ``FunctionAnalysis``."""

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
            taints += self._file_name(node, node.value) if len(node.value) < 300 else []
            if "{{" in node.value or "{%" in node.value:
                taints += jinja_taints(node.value, node.lineno, self.m.path)
            if node.value.endswith(_FILE_TEMPLATE_SUFFIXES) and "\n" not in node.value and self.m.project is not None:
                found = self.m.project.template_text(self.m, node.value)
                taints += jinja_taints(found[1], 1, found[0]) if found is not None else []
                val.template = self.m.project.template_step(self.m, node.value)
            if "{" in node.value and val.template is None:
                val.template = self.m.step(node, "template")
                self.m.template_texts[(val.template.line, val.template.column)] = node.value
                self.m.template_ends[(val.template.line, val.template.column)] = node.end_lineno or node.lineno
            val.taints = merge(taints)
        return val

    def _file_name(self, node: ast.AST, text: str, shown: str | None = None) -> list[Taint]:
        """The name of a file the agent rewrites (``"MEMORY.md"``, ``f"{root}/memory/{name}"``):
        its content, once read, is per turn. A pattern with a `/` is matched against a whole path."""
        table = self.m.catalog.source_strings
        specs = table.match(text.rsplit("/", 1)[-1]) or ("/" in text and table.match(text)) or ()
        return [Taint(spec.code, spec.label, (self.m.step(node, f"{spec.note}: reads `{shown or text}`"),), unread=True)
                for spec in specs]

    def eval_JoinedStr(self, node: ast.JoinedStr) -> Val:
        taints, kinds = [], set()
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                val = self.eval(part.value)
                taints.append(val.taints)
                taints.append(self.conversation_rendered(part.value))
                if val.origin in (_SPEAKER, _SPOKEN):
                    kinds.add(val.origin)
                else:  # `{' '.join(m.content[0]["text"])}`: what was said, read deeper in the expression
                    kinds.update(self._history_parts(part.value))
                if part.format_spec is not None:
                    taints.append(self.eval(part.format_spec).taints)
            elif isinstance(part, ast.Constant) and isinstance(part.value, str) and part.value.strip() == part.value \
                    and not any(c.isspace() for c in part.value) and len(part.value) < 100:
                taints.append(self._file_name(node, part.value, self.m.snippet(node, 60)))  # (`f"{root}/MEMORY.md"`)
        if len(kinds) == 2:
            # `f"{m.source}: {m.content}"` over a conversation's messages: a transcript line.
            spec = self.m.catalog.source_newest_of.match("messages")
            if spec:
                step = self.m.step(node, f"{spec[0].note}: a transcript of the conversation `{self.m.snippet(node, 40)}`")
                taints.append((Taint(spec[0].code, spec[0].label, (step,)),))
        return Val(merge(*taints), node=node)

    def conversation_rendered(self, expr: ast.AST, name: str | None = None) -> tuple[Taint, ...]:
        """``f"History:\n{self.chat_history}"``, ``.format(history=h)``: a whole conversation,
        named for it, written into text. It has grown by the next turn."""
        if name is None:
            name = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", None)
        specs = self.m.catalog.source_conversations.match(name.lstrip("_")) if name else ()
        if not specs:
            return ()
        step = self.m.step(expr, f"{specs[0].note}: the conversation so far `{self.m.snippet(expr, 40)}`")
        return (Taint(specs[0].code, specs[0].label, (step,)),)

    def _history_parts(self, expr: ast.AST) -> set[str]:
        """Who and what of a history message read anywhere inside an expression."""
        kinds = set()
        for sub in ast.walk(expr):
            name = sub.attr if isinstance(sub, ast.Attribute) else (
                sub.slice.value if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) else None)
            held = getattr(sub, "value", None)
            if isinstance(name, str) and isinstance(held, ast.Name) and getattr(self.env.get(held.id), "origin", None) == HISTORY:
                kinds.add(_message_part(name))
        return kinds - {None}

    def eval_Name(self, node: ast.Name) -> Val:
        name = node.id
        if name in self.env:
            return self.env[name]
        if name in self.m.globals:
            # A global computed at import time is the same for every request a function makes.
            return self.m.globals[name] if self.ref is None else self.m.globals[name].keep(frozen_ok)
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
            step = self.m.step(node, f"{spec.note}: `{qual}`")
            # A library's template constant: its clock is read each time the host renders it,
            # however long the constant itself has lived (like a template expression).
            taints = (Taint(spec.code, spec.label, (step,), report_at=step if spec.rendered else None, per_render=spec.rendered),)
        elif self.m.project is not None and isinstance(node, ast.Name):
            # A constant of another project module (prompt templates live in prompts.py/const.py):
            # computed at its import, so only orderings and template expressions still vary.
            found = self.m.project.resolve_value(qual, self.m)
            if found is not None and (found.taints or found.template is not None or holds_template(found)):
                val = found.keep(frozen_ok)
                return Val(val.taints, origin=qual, const=found.const, items=found.items, keys=found.keys,
                           node=node, template=found.template, sink_layer=found.sink_layer)
        return Val(taints, origin=qual, node=node)

    def eval_Attribute(self, node: ast.Attribute) -> Val:
        local = self._dotted_local(node)
        if local is not None and local in self.env:
            return self.env[local]
        base = self.eval(node.value)
        field_source = self.state_field(node.value, node.attr, node, base)
        if field_source is not None:
            return field_source
        origin = f"{base.origin}.{node.attr}" if base.origin else None
        if base.keys is not None and node.attr in base.keys:  # a field this instance was built with
            return base.keys[node.attr]
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
        taints = base.taints
        if node.attr == "tzinfo":  # `datetime.now().astimezone().tzinfo`: the host's zone, no time
            taints = tuple(t for t in taints if t.code != "PC101")
        if node.attr not in _TURN_TEXT_ATTRS and any(_turn_param(t) for t in taints):
            # `user_input.language`, `.device_id`: facts of the conversation, not this turn's text.
            taints = tuple(t for t in taints if not _turn_param(t))
        if node.attr in _TURN_TEXT_ATTRS and isinstance(node.value, ast.Name) and node.value.id in self.turn_objects:
            taints = merge(taints, (self.turn_objects[node.value.id],))
        if isinstance(node.value, ast.Name) and node.value.id in self.params:  # `chat_log.content`: the caller's field there
            taints = read_at(taints, (node.attr,))
        return Val(taints, origin=origin, node=node, template=base.template)

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
            return info.attrs[attr].at(node)  # (reported where it is read, not where it was stored)
        typed = owner.attribute_class(info, attr) if instance else None  # `llm: BaseLLM` in the class body
        return Val(origin=f"@{typed}()", node=node) if typed is not None else None

    def _class_info(self, qual: str) -> tuple[ModuleAnalysis, ClassInfo] | None:
        found = self.m.resolve_function(qual)
        if isinstance(found, ClassInfo):
            return found.module or self.m, found
        return None

    def state_field(self, receiver: ast.AST, name, node: ast.AST, base: Val) -> Val | None:
        """``state.retrieved_docs`` / ``state["memories"]``: a graph node reads what an earlier
        node of this turn wrote into the run's state (retrieval, memory, the growing query list);
        ``response.usage``: a field that is per request on any object."""
        if not isinstance(name, str):
            return None
        if base.origin == RUN_STATE:
            return self._run_state_read(name, node)
        if base.origin == HISTORY and not self.role_branch:
            # A message of the conversation: who said it and what (a transcript is made of both).
            kind = _message_part(name)
            return Val(base.taints, origin=kind, node=node) if kind else None
        spec = None if describes(list_name(receiver)) else self.m.catalog.source_fields.get(name)
        what = "field"
        if spec is None and name in ("content", "text") and base.origin == NEWEST:
            specs = self.m.catalog.source_newest_of.match("messages")
            spec, what = (specs[0], "the newest message's") if specs else (None, what)
        if spec is None and name in ("content", "text") and _is_last(receiver) and not self._built_here(receiver.value):
            listed = list_name(receiver.value)
            specs = self.m.catalog.source_newest_of.match(listed) if listed else []
            spec, what = (specs[0], "the newest message's") if specs else (None, what)
        if spec is None and isinstance(receiver, ast.Name) and receiver.id == "state":
            spec = self.m.catalog.source_state_fields.get(name)
            what = "graph state field"
            if spec is None and self.graph_node and not self.m.catalog.source_newest_of.match(name) and self._converses():
                # Another node of the graph may write it on each run: kept if one does (run_state.py).
                # The field is the state's key: `state["router"]["logic"]` needs `router` written.
                # (called directly with a dict, it reads the caller's: `_build_messages(state)`)
                given = read_at(tuple(t for t in base.taints if t.param >= 0), (name,))
                return Val(merge(self._run_state_read(name, node, "graph state read on each node run").taints, given), node=node)
        if spec is None:  # (`self.shared_state.app_card`: kept if the tree writes it while it runs, run_state.py)
            return self._run_state_read(f"{receiver.attr}.{name}", node, "state object read on each call", self.m.snippet(node)) if (
                state_object(receiver) and not self.frozen) else None
        step = self.m.step(node, f"{spec.note}: {what} `{name}`")
        return Val(merge((Taint(spec.code, spec.label, (step,)),), base.taints), origin=f"state.{name}", node=node)

    @property
    def graph_node(self) -> bool:
        return self.ref is not None and graph_node(self.ref.node)

    def _converses(self) -> bool:
        """The node reads the conversation from its state (`state["messages"]`): what it puts ahead
        of it is in the prefix of each request. A one-shot call built from state (a report writer,
        a grader) has no conversation whose prefix it could break (cached on the node)."""
        found = getattr(self.ref.node, "_promptlint_converses", None)
        if found is None:
            newest = self.m.catalog.source_newest_of
            found = self.ref.node._promptlint_converses = any(
                isinstance(n, (ast.Subscript, ast.Attribute, ast.Call)) and bool(newest.match(state_key(n) or ""))
                for n in ast.walk(self.ref.node))
        return found

    def _built_here(self, node: ast.AST) -> bool:
        """A list this function starts empty and fills (`merged = []`): its last
        element is the one added last here, not the conversation's newest message."""
        return isinstance(node, ast.Name) and self.ref is not None and node.id in loops.bindings(self.ref.node).empty_lists

    def element_of(self, iterable: ast.AST, listed_val: Val) -> Val:
        """An element of a list (its order's taints stay with the list): the fields its elements
        share; of a parameter's list, one of the caller's (`for e in events: e.get("persona")` reads
        that field of theirs). Of a list named for a conversation's history (`for m in messages`),
        a message of it. A list a loop grows has more elements on each pass; each is what it was."""
        taints = self.this_pass(listed_val.keep(lambda t: t.label != "unordered")).taints
        if listed_val.items is None and listed_val.keys is None:
            listed = list_name(windowed(iterable))
            if listed and self.m.catalog.source_newest_of.match(listed):
                return Val(taints, origin=HISTORY, node=listed_val.node)
            if listed_val.origin is None:
                taints = read_at(taints, (ANY_KEY,))
            return Val(taints, node=listed_val.node)
        return Val(taints, node=listed_val.node, keys=common_fields(listed_val.items))

    def this_pass(self, val: Val) -> Val:
        """``val`` without what the enclosing loops grow on each pass (loops.py)."""
        return val.keep(lambda t: not loops.mine(self.passes, t)) if self.passes else val

    def _run_state_read(self, name: str, node: ast.AST, how: str = "run state read on each model call",
                        shown: str | None = None) -> Val:
        """A field of the run context an instructions function was handed (or of a framework's session state): a
        leak when the conversation writes it (run_state.py). Not the conversation itself; `search_history` is."""
        field, catalog = name.rsplit(".", 1)[-1], self.m.catalog
        if catalog.source_newest_of.match(field) and (field.endswith("messages") or catalog.source_conversations.match(field)):
            return Val(origin=RUN_STATE, node=node)
        step = self.m.step(node, f"{how}: `{shown or name}`")
        return Val((Taint("PC401", "volatile", (step,), needs=name),), origin=RUN_STATE, node=node)

    def eval_Subscript(self, node: ast.Subscript) -> Val:
        base = self.eval(node.value)
        key = self.eval(node.slice)
        field_source = self.state_field(node.value, key.const, node, base)
        if field_source is not None:
            return field_source
        item, rest = narrowed(base, (key_of(node.slice, key),))  # a known item or field: `msgs[0]`, `msg["content"]`
        if not rest:
            return item
        taints = base.taints
        if isinstance(node.slice, ast.Slice):
            items = base.items
            step = node.slice.step
            if (items is not None and step is not None and ast.unparse(step) == "-1"
                    and node.slice.lower is None and node.slice.upper is None):
                items = items[::-1]  # `messages[::-1]`: a system message appended last now leads
            return Val(taints, items=items, node=node, template=base.template)
        last = (base.origin or "").rsplit(".", 1)[-1]
        if last[:1].isupper() and not last.isupper() and "()" not in base.origin and not base.taints:
            return Val(origin=base.origin, node=node)  # `Agent[Deps](...)`: a generic class is the class
        if self.passes:  # `merged[-1]`: one element of a list a loop grows is what it was
            taints = tuple(t for t in taints if not loops.mine(self.passes, t))
        if any(t.appended for t in taints):  # `self.messages[0].content`: the head, not what was appended later
            taints = tuple(t._replace(appended=False) for t in taints if key.const != 0 or not t.appended)
        if _by_name(node.slice, key) and any(t.label == "unordered" for t in taints):
            # `personas[config.persona]`: one value picked by its name; the mapping's order is not in it.
            taints = tuple(t for t in taints if t.label != "unordered")
        if isinstance(key.const, (int, str)) and not isinstance(key.const, bool):
            # `prompt[0]` of a parameter: the caller's first item, when the caller's list is known.
            taints = read_at(taints, (key.const,))
        if key_of(node.slice, key) is None and base.keys and ANY_KEY in base.keys:
            held = base.keys[ANY_KEY]  # `self.sessions[session_id]`: what was stored under such a key
            return held.at(node).with_taints(merge(held.taints, taints))
        # The key selects, it does not become the value: `cache[id(obj)]` is not an id.
        return Val(taints, node=node,
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
            if isinstance(node.left, ast.List) and _HISTORY_LIST.search(list_name(node.right) or ""):
                self._leading(left.items, node.left.elts)
        # `"..." % x` keeps the template; `PROMPTS_DIR / "agent.yaml"` and `+` keep a file's.
        template = left.template if isinstance(node.op, ast.Mod) else (
            (left.template or right.template) if isinstance(node.op, (ast.Div, ast.Add)) else None)
        if isinstance(node.op, ast.BitOr) and left.template is not None:
            # `prompt | llm | parser`: the chain's `.invoke({...})` fills the prompt it starts with.
            return Val(merge(left.taints, right.taints), node=node, template=left.template, sink_layer=left.sink_layer)
        if isinstance(node.op, ast.Add) and template is not None and (key := (template.line, template.column)) in self.m.template_ends:
            # `"""...{a}""" + today + """...{b}"""`: one template, its text spread over all the pieces
            self.m.template_ends[key] = max(self.m.template_ends[key], node.end_lineno or node.lineno)
        return Val(merge(left.taints, right.taints), items=items, node=node, template=template)

    def _leading(self, items: list[Val], elts: list[ast.expr]) -> None:
        """``[{"role": "user", "content": f"You edit {name}:\n{contents}"}] + self.conversation``: a
        message put ahead of the conversation's history is in the prefix of every request, whatever
        its role (a system one is checked as such where it is built)."""
        for item, elt in zip(items, elts):
            if item.keys is not None and role_of(item.keys.get("role")) in ("user", "assistant") and "content" in item.keys:
                self.sink_value(item.keys["content"], elt, "value", "leading message (ahead of the conversation's history)")

    def eval_BoolOp(self, node: ast.BoolOp) -> Val:
        vals = [self.eval(v) for v in node.values]
        if isinstance(node.op, ast.Or) and (param := self.param_index(node.values[0])) >= 0:
            vals[1:] = [as_fallback(v, param) for v in vals[1:]]  # `now or datetime.now()`
        out = vals[0]
        for v in vals[1:]:
            out = join(out, v)
        return Val(out.taints, origin=out.origin, items=out.items, keys=out.keys, func=out.func, node=node)

    def eval_IfExp(self, node: ast.IfExp) -> Val:
        clock = self.chosen_by(self.eval(node.test), node.test, False)
        body, orelse = self.eval(node.body), self.eval(node.orelse)
        param, unset = self.param_test(node.test)
        if param >= 0 and self.param_index(node.orelse if unset else node.body) == param:
            # `now if now else datetime.now()`, `datetime.now() if now is None else now`
            body, orelse = (as_fallback(body, param), orelse) if unset else (body, as_fallback(orelse, param))
        out = join(body, orelse)
        return out.with_taints(merge(out.taints, clock)) if clock else out

    def param_index(self, node: ast.AST) -> int:
        """The position of the parameter ``node`` names, or -1."""
        return self.params.index(node.id) if isinstance(node, ast.Name) and node.id in self.params and self.ref is not None else -1

    def param_test(self, test: ast.AST) -> tuple[int, bool]:
        """(parameter, tests that it is unset) of ``p``, ``p is not None``, ``not p``, ``p is None``."""
        tested, unset = set_test(test)
        return self.param_index(tested), unset

    def eval_Compare(self, node: ast.Compare) -> Val:
        vals = [self.eval(node.left), *(self.eval(c) for c in node.comparators)]
        taints = merge(*(tuple(t for t in v.taints if t.label == "volatile") for v in vals))
        if expiry_check([node.left, *node.comparators], vals):
            taints = tuple(t for t in taints if not t.code.startswith("PC1"))
        return Val(taints, node=node)

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
        # What it reads from the enclosing scope goes wherever it is called: `re.sub(p, lambda m:
        # variables[m[1]], template)` renders `variables`.
        params = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        captured = {n.id for n in ast.walk(node.body) if isinstance(n, ast.Name) and n.id not in params}
        taints = merge(*(self.env[name].taints for name in sorted(captured) if name in self.env))
        return Val(taints, origin=ref.qualname, func=ref, node=node)

    def eval_List(self, node) -> Val:
        # A system message after the history or another role's message sits late in the request
        # (volatile by position), as one appended there does, or one that only this turn's follows.
        items, late, trailing = [], 0, last_system([written_role(e) for e in node.elts])
        for i, e in enumerate(node.elts):
            self.defer_shapes += (deferred := late or int(i == trailing))
            try:
                items.append(self.eval(e))
            finally:
                self.defer_shapes -= deferred
            keys = items[-1].keys
            late = late or int(isinstance(e, ast.Starred) or (keys is not None and "role" in keys and
                                                               role_of(keys.get("role")) not in ("system", "developer")))
        history = next((i for i, e in enumerate(node.elts) if isinstance(e, ast.Starred)
                        and _HISTORY_LIST.search(list_name(e.value) or "")), 0)
        if history and isinstance(node, ast.List):  # `[first, *self.conversation, turn]`
            self._leading(items[:history], node.elts[:history])
        for elt, item in zip(node.elts, items):  # ("system", text) pairs: LangChain's message tuples, anywhere
            if item.items is not None and len(item.items) == 2 and role_of(item.items[0]) in ("system", "developer"):
                text = item.items[1]
                at = elt.elts[1] if isinstance(elt, (ast.Tuple, ast.List)) and len(elt.elts) == 2 else text.node or node
                self.sink_value(text, at, "value", "system message (recognised by its shape)")
                self.stable_template = (self._template_step(text, node), "system message (recognised by its shape)")
        return Val(merge(*(v.taints for v in items)), items=items, node=node)

    eval_Tuple = eval_List

    def eval_Set(self, node: ast.Set) -> Val:
        items = [self.eval(e) for e in node.elts]
        strings = all(isinstance(v.const, str) for v in items)
        source = self._set_source(node, "set display", sortable=strings) if len(items) > 1 else ()
        return Val(merge(*(v.taints for v in items), source), node=node)

    def _set_source(self, node: ast.AST, what: str, sortable: bool) -> tuple[Taint, ...]:
        """A set built by syntax, a source when ``set()`` is one (the opt-in ordering rules)."""
        spec = self.m.catalog.set_order
        if spec is None:
            return ()
        step = self.m.step(node, f"{spec.note}: {what} `{self.m.snippet(node, 40)}`")
        return (Taint(spec.code, "unordered", (step,), fix=None if not sortable else Fix("wrap-sorted", 0, 0, 0, 0, True, "sortable")),)

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
            if isinstance(key := key_of(k, kv), str):
                keys[key] = val
        val = Val(merge(*taints), keys=keys, node=node)
        if self.ref is not None and id(node) in loops.bindings(self.ref.node).run_heads:
            val = val.keep_deep(frozen_ok)  # made once, before the conversation's first turn
            keys = val.keys
        if not self.defer_shapes:
            self.check_message_shape(keys, node)
        self.check_payload_shape(keys, node)
        self.check_tool_shape(keys, node)
        return val

    def _comprehension(self, node, elements: list[ast.AST], unordered_result: bool) -> Val:
        saved = dict(self.env)
        carried = []
        for gen in node.generators:
            it = self.eval(gen.iter)
            unordered = tuple(self._consumed(t, gen.iter) for t in it.taints if t.label == "unordered")
            if unordered_result:
                carried.append(unordered)
            if self.passes:  # `[render(c) for c in calls]` over a list the loop grows grows too
                carried.append(tuple(t for t in it.taints if loops.mine(self.passes, t)))
            element = self.element_of(gen.iter, it)
            if isinstance(gen.target, ast.Name) and any(picks_system(cond, gen.target.id) for cond in gen.ifs):
                # `[m for m in messages if m["role"] == "system"]`: the system messages only
                side = system_side(it.items)
                element = (self.this_pass(side.with_taints(system_only(side.taints))) if side is not None
                           else self.element_of(gen.iter, Val(system_only(it.taints))))
            self.assign(gen.target, element, gen)
            for cond in gen.ifs:  # (`[t for t in TOOLS if t["area"] in intents]`: let in by the user's words)
                carried.append(tuple(t for t in self.chosen_by(self.eval(cond), cond, False) if not t.code.startswith("PC1")))
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
        return Val(merge(val.taints, self._set_source(node, "set comprehension", sortable=False)), node=node)

    def eval_field_default(self, node: ast.AST) -> Val:
        """A class-body default: ``field(default_factory=f)`` / ``Field(default_factory=f)`` calls ``f``."""
        factory = default_factory(node)
        return self.eval(node) if factory is None else self.call_reference(factory, node)

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
