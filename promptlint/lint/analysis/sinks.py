"""Sinks: where a value enters a stable layer, how each argument kind is read, and reports."""

from __future__ import annotations

import ast
import re

from promptlint.lint.analysis import loops
from promptlint.lint.analysis.values import (LOCATED, MATCHED, FunctionRef, ParamSink, Taint, Val, _const_str, clip, common_fields, frozen_ok, join,
                                             merge, param_names)
from promptlint.lint.catalog import ArgSpec, Condition, SinkSpec
from promptlint.lint.diagnostic import TraceStep
from promptlint.lint.guards import callee_name, descendants, list_name, written_role
from promptlint.lint.literal_search import LAYER_WRITER_NAME

#: ADK's instruction placeholders: `{key}`, `{key?}` (optional); not `{artifact.x}` or `{{`.
_STATE_PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_]\w*)\??\}(?!\})")


_LAYER_WRITER = re.compile(r"_*" + LAYER_WRITER_NAME)


def system_text(args: list[Val], kwargs: dict[str, Val]) -> tuple[str | None, Val | None]:
    """A system message object's text: its `content`/`text`/`template` keyword (and which one),
    else its first argument."""
    key = next((k for k in ("content", "text", "template") if k in kwargs), None)
    return key, kwargs[key] if key else (args[0] if args else None)


#: Methods that send a request: a volatile value built in the same scope goes out with it, even
#: at import time (a script's one request); other stable layers built then are reused.
REQUEST_METHODS = {"create", "stream", "parse", "generate_content", "generate_content_stream", "completion",
                   "acompletion", "invoke", "ainvoke", "send_message", "count_tokens", "chat", "achat"}


def last_breakpoint(val: Val) -> int | None:
    """The position of the last block marked ``cache_control`` in a list of content blocks
    (``system=[{..., "cache_control": ...}, {"text": now}]``), whatever receives the list: the
    cached prefix ends there (reference/providers.md), so what follows may change per request."""
    if val.items is None:
        return None
    marked = [i for i, b in enumerate(val.items) if b.keys is not None and "cache_control" in b.keys]
    return marked[-1] if marked else None


class Sinks:
    """Sink checks of ``FunctionAnalysis``."""

    # ------------------------------------------------------------------ sinks
    def check_sinks(self, node: ast.Call, origin: str, args: list[Val], kwargs: dict[str, Val]) -> None:
        catalog = self.m.catalog
        specs = catalog.sink_calls.match(origin) if not origin.startswith("?") else []
        if not specs and "." in origin:
            tail = origin.lstrip("?.")
            specs = [s for shape, s in catalog.sink_shapes
                     if (tail == shape or tail.endswith("." + shape)) and self.m.imports_library(s.imports)
                     and (origin.startswith("?") or "()" in origin or origin.startswith("@"))]
        if specs and self.one_shot(node):
            specs = []  # (`llm.invoke([SystemMessage(task)])`: the request's only message)
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
                self.m.emit_check(check.code, at, check.detail or origin, check.layer)
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
            last = last_breakpoint(val)
            for block in val.items[: None if last is None else last + 1]:  # (each block where it is written)
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
            if val.items is None or len(val.items) == 1:
                return  # (the request's only message: a one-shot task prompt, see check_message_shape)
            # Only the leading run of system/developer messages is the stable prefix; a system
            # message appended later sits after the history and is volatile by position.
            roles = [_const_str(msg.keys.get("role")) if msg.keys is not None else None for msg in val.items]
            for msg, role in zip(val.items[:last_system(roles)], roles):
                if role not in ("system", "developer") or self.one_shot(msg.node):  # (a run's own: check_message_shape)
                    break
                content = msg.keys.get("content")
                if content is not None:
                    self._report_val(content, content.node or node, layer, "value")
        elif kind == "template":  # `SystemMessagePromptTemplate.from_template(text)`: filled later too
            self._report_val(val, node, layer, "value")
            self.stable_template = (self._template_step(val, node), layer)
        elif kind == "role-tuples":
            if val.items is None:
                return
            for item in val.items:
                if _history_slot(item):
                    break  # what follows the conversation's messages is not part of the stable prefix
                if item.items is not None and len(item.items) == 2 and _const_str(item.items[0]) == "system":
                    self._report_val(item.items[1], item.items[1].node or node, layer, "value")
                    # Filled later by `.invoke({...})`: a template read from config is still one.
                    self.stable_template = (self._template_step(item.items[1], node), layer)
                elif item.sink_layer is not None and item.template is not None:  # a system message template
                    self.stable_template = (item.template, item.sink_layer)
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
        elif kind == "state-template" and val.func is None:
            self._report_state_template(val, node, layer)
        elif kind in ("callable", "state-template"):
            if isinstance(ref := val.func or self.m.callable_named(val.origin), FunctionRef):  # (`plugin(imported_function)`)
                summary = ref.module.summary(ref)
                if ref.module is not self.m:
                    self.m.deps.add(ref.module.path)
                name = ref.qualname.rsplit(".", 1)[-1]
                step = self.m.step(node, f"{name}() is evaluated per request")
                state = ref.module.run_state_return(ref).taints
                ret = summary.ret.with_taints(tuple(t.then(step) for t in merge(summary.ret.taints, state) if t.param < 0))
                self.per_call += 1  # called on each request: not frozen with an agent built at import time
                try:
                    self._report_val(ret, node, layer, "value")
                finally:
                    self.per_call -= 1
            else:
                self._report_val(val, node, layer, "value")

    def _template_step(self, val: Val, node: ast.AST) -> TraceStep:
        """Where a stable template's text is: its placeholders decide what a later fill reaches.
        Constant text with no placeholder is known too (nothing filled later reaches it); a
        template read from config is still one, of unknown text."""
        if val.template is not None:
            return val.template
        step = self.m.step(val.node or node, "template")
        if isinstance(val.const, str):
            self.m.template_texts.setdefault((step.line, step.column), val.const)
        return step

    def _report_state_template(self, val: Val, node: ast.AST, layer: str) -> None:
        """``instruction="Now: {_time}"``: each placeholder is a session-state field the framework
        fills on every model call, a leak when the conversation writes it (run_state.py)."""
        self._report_val(val, node, layer, "value")
        text = _const_str(val)
        for name in dict.fromkeys(_STATE_PLACEHOLDER.findall(text or "")):
            read = self._run_state_read(name, node, "session state filled into the placeholder on each model call",
                                        f"{{{name}}}")
            self.per_call += 1  # filled per call: not frozen with an agent built at import time
            try:
                self._report_val(read, node, layer, "value")
            finally:
                self.per_call -= 1

    def _report_val(self, val: Val, node: ast.AST, layer: str, kind: str) -> None:
        last = last_breakpoint(val)
        if last is not None:  # the blocks after the last breakpoint are not cached: volatile by design
            for block in val.items[: last + 1]:
                self._report_val(block, block.node or node, layer, kind)
            return
        for t in val.taints:
            self._report(t, node, layer, kind)

    def _report(self, taint: Taint, node: ast.AST, layer: str, kind: str) -> None:
        """One taint reaches a sink: a diagnostic, or (a parameter) a sink of this function's summary."""
        if (kind == "cache-key" and taint.label != "volatile") or self.counting:
            return  # (a prompt built only to count its tokens is never sent)
        sink_step = None
        if self.sink_via is not None:  # the sink is inside a called function
            middle, sink_step, dumped, label = self.sink_via
            if taint.label != label:
                return
            if dumped and taint.label == "unordered":
                taint = taint._replace(dumped=True) if taint.param >= 0 else taint._replace(code="PC502")
            taint = taint._replace(steps=clip(taint.steps + middle))
        if taint.param >= 0:
            # A sink inside a role dispatch (`if role == "system": SystemMessage(content)`) is
            # reached only for that role; generic converters would otherwise make every
            # caller's user message a "system prompt". Concrete taints there are still reported.
            # A converter that gathers the system messages into a list of their own (put ahead of the
            # others) takes the caller's system messages only: those it added to its log.
            picked = bool(self.role_branch or taint.role_only)
            if self.ref is not None and (not picked or self.system_list):
                steps = taint.steps + (sink_step or self.m.step(node, f"reaches {layer}"),)
                self.param_sinks.append(ParamSink(taint.param, taint.label, taint.dumped, steps, layer, kind,
                                                  only=taint.code if taint.code in (LOCATED, MATCHED) else "", index=taint.index, system_only=picked))
            return
        if taint.reply and not loops.given(self.passes, taint) and not (
                self.cls is not None and self.cls.next_turn and loops.origin(taint) in self.cls.next_turn.replies):
            return  # the model's reply outside the loop that received it (calls.py `_reply`)
        if self.passes and loops.mine(self.passes, taint) and not (self.calling or self.sink_via or loops.sends(self.passes, taint)):
            return  # a loop that sends nothing (a message merger): what it grows is not sent per pass
        if self.passes and loops.before_conversation(self.passes, taint, self.m.path, self.ref and self.ref.node):
            return  # computed once before the loop that holds the conversation: frozen per session
        if (self.frozen or self.first_pass) and not self.sending and not self.per_call and not frozen_ok(taint):
            return  # a layer built once (import time, __init__, a first turn) and reused unchanged: not a leak
        self.m.emit(taint, node, layer, "PC604" if kind == "cache-key" else None, sink_step, sent=self.sending > 0)

    def _count_breakpoints(self, node: ast.Call, kwargs: dict[str, Val]) -> None:
        # Breakpoints are counted by the syntax that writes them: a block a loop appends on each of
        # its passes is one site, not one per pass the analysis made.
        sites: set = set()

        def walk(v: Val | None, depth: int = 0) -> None:
            if v is None or depth > 6:
                return
            if v.keys is not None and "cache_control" in v.keys:
                sites.add(id(v.node) if v.node is not None else id(v))
            for child in (v.items or []):
                walk(child, depth + 1)
            for k, child in (v.keys or {}).items():
                if k != "cache_control":
                    walk(child, depth + 1)

        for key in ("system", "tools", "messages"):
            walk(kwargs.get(key))
        count = len(sites) + ("cache_control" in kwargs)
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
            # (a method of the object, not the field of that name it was built with: `Agent(instructions=...)`)
            base = self.eval(target.value).origin if isinstance(target, ast.Attribute) else None
            origin = f"{base}.{target.attr}" if base else self.eval(target).origin
            if not origin:
                continue
            specs = catalog.decorator_calls.match(origin)
            if not specs:
                tail = origin.rsplit(".", 1)[-1]
                specs = [d for shape, d in catalog.decorator_shapes if shape == tail and "." in origin and self.m.imports_library(d.imports)]
            if isinstance(dec, ast.Call) and any(spec.when for spec in specs):
                kwargs = {k.arg: self.eval(k.value) for k in dec.keywords if k.arg}
                specs = [s for s in specs if all(self._condition(c, kwargs) for c in s.when)]
            else:
                specs = [s for s in specs if not s.when]
            for spec in specs:
                state = () if self.run_state else self.m.run_state_return(self.ref).taints
                for ret_node in self.return_nodes:
                    self._report_val(self.ret_for(ret_node), ret_node, spec.layer, "value")
                for taint in state:  # what it reads from the run's context the framework hands it
                    self._report(taint, self._return_after(taint), spec.layer, "value")
                return

    def _return_after(self, taint) -> ast.AST:
        """The first return at or after the last line of this file ``taint`` passed through: the
        return that carries it out (not the last one, in another branch)."""
        lines = [s.line for s in taint.steps if s.path == self.m.path]
        after = [r for r in self.return_nodes if lines and r.lineno >= max(lines)]
        return min(after, key=lambda r: r.lineno) if after else self.return_nodes[-1]

    def ret_for(self, ret_node: ast.AST) -> Val:
        """The taints of one return expression (re-evaluated in the final environment; else what it
        returned where it stands, in a branch that leaves with it)."""
        val = self.eval(ret_node)
        return join(val, self.returned[id(ret_node)]) if id(ret_node) in self.returned else val

    # ------------------------------------------------- shapes and names (no SDK needed)
    def check_layer_writer(self, node: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> bool:
        """`llm_request.append_instructions([text])`, `agent.set_system_prompt(text)`: a method
        named for writing a stable layer takes that layer's text. True when ``node`` is one."""
        if not (isinstance(node.func, ast.Attribute) and _LAYER_WRITER.fullmatch(node.func.attr) and (args or kwargs)):
            return False
        where = f"system prompt (recognised by the name `{node.func.attr}()`)"
        for val, at in [*zip(args, node.args), *((v, entry_node(node, k, v)) for k, v in kwargs.items())]:
            self.sink_value(val, at, "value", where)
        return True

    def check_stable_name(self, node) -> None:
        """A function named for a stable layer (``build_system_prompt``): its returns are sinks."""
        if self.frozen or not self.return_nodes:
            return
        layer = self.named_layer(node.name, "")
        if layer is not None:
            layer = f"{layer} (recognised by the name `{node.name}()`)"
        elif self.cls is not None and self.cls.bases and (hook := self.m.catalog.hook_layer(self.cls.bases, node.name)):
            layer = f"{hook} (`{self.cls.name}.{node.name}()`, called by the framework on every run)"
            if not self.run_state:
                for taint in self.m.run_state_return(self.ref, hook=True).taints:
                    self._report(taint, self._return_after(taint), layer, "value")
        if layer is None:
            return
        for ret_node in self.return_nodes:
            self._report_val(self.ret_for(ret_node), ret_node, layer, "value")

    def named_layer(self, name: str, context: str) -> str | None:
        """The layer a name says it is. A bare ``instructions`` says so only about an agent or an
        assistant (``Agent(instructions=...)``, ``WeatherAIAssistant.get_instructions``): a file
        change request, a tool's usage notes and a recipe have instructions too."""
        layer = self.m.catalog.stable_layer_of(name)
        if layer is not None and _SHOWN_IN.fullmatch(context.rsplit(".", 1)[-1]):
            return None
        if layer is not None and _AMBIGUOUS_NAME.fullmatch(name):
            owner = f"{self.cls.name} {' '.join(self.cls.bases)}" if self.cls is not None else ""
            here = f"{context} {owner} {self.ref.qualname if self.ref else ''}".lower()
            return layer if "agent" in here or "assistant" in here else None
        return layer

    def keeps_keyword(self, ref, name: str) -> bool:
        """Whether a keyword named for a layer (``system_prompt=``) may be one at a call of ``ref``:
        a project function it names whose body takes that parameter to no stable layer (an image
        generator's "system prompt") says it is not. An unknown callee may send it anywhere."""
        if ref is None or ref.node is None or ref.module is None:
            return True
        names = param_names(ref.node)
        if name not in names or ref.node.args.kwarg is not None:
            return True
        return any(ps.param == names.index(name) for ps in ref.module.summary(ref).param_sinks)

    def check_stable_target(self, name: str, shown: str, val: Val, node: ast.AST, context: str = "") -> None:
        """A per-request write to an attribute or name that says it is a stable layer."""
        layer = self.named_layer(name, context)
        if layer is not None:
            self._report_val(val, node, f"{layer} (recognised by the name `{shown}`)", "value")

    def one_shot(self, node: ast.AST | None) -> bool:
        """Whether a message shares no prefix with a later request (``loops._lone_messages``): the
        request's only message (a one-shot task prompt), a run's own, or a fresh request's tail."""
        return self.ref is not None and id(node) in loops.bindings(self.ref.node).lone_messages

    def check_message_shape(self, keys: dict, node: ast.AST) -> None:
        """A system/developer-role message in any spelling is a stable layer wherever it is built."""
        role = role_of(keys.get("role"))
        if role not in ("system", "developer"):
            return
        if self.one_shot(node):
            return
        if self.ref is not None and id(node) in loops.bindings(self.ref.node).appended_later:
            return  # judged where it is appended: after a history, or leading an empty list
        for key in ("content", "parts", "text"):
            content = keys.get(key)
            if content is not None:
                self.sink_value(content, entry_node(node, key, content), "value", f"{role} message (recognised by its shape)")
                return

    def check_tool_shape(self, keys: dict, node: ast.AST) -> None:
        """A tool definition (``{"name", "description", "parameters"|"input_schema"}``) is a stable layer."""
        if "name" in keys and "description" in keys and any(k in keys for k in _SCHEMA_KEYS):
            desc = keys["description"]
            self.sink_value(desc, entry_node(node, "description", desc), "value", "tool definition (recognised by its shape)")

    def check_payload_shape(self, keys: dict, node: ast.AST) -> None:
        """A request payload (``{"model": ..., "system": ...}``, or the same as keywords of any call)."""
        if "model" not in keys:
            return  # an LLM request names its model; a stored run record or a config does not
        for key, (companions, layer, kind) in _PAYLOAD_SINKS.items():
            sub = keys.get(key)
            if sub is None or not any(c in keys for c in companions):
                continue
            self.sink_value(sub, entry_node(node, key, sub), kind, layer if kind == "cache-key" else f"{layer} (recognised by the request shape)")
        messages = keys.get("messages") or keys.get("input")
        if messages is not None and messages.items is not None:
            self.sink_value(messages, messages.node or node, "chat-messages", "system message (recognised by the request shape)")


def entry_node(node: ast.AST, key: str, val: Val) -> ast.AST:
    """Where an entry of a dict display or a keyword of a call is written (the sink's place),
    rather than where its value was computed."""
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and k.value == key:
                return v
    elif isinstance(node, ast.Call):
        for kw in node.keywords:
            if kw.arg == key:
                return kw.value
    return val.node or node


def is_system_message(message: Val) -> bool:
    """Whether a value is a message built with the system/developer role."""
    return message.keys is not None and role_of(message.keys.get("role")) in ("system", "developer")


def system_list(func: ast.AST, name: str | None) -> bool:
    """Whether every append to ``name`` in ``func`` adds a system message display: a list of the
    system messages alone (``system_messages.append({"role": "system", ...})``), not an ordered copy
    of a conversation that takes every role."""
    if not name:
        return False
    adds = [n for n in descendants(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "append" and list_name(n.func.value) == name]
    return bool(adds) and all(len(n.args) == 1 and written_role(n.args[0]) in ("system", "developer") for n in adds)


def other_role(keys: dict | None) -> bool:
    """Whether a message's fields name a role other than system/developer (``{"role": "tool"}``):
    it is that message, not a system message."""
    return keys is not None and role_of(keys.get("role")) not in (None, "system", "developer")


def before_history(args: list[Val], items: list[Val] | None) -> bool:
    """``msgs.insert(1, notice)``: a constant place ahead of what the list holds (right after the
    system prompt) is in the prefix of every later request; the end of a known list is not."""
    where = args[0].const if len(args) == 2 else None
    return isinstance(where, int) and not isinstance(where, bool) and where >= 0 and (
        items is None or where < len(items) or where == 0)


def _history_slot(item: Val) -> bool:
    """``MessagesPlaceholder("history")`` or ``("placeholder", "{messages}")`` in a template's list."""
    if item.items is not None and len(item.items) == 2 and _const_str(item.items[0]) == "placeholder":
        return True
    return bool(item.origin) and item.origin.rstrip("()").endswith("MessagesPlaceholder")


def system_side(items: list[Val] | None) -> Val | None:
    """The elements of a message list a test for the system role can pick: those whose role is
    system or developer, or not known (history). None when no element says another role."""
    if items is None:
        return None
    kept = [i for i in items if i.keys is None or role_of(i.keys.get("role")) in (None, "system", "developer")]
    if len(kept) == len(items):
        return None
    return Val(merge(*(i.taints for i in kept)), keys=common_fields(kept))


def last_system(roles: list[str | None]) -> int | None:
    """``[{"role": "system", ...fixed}, {"role": "system", ...memories}, {"role": "user", ...}]``:
    the place of a system message after the leading one that only this turn's user messages follow
    (given the messages' roles). Nothing stable comes after it, so what it holds changes no cached
    prefix (FIELD.md)."""
    last = max((i for i, r in enumerate(roles) if r != "user"), default=None)
    return last if last and roles[0] == roles[last] == "system" and last < len(roles) - 1 else None


def role_of(val: Val | None) -> str | None:
    """``"system"``, ``Role.SYSTEM``, ``MessageRole.DEVELOPER.value``: the role a message says it has."""
    if val is None:
        return None
    if isinstance(val.const, str):
        return val.const.lower()
    node = val.node
    if isinstance(node, ast.Attribute) and node.attr in ("value", "name") and isinstance(node.value, ast.Attribute):
        node = node.value  # `MessageRole.SYSTEM.value`: the enum member's value
    if isinstance(node, ast.Attribute) and node.attr.lower() in ("system", "developer"):
        return node.attr.lower()
    if isinstance(node, ast.Name) and node.id in ("SYSTEM", "DEVELOPER"):  # `from schema import SYSTEM`
        return node.id.lower()
    return None


_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema", "parametersJsonSchema", "args_schema")
#: Names that say "stable layer" only about an agent (``named_layer``).
_AMBIGUOUS_NAME = re.compile(r"_*(?:(?:get|format|build)_)?instructions")
#: Classes a name sink's value is handed to for showing, not sending: an API's response model
#: (`SessionSystemPromptResponse(system_prompt=...)`), a context-window overview, a preview.
_SHOWN_IN = re.compile(r"\w*(?:Response|Overview|Preview|Report)")
#: Payload keys that are stable layers when the dict (or the call's keywords) also has one of
#: the companion keys of an LLM request: key -> (companions, layer, how the value is read).
_PAYLOAD_SINKS = {
    "system": (("messages", "max_tokens", "prompt"), "system prompt", "anthropic-system"),  # (`prompt`: Ollama's generate)
    "instructions": (("input", "tools"), "instructions", "value"),
    "system_prompt": (("messages", "tools"), "system prompt", "value"),
    "system_instruction": (("contents", "generation_config", "tools"), "system instruction", "value"),
    "systemInstruction": (("contents", "generationConfig", "tools"), "system instruction", "value"),
    "preamble": (("message", "chat_history"), "preamble", "value"),
    "tools": (("messages", "input", "contents", "system", "instructions", "max_tokens"), "tool list", "value"),
    "functions": (("messages",), "tool list", "value"),
    "prompt_cache_key": (("messages", "input"), "prompt_cache_key", "cache-key"),
}


_PAYLOAD_BODIES = frozenset({"messages", "input", "contents", "prompt"})  # beside `model`: an LLM request's body
#: An unknown callable named for asking a model (`self.llm_generate_fn(messages)`, `ask_llm`).
_ASKS_MODEL = re.compile(r"(?i)llm|generat|complet|chat|respon")


def asks_model(name: str, args: list) -> bool:
    """An unknown callable named for asking a model and handed a conversation (a list of role
    messages): what comes back is the model's answer, not the messages. A runnable's ``invoke``
    handed one (`llm.invoke([SystemMessage(...), ...])`) is a chat model's: a template's, a
    chain's or a graph's takes a dict of inputs."""
    if name in ("invoke", "ainvoke"):
        return _holds_messages(args, by_class=True)
    return bool(_ASKS_MODEL.search(name)) and "template" not in name and _holds_messages(args)


#: Keywords that hand a request its conversation or prompt: what comes back is the model's reply.
_ASKED_WITH = frozenset({"messages", "contents", "input", "prompt", "system", "instructions"})


def asked_with_conversation(kwargs: dict, vals: list) -> bool:
    """A request call handed a conversation or a prompt (``messages=``, a list of role messages)."""
    return bool(_ASKED_WITH.intersection(kwargs)) or _holds_messages(vals, by_class=True)


def _holds_messages(vals: list, by_class: bool = False) -> bool:
    """Whether one of ``vals`` is a list of role messages (dicts with a role; with ``by_class``,
    ``*Message`` objects too)."""
    return any(a.items and any(i.keys is not None and "role" in i.keys or by_class and "Message" in (i.origin or "")
                               for i in a.items) for a in vals)


def posts_request(node: ast.Call, env: dict) -> bool:
    """A call that posts an LLM request payload (`httpx.post(url, json=payload)`,
    `data=json.dumps(payload)`, with `model` and `messages`/`input`/`contents` keys)."""
    for kw in node.keywords:
        value = kw.value
        if kw.arg not in ("json", "data", "content"):
            continue
        if isinstance(value, ast.Call) and callee_name(value.func) == "dumps" and value.args:
            value = value.args[0]
        keys = (env[value.id].keys if isinstance(value, ast.Name) and value.id in env else
                {k.value: None for k in value.keys if isinstance(k, ast.Constant)} if isinstance(value, ast.Dict) else None)
        if keys and "model" in keys and not _PAYLOAD_BODIES.isdisjoint(keys):
            return True
    return False
