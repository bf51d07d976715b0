"""Calls: sources, sanitizers and serializers, mutators, templates, constructors and summaries."""

from __future__ import annotations

import ast
import re

from promptlint.lint.analysis import arguments, files, loops
from promptlint.lint.analysis.values import (ANY_KEY, EMPTY, LOCATED, MATCHED, RUN_STATE, appended, certain, chosen, clip, ClassInfo, FunctionRef, Taint, Val, default_used, fixed, passes_mark,
                                             frozen_ok, join, merge, narrowed, param_names, parameters, read_at, user_words)
from promptlint.lint.analysis.rendered import rendered_callables, stuffed, substitute
from promptlint.lint.analysis.sinks import (REQUEST_METHODS, asked_with_conversation, asks_model, before_history, entry_node,
                                            is_system_message, other_role, posts_request, role_of, system_list, system_side, system_text)
from promptlint.lint.analysis.structure import RUNNABLE_KEEPERS, structured
from promptlint.lint.diagnostic import Fix
from promptlint.lint.guards import COUNTING_CALLS, GROWERS, callee_name, list_name, memoized, receiver_name

_MUTATORS = arguments.MUTATORS
_PATTERN_COMPILERS = ("re.compile(", "regex.compile(")  # origin of a compiled pattern's methods
_ORDERED_CONSUMERS = {"builtins.list", "builtins.tuple", "builtins.enumerate", "builtins.iter", "builtins.next"}
_REGEX_CALLS = {"re.sub", "re.subn"}
_TEMPLATE_METHODS = {"format", "format_map", "render", "substitute", "safe_substitute", "partial", "invoke", "ainvoke",
                     "aformat", "format_messages", "aformat_messages", "format_prompt", "aformat_prompt",
                     "render_async", "async_render", "async_render_with_possible_json_value"}
#: Fields that are a record's text when it is rendered whole (content blocks, messages).
_TEXT_FIELDS = {"text", "content", "parts", "message", "prompt", "body", "value"}
#: Methods that add a message to a conversation's history: it lands after the history, late.
_HISTORY_ADDERS = {"add", "append", "add_message", "append_message", "add_to_history", "push", "log", "record"}
_TRANSLATIONS = re.compile(r"(?i)(?:^|_)(?:i18n|l10n|translations?|locales?|localization)$")  # fixed, translated text
#: Methods that store a message in a conversation's history or memory, after what is there.
_HISTORY_STORES = {"add_message", "add_messages", "append_message", "add_to_history", "add_to_memory", "remember",
                   "add_history", "append_history", "append_to_history", "add_to_chat_history", "add_to_conversation"}
#: Classes of a system message, whatever library they come from.
_SYSTEM_CLASSES = {"SystemMessage", "SystemContent", "SystemPromptPart", "SystemPrompt", "SystemChatMessage",
                   "SystemMessagePromptTemplate"}


#: Methods every dict, list or str has: `config.get("action")` on an unknown receiver is far more
#: often a dict's than the one project class's `get` (a memory's, a store's).
_BUILTIN_METHODS = frozenset({"get", "pop", "items", "keys", "values", "copy", "clear", "index", "count", "remove",
                              "split", "strip", "replace", "lower", "upper", "startswith", "endswith", "encode", "decode"})
#: Keywords that give a call the conversation so far: given empty (`history=[]`), it is a one-shot task.
_CONVERSATION_KEYWORDS = frozenset({"history", "messages", "chat_history", "conversation", "conversation_history"})
#: Request methods whose result is a model's reply (not `count_tokens`, `parse` of a request).
_ASKS = frozenset({"create", "stream", "generate_content", "generate_content_stream", "completion", "acompletion",
                   "invoke", "ainvoke", "send_message", "chat", "achat"})


class Calls:
    """Call evaluation of ``FunctionAnalysis``."""

    # -------------------------------------------------------------------- calls
    def eval_Call(self, node: ast.Call) -> Val:
        if (ran := arguments.run_call(node)) is not None:
            return self.eval_Call(ran)
        func = self.eval(node.func)
        appending = isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "insert", "appendleft")
        # `model_context.add_message(SystemMessage(...))`: a message stored after the history.
        storing = isinstance(node.func, ast.Attribute) and node.func.attr in _HISTORY_STORES
        # A request's own messages lead that request, wherever its reply goes (`{"messages": [llm.invoke([system, ...])]}`).
        outer = (self.defer_shapes, self.history_adds)
        if getattr(node.func, "attr", None) in REQUEST_METHODS:
            self.defer_shapes = self.history_adds = 0
        self.defer_shapes += appending or storing  # where a system message lands decides whether it is stable
        self.defer_shapes += bool(COUNTING_CALLS.match(callee_name(node.func)))  # built to be measured, not sent
        self.history_adds += storing
        try:
            args = [self.eval(a) for a in node.args]
            self.defer_shapes -= appending
            kwargs, splat = arguments.keyword_values(self.eval, node)
            for where, taints in rendered_callables(self, node, args, kwargs):  # `partial(date=get_date)`
                holder = kwargs if isinstance(where, str) else args
                holder[where] = holder[where].with_taints(merge(holder[where].taints, taints))
        finally:
            self.defer_shapes, self.history_adds = outer
        origin = func.origin
        call_origin = f"{origin}()" if origin else None
        # A call (not a constructor) of a known sink sends what it is given: `llm.ask(system=...)`.
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if callee == "create_stuff_documents_chain":
            stuffed(self, node, args, kwargs)
        if origin in ("sqlalchemy.select", "sqlmodel.select") and (read := arguments.model_read(self.m, node)):
            return Val(read, node=node)  # `session.execute(select(Fact))`: the statement's rows
        if callee in _TEMPLATE_METHODS:  # `.format(history=chat_history)`: the conversation rendered whole
            for kw in node.keywords:
                if kw.arg in kwargs and (grown := self.conversation_rendered(kw.value) or self.conversation_rendered(kw.value, kw.arg)):
                    kwargs[kw.arg] = kwargs[kw.arg].with_taints(merge(kwargs[kw.arg].taints, grown))
        # (`ChatPromptTemplate.from_messages(...)`, `ChatMessage.from_system(...)` build, as a constructor does)
        # (`ChatMessage.create(role="system", text=...)` makes a message: a request is given no role)
        requested = callee in REQUEST_METHODS and "role" not in kwargs
        # (`create_react_agent(prompt=...)` makes an agent, as a constructor does: it sends nothing)
        sends = requested or bool(origin and callee[:1].islower() and not callee.startswith(
            ("from_", "create_")) and self.m.catalog.sink_calls.match(origin))
        self.replies = self.replies or (sends and callee in _ASKS)
        if self.defer_shapes and callee in _SYSTEM_CLASSES:
            # `msgs.append(SystemMessage(content=x))`: a system message that the list places
            # (leading: stable; after the history: late), as a dict display would be; stored in
            # a history (`context.add_message(...)`), it is late.
            _, text = system_text(args, kwargs)
            if text is not None:
                keys = None if self.history_adds else {"role": Val(const="system", node=node), "content": text}
                return Val(text.taints, keys=keys, node=node)
        self.sending += sends
        self.calling += 1
        try:
            if origin:
                self.check_sinks(node, origin, args, kwargs)
            self.check_call_shape(node, origin, args, kwargs, func.func)
        finally:
            self.sending -= sends
            self.calling -= 1
        if (made := structured(node, origin, callee, func, args, kwargs)) is not None:
            return made
        # 1. sources
        if origin:
            for spec in self.m.catalog.source_calls.match(origin):
                if spec.max_args is not None and len(node.args) > spec.max_args:
                    continue
                result = self._source_result(node, spec, origin, args, kwargs)
                if origin.endswith(".shuffle") and node.args:  # `random.shuffle(examples)`: in place
                    self._update_container(node.args[0], Val(result.taints, origin=args[0].origin, node=args[0].node))
                return result
        if isinstance(node.func, ast.Attribute):  # (before file reads: `store.read("user")`, `memory.load()`)
            receiver = node.func.value
            name = receiver_name(receiver)
            specs = self.m.catalog.source_receiver_methods.match(f"{name}.{node.func.attr}") if name else []
            if specs:
                return self._source_result(node, specs[0], node.func.attr, args, kwargs, receiver=func)
        if files.reads_content(origin, node):
            return files.read(self, node, call_origin, func, args, kwargs)
        if isinstance(node.func, ast.Attribute) and not self._static_catalog(node.func.value):
            spec = self.m.catalog.source_method(node.func.attr)
            # A project method named for retrieval is one too (`client.query_for_conversation`
            # posts the query to a server); a module's function (`re.search`, `re.compile(p).search`) is not,
            # nor a lookup by type or id (a UI's `self.query_one(ToolSelector)`, `assistants.retrieve(assistant_id)`).
            method_of_class = func.func is not None and func.func.cls is not None
            if spec is not None and not arguments.lookup_only(node) and (method_of_class or not (origin and (
                    self._is_module_path(origin) or origin.startswith(_PATTERN_COMPILERS)))):
                return self._named_source(node, spec, func.func if method_of_class else None, func, args, kwargs)
        if isinstance(node.func, ast.Name):
            spec = self.m.catalog.source_method(node.func.id)
            ref = func.func or (self.m.resolve_function(origin.lstrip("@")) if origin else None)
            if spec is not None and isinstance(ref, FunctionRef):
                return self._named_source(node, spec, ref, func, args, kwargs)
        # 2. sanitizers and serializers
        arg_taints = merge(*(a.taints for a in args), *(arguments.passed(k, v, callee, callee in _TEMPLATE_METHODS) for k, v in kwargs.items()), *(s.taints for s in splat))
        if origin:
            sanitizers = self.m.catalog.sanitizer_calls.match(origin)
            if sanitizers:
                clears = {label for s in sanitizers for label in s.clears}
                return Val(tuple(t for t in arg_taints if t.label not in clears), node=node)
            serializer = self.m.catalog.serializer_calls.get(origin)
            if serializer is not None:
                return arguments.serialized(self.m, node, serializer, args, kwargs)
            if origin == "builtins.reversed" and args and args[0].items is not None:
                return Val(args[0].taints, items=args[0].items[::-1], node=node)  # the last message now leads
            if origin in _ORDERED_CONSUMERS and args:
                consumed = tuple(self._consumed(t, node.args[0]) if t.label == "unordered" else t for t in args[0].taints)
                return Val(merge(consumed), items=args[0].items, node=node)
        # 3. functions we can summarise; a wrapper handed an SDK's request method (`backoff_create(client.messages.create, ...)`)
        if any(a.origin and a.origin.rsplit(".", 1)[-1] in _ASKS and any(a.origin.endswith("." + sh) for sh, _ in self.m.catalog.sink_shapes) for a in args):
            self.replies = True
            return Val(self._reply(node, callee, [*args, *kwargs.values()], kwargs), origin=call_origin, node=node)
        target = func.func
        if target is None:
            found = self.m.callable_named(origin)
            if isinstance(found, FunctionRef):
                target = found
            elif isinstance(found, ClassInfo):
                return self._construct(node, found, args, kwargs)
        if target is None and origin and origin.startswith("?.") and isinstance(node.func, ast.Attribute):
            target = self._method_by_name(node.func.attr)
        if target is not None:  # (an abstract method: the project's one implementation of it)
            target = self.m.implementation(target)
            result = self._apply_summary(node, target, func, args, kwargs)
            summary = target.module.summaries.get(id(target.node))
            self._received(result.taints, asked=summary is not None and summary.replies)
            if self.run_state and any(a.origin == RUN_STATE for a in [*args, *kwargs.values()]):
                # `self.check_state(context)` handed the run's context: what the helper reads from it
                step = self.m.step(node, f"via {target.qualname.rsplit('.', 1)[-1]}()")
                read = target.module.run_state_return(target)
                result = join(result, read.with_taints(tuple(t.then(step) for t in read.taints)))
            return result
        if origin and origin.startswith("@") and origin.endswith("()") is False:
            info = self._class_info(origin[1:])
            if info is not None:
                return self._construct(node, info[1], args, kwargs)
        # 4. templates, joins, mutators, everything else: taint flows through
        if (requested and callee not in _TEMPLATE_METHODS and callee != "parse" or posts_request(node, self.env)
                or asks_model(callee, args if callee in _TEMPLATE_METHODS else [*args, *kwargs.values()])):
            # `client.messages.create(...)`, `httpx.post(url, json=payload)`: the response is the
            # model's new text, not the request it was sent (a clock in the system prompt is not
            # in the reply). What the model said is new on every call: per-turn content in the loop
            # that receives it (`_reply`).
            return Val(self._reply(node, callee, [*args, *kwargs.values()], kwargs), origin=call_origin, node=node)
        recv_val = self.eval(node.func.value) if isinstance(node.func, ast.Attribute) else EMPTY
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if method == "join" and len(args) > 1:  # `os.path.join(root, "MEMORY.md")`: a path of all its parts
            return Val(merge(*(a.taints for a in args)), node=node)
        if method == "join" and args:
            consumed = tuple(self._consumed(t, node.args[0]) if t.label == "unordered" else t for t in args[0].taints)
            return Val(merge(recv_val.taints, consumed), node=node)
        if method == "reverse" and not args and recv_val.items is not None and isinstance(node.func, ast.Attribute):
            self._update_container(node.func.value, Val(recv_val.taints, origin=recv_val.origin, items=recv_val.items[::-1],
                                                        node=recv_val.node))
            return Val(node=node)
        if method == "sort" and isinstance(node.func, ast.Attribute):  # `parts.sort()`: ordered in place
            self._update_container(node.func.value, recv_val.keep(lambda t: t.label != "unordered"))
            return Val(node=node)
        if method in _MUTATORS and isinstance(node.func, ast.Attribute):
            # `messages[0].content.append(ContentItem(text=tools))` under a system-role test.
            self.check_content_write(node.func.value, Val(merge(*(a.taints for a in args))))
            if self.control and method in GROWERS:  # `if t["area"] in intents: tools.append(t)`: let in by the user's words
                args = [a.with_taints(merge(a.taints, self._chosen(clocks=False))) for a in args]
            self._mutate(node, recv_val, method, args, kwargs)
            return Val(node=node)
        if method in RUNNABLE_KEEPERS and recv_val.template is not None:
            return Val(recv_val.taints, node=node, template=recv_val.template, sink_layer=recv_val.sink_layer)
        if method in _TEMPLATE_METHODS and recv_val.template is not None:
            return substitute(self, node, recv_val, args, kwargs)
        if method == "copy" or method == "model_copy":
            return recv_val
        if method == "get" and args:
            field_source = self.state_field(node.func.value, args[0].const, node, recv_val)
            if field_source is not None:
                return field_source
        if method in ("get", "pop", "setdefault") and recv_val.keys is not None and args and args[0].const in recv_val.keys:
            return recv_val.keys[args[0].const]
        recv_taints = recv_val.taints
        if method in ("get", "pop") and args and not splat:  # `cache.get(key, default)`: the key only selects
            arg_taints = merge(*(a.taints for a in args[1:]), *(v.taints for v in kwargs.values()))
            if isinstance(args[0].const, str):  # `event.get("persona")` of a parameter: the caller's field there
                recv_taints = read_at(recv_taints, (args[0].const,))
        elif method == "query" and (read := arguments.model_read(self.m, node)):  # `session.query(Fact).all()`
            arg_taints = read
        elif arguments.sql_query(method, args):  # `conn.execute("SELECT ... WHERE expires_at > ?", (now,))`: they select
            # the rows (a clock is a cut-off, an id a key); rows matched to this turn's words are this turn's matches.
            arg_taints = merge(args[0].taints, tuple(t._replace(code=MATCHED) if t.param >= 0 else t for a in args[1:]
                                                      for t in a.taints if t.code in ("", "PC401")))
            if read := arguments.table_read(self.m, node, args[0].const):  # (the cursor holds the rows: `cur.fetchone()`)
                arg_taints = merge(arg_taints, read)
                self._update_container(node.func.value, recv_val.with_taints(merge(recv_val.taints, read)))
        taints = merge(recv_taints, arg_taints)
        # Template text travels through reads, loads and string methods (``yaml.safe_load(path.read_text())``).
        # (A regular expression is no template: `re.sub(r"\{x\}", fill, text)` edits `text`.)
        texts = args[1:] if origin in _REGEX_CALLS else args
        template = recv_val.template or next((a.template for a in texts if a.template is not None), None)
        # A library record built by keyword (`ToolResult(result=r, duration=t)`): `.result` is r only.
        result = Val(taints, origin=call_origin, node=node, template=template,
                     keys=dict(kwargs) if kwargs and all(v.keys is not None for v in splat)  # (`Namespace(**known)` too)
                     and (callee[:1].isupper() and not callee.isupper() or "role" in kwargs) else None)  # (`ChatMessage.create(role=...)`)
        if self.stable_template is not None:  # a system template was just built: remember its layer
            result.template, result.sink_layer = self.stable_template
            self.stable_template = None
        return result

    def _is_module_path(self, origin: str) -> bool:
        head = origin.split(".")[0]
        return head in {v.split(".")[0] for v in self.m.imports.values()} and "()" not in origin

    def _method_by_name(self, name: str) -> FunctionRef | None:
        """``self.prompt_manager.build(...)`` on a receiver of unknown type: the one method of that
        name among this module's classes and the classes it imports (type hints name them)."""
        if name.startswith("__") or name in _MUTATORS or name in _TEMPLATE_METHODS or name in _BUILTIN_METHODS:
            return None
        found = self.m.methods_named(name)
        return found[0] if len(found) == 1 else None

    def check_call_shape(self, node: ast.Call, origin: str | None, args: list[Val], kwargs: dict[str, Val], ref=None) -> None:
        """Stable layers recognised by the call's shape, whatever library it belongs to."""
        tail = (origin or "").rsplit(".", 1)[-1].rstrip("()") if origin else (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", ""))
        if tail in _SYSTEM_CLASSES or (isinstance(node.func, ast.Attribute) and node.func.value is not None
                                       and getattr(node.func.value, "id", getattr(node.func.value, "attr", "")) in _SYSTEM_CLASSES):
            if origin and self.m.on_screen and origin.lstrip("@").split(".")[0] not in self.m.catalog.library_roots():
                return  # the project's own notice record in a terminal or desktop UI: shown, not sent
            if self.one_shot(node):
                return
            key, text = system_text(args, kwargs)
            if text is not None:
                at = entry_node(node, key, text) if key else (node.args[0] if node.args else node)
                self.sink_value(text, at, "value", "system message (recognised by its shape)")
            return
        if self.check_layer_writer(node, args, kwargs):
            return
        adds = isinstance(node.func, ast.Attribute) and node.func.attr in _HISTORY_ADDERS
        if "role" in kwargs and origin != "builtins.dict" and not adds:
            # (`conversation.add(role="System", content=status)` puts a message after the history.)
            self.check_message_shape(kwargs, node)
        elif origin == "builtins.dict" and not self.defer_shapes:
            self.check_message_shape(kwargs, node)
        if kwargs and not (origin and self.m.catalog.sink_calls.match(origin)):
            self.check_payload_shape(kwargs, node)
            # `llm.aask(req, system_msgs=[prompt])`: a keyword named for its layer, at a call that
            # is neither a template fill (`.format(instructions=...)`) nor a project class's
            # constructor (a record such as a UI preview; a real one is followed through __init__).
            fills = isinstance(node.func, ast.Attribute) and node.func.attr in _TEMPLATE_METHODS
            alone = any(k.arg in _CONVERSATION_KEYWORDS and isinstance(k.value, (ast.List, ast.Tuple)) and not k.value.elts
                        for k in node.keywords)
            if not fills and not alone and not (origin and origin.startswith("@") and "()" not in origin):
                for name, val in ((n, v) for n, v in kwargs.items()
                                  if self.m.catalog.stable_layer_of(n) and self.keeps_keyword(ref, n)):
                    self.check_stable_target(name, f"{name}=", val, entry_node(node, name, val), self.m.snippet(node.func))

    def _reply(self, node: ast.Call, callee: str, vals: list, kwargs: dict) -> tuple[Taint, ...]:
        """The model's reply to a call sent a conversation (``messages=``, a list of role messages)
        or a prompt: per-turn content, but only in the loop that receives it (here or from a
        helper it calls), on that loop's next pass (a plan put into the next step's system
        prompt); what the loop returns or leaves behind goes out once (loops.py). Kept on an
        object or handed to one-off requests, it is reported nowhere. A token count is no reply."""
        if callee == "count_tokens" or not (asked_with_conversation(kwargs, vals) or any(  # (`client.chat(messages)`)
                isinstance(a, ast.Name) and self.m.catalog.source_newest_of.match(a.id) for a in node.args)):
            return ()
        return self._received((Taint(loops.CODE, "volatile", (self.m.step(
            node, f"the model's reply: `{self.m.snippet(node, 40)}`"),), reply=True),))

    def _received(self, taints: tuple[Taint, ...], asked: bool = True) -> tuple[Taint, ...]:
        """``taints``, whose replies the innermost loop has now received (one the method kept for
        its next call is this call's own from here on, when it asks again: module.summary)."""
        if asked and self.cls is not None and (turn := self.cls.next_turn):
            self.cls.next_turn = turn._replace(replies=turn.replies - {loops.origin(t) for t in taints if t.reply})
        return loops.received(self.passes, taints)

    def _static_catalog(self, receiver: ast.AST) -> bool:
        """`i18n.retrieve("slices", "role")`: a translation catalog holds fixed text; it retrieves nothing."""
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
        return _TRANSLATIONS.search(self.cls.name if name == "self" and self.cls is not None else name) is not None

    def _named_source(self, node: ast.Call, spec, ref: FunctionRef | None, func: Val, args, kwargs) -> Val:
        """The project's own ``search_memories(...)`` / ``self.retrieve(...)``: what it returns is the
        per-turn content (the query only selects it); from the source its body reads when it shows
        one (``store.get(...)``), else from its name; a stub that returns fixed text returns that,
        and a factory that returns the function that searches (a tool for the model) returns it."""
        what = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        receiver = func if isinstance(node.func, ast.Attribute) else None
        inner = self._apply_summary(node, ref, func, args, kwargs) if ref is not None and spec.label == "volatile" else None
        if inner is not None and (receiver is None and any(t.param < 0 and t.code == spec.code for t in inner.taints)
                                  or not inner.taints and fixed(inner) or arguments.makes_tool(ref.node) or memoized(ref.node)):
            return inner  # (a memoised loader, `if name in _cache: return _cache[name]`, reads once per key)
        return self._source_result(node, spec, what, args, kwargs, receiver=receiver)

    def _source_result(self, node, spec, what, args, kwargs, receiver: Val | None = None) -> Val:
        step = self.m.step(node, f"{spec.note}: `{self.m.snippet(node, 40)}`")
        fix = Fix("wrap-sorted", 0, 0, 0, 0, spec.sortable, "sortable" if spec.sortable else "") if spec.label == "unordered" else None
        taint = Taint(spec.code, spec.label, (step,), fix=fix)
        # (`datetime.now(tz)` reads the clock itself, not the zone's; `set(os.listdir(d))` keeps both orders,
        # each with its own fix; a key it is looked up by, `conversation_id=`, is not what comes back)
        extra = merge(*(a.taints for a in args), *(arguments.passed(k, v, what, False) for k, v in kwargs.items()),
                      receiver.taints if receiver else ())
        kept = tuple(t for t in extra if t.code != spec.code or t.param >= 0 or spec.label == "unordered")
        return Val(merge((taint,), kept), origin=f"{what}()", node=node)

    def _mutate(self, node: ast.Call, recv: Val, method: str, args: list[Val], kwargs) -> None:
        grown = self.grown(self._dotted_local(node.func.value), node, recv, *args) if node is self.bare_call else ()
        added = merge(*(a.taints for a in args), *(v.taints for v in kwargs.values()))
        message = args[-1].keys if method in ("append", "insert", "appendleft") and args else None
        system = message is not None and is_system_message(args[-1])
        if method in ("append", "extend") and recv.items is None:
            # `self.messages.append(Message("user", content))`: the end of the list, not its head
            # (and, in a message of another role, not what a test for the system role picks out)
            added = tuple(t._replace(appended=True, other_role=other_role(message), system_role=system) for t in added)
        elif method == "insert" and recv.items is None:  # (`chat_log.content.insert(i, SystemContent(...))`)
            added = tuple(t._replace(system_role=system) for t in added)
        new = merge(recv.taints, added, grown, *self.loop_unordered)
        if method in ("extend", "update") and args:
            new = merge(new, tuple(self._consumed(t, node.args[0]) if t.label == "unordered" else t for t in args[0].taints))
        items = recv.items
        keys = recv.keys
        if message is not None:
            # A system message appended after history sits late in the request (volatile by
            # position); appended to an empty or all-system list, it leads the request.
            # (A list of unknown contents, a stored history, has them before what is appended.)
            late = method == "append" and (items is None or any(
                i.keys is None or role_of(i.keys.get("role")) not in ("system", "developer") for i in certain(items)))
            if not late and (method != "insert" or before_history(args, items)):
                self.system_list += (gathers := self.ref is not None and system_list(self.ref.node, list_name(node.func.value)))
                try:
                    self.check_message_shape(message, node.args[-1])
                finally:
                    self.system_list -= gathers
        if items is not None:
            if method == "append" and args:
                items = appended(items, [args[0]], history=self.loop_depth > 0)
            elif method == "extend" and args:
                # Unknown items (history) still take places: what is appended later comes after them.
                items = appended(items, args[0].items if args[0].items is not None else [Val(args[0].taints)],
                                 history=args[0].items is None or self.loop_depth > 0)
            elif method == "insert" and len(args) == 2 and isinstance(args[0].const, int):
                items = list(items)
                items.insert(args[0].const, args[1])
            elif method == "insert" and len(args) == 2:  # at a place computed at run time: after what leads, as history
                items = appended(items, [args[1]], history=True)
            else:
                items = None
        if keys is not None and method == "update" and args and args[0].keys is not None:
            keys = {**keys, **args[0].keys}
        self._update_container(node.func.value, Val(new, origin=recv.origin, items=items, keys=keys, node=recv.node, template=recv.template))

    def _construct(self, node: ast.Call, info: ClassInfo, args, kwargs) -> Val:
        found = self._class_info(info.qualname)
        owner = found[0] if found else self.m
        owner.prepare_class(info)
        init = info.methods.get("__init__")
        fields = [s.target.id for s in info.node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        if init is not None:
            self._apply_summary(node, init, Val(origin=f"@{info.qualname}()"), args, kwargs, bound=True)
            # A model with its own __init__ (`ContentItem(text=x)` handing fields to pydantic):
            # arguments named for declared fields are those fields.
            positional = [p for p in param_names(init.node) if p not in ("self", "cls")]
            given = {k: v for k, v in [*zip(positional, args), *kwargs.items()] if k in fields}
        else:  # dataclass / pydantic: fields by name, held by this instance only
            # Never merged into the class: `Message(content=now())` in one module would make
            # every `Message` of the project carry the clock (object-insensitive fields).
            given = dict([*zip(fields, args), *kwargs.items()])
        if given:
            # Read as a whole (a content block in a list), a record is its text: `ContentItem(text=x)`
            # renders x; its ids and timestamps are metadata, followed only when read by name.
            text = merge(*(v.taints for k, v in given.items() if k in _TEXT_FIELDS))
            return Val(text, origin=f"@{info.qualname}()", keys=given, node=node)
        return Val(origin=f"@{info.qualname}()", node=node)

    def _apply_summary(self, node: ast.Call, ref: FunctionRef, func: Val, args: list[Val], kwargs: dict[str, Val],
                       bound: bool | None = None) -> Val:
        summary = ref.module.summary(ref)
        if ref.module is not self.m:
            self.m.deps.add(ref.module.path)
            self.m.deps.update(ref.module.deps)
        params = param_names(ref.node)
        if bound is None:
            bound = ref.cls is not None and isinstance(node.func, ast.Attribute) and params[:1] in (["self"], ["cls"])
        offset = 1 if bound else 0
        actual = arguments.bind(ref.node.args, params, offset, args, kwargs)
        for i, a in actual.items():  # `to_messages(chat_log)` after a write into `chat_log.content`: that field too
            syntax = arguments.argument_syntax(node, i - offset, params[i])
            fields = {k.split(".")[1]: v for k, v in self.env.items() if k.startswith(syntax.id + ".") and k.count(".") == 1} if (
                isinstance(syntax, ast.Name) and syntax.id != "self") else None
            if fields:
                actual[i] = Val(a.taints, origin=a.origin, items=a.items, keys={**fields, **(a.keys or {})}, func=a.func,
                                node=a.node, template=a.template, sink_layer=a.sink_layer)
        if bound and isinstance(node.func, ast.Attribute):
            actual.setdefault(0, self.eval(node.func.value))
        name = ref.qualname.rsplit(".", 1)[-1]
        call_step = self.m.step(node, f"via {name}()")

        def substitute(taints: tuple[Taint, ...]) -> tuple[Taint, ...]:
            """Parameter taints of the summary replaced by the actual arguments' taints."""
            out = []
            for t in taints:
                if t.param < 0:
                    if t.fallback >= 0:  # the callee's default for a parameter: used only when left out
                        t = default_used(t, actual.get(t.fallback))
                    if t is not None:  # (the call is a step of its trace: two calls of one helper are two flows)
                        out.append(t.then(call_step))
                    continue
                given = actual.get(t.param)
                if t.role_only and t.index[:1] == (ANY_KEY,) and given is not None and (side := system_side(given.items)):
                    given = Val(side.taints, items=[side])  # (the elements a role test picks, then their field)
                arg, rest = narrowed(given, t.index) if given is not None else (None, ())
                if t.role_only and arg is not None:  # the system messages of a known message list
                    arg = system_side(arg.items) or arg
                by_choice = chosen(t)  # text picked by a test on the parameter: by the caller's words only
                for at in (read_at(arg.taints, rest) if arg is not None else ()):  # (a caller's parameter: at what is left)
                    if at.label != t.label or not passes_mark(t.code, at) or (
                            by_choice and not (at.param >= 0 or user_words(at))):
                        continue
                    if t.code in (LOCATED, MATCHED) and at.param >= 0:
                        at = at._replace(code=t.code)
                    elif t.code == LOCATED and at.unread:  # `read_file("/memory/notes.md")`: the callee reads it
                        at = at._replace(unread=False)
                    if t.dumped and at.param < 0 and at.label == "unordered":
                        at = at._replace(code="PC502", fix=t.fix)
                    elif t.dumped:
                        at = at._replace(dumped=True, fix=t.fix)
                    if t.role_only and at.param >= 0:  # still only the system message of the caller's parameter
                        at = at._replace(role_only=True)
                    out.append(at._replace(steps=clip(at.steps + (call_step,) + t.steps)))
            return merge(out)

        by_param = {id(a): actual[i] for i, a in enumerate(parameters(ref.node)) if i in actual}

        def structure(val: Val | None, depth: int = 0) -> Val | None:
            """A returned display (a message list, a block dict) keeps its shape at the call site."""
            if val is None or depth > 4:
                return val
            # Positions inside another module cannot be reported here: point at the call instead.
            here = val.node if val.node is not None and ref.module is self.m else node
            given = by_param.get(id(val.node))
            if given is not None:  # a parameter returned as it came: what the caller passed (`{"role": role}`)
                return Val(substitute(val.taints), const=given.const, node=given.node or node, template=given.template,
                           sink_layer=given.sink_layer, items=given.items, keys=given.keys)
            return Val(substitute(val.taints), const=val.const, node=here, template=val.template, sink_layer=val.sink_layer,
                       items=[structure(v, depth + 1) for v in val.items] if val.items is not None else None,
                       keys={k: structure(v, depth + 1) for k, v in val.keys.items()} if val.keys is not None else None)

        if bound and ref.cls is not None:
            self._store_params_in_attrs(node, ref, actual)
        for ps in summary.param_sinks:
            arg = actual.get(ps.param)
            if arg is None:
                continue
            arg, rest = narrowed(arg, ps.index)  # `prompt[0]` inside: the caller's item 0
            arg = arg.with_taints(read_at(arg.taints, rest)) if rest else arg  # (a caller's parameter: at what is left)
            arg_node = arguments.argument_syntax(node, ps.param - offset, params[ps.param]) or (
                arg.node if isinstance(arg.node, ast.expr) else node)
            if ps.only:  # the argument only located a file or selected rows: what did is not the content
                arg = arg.keep(lambda t: passes_mark(ps.only, t))
            if ps.system_only:  # the system messages of the caller's list, or those it added to its log
                arg = system_side(arg.items) or arg.with_taints(tuple(
                    t._replace(role_only=True) if t.param >= 0 else t for t in arg.taints
                    if t.system_role or t.param >= 0 and not t.other_role))
            passed = self.m.step(arg_node, f"passed to {name}()")
            saved = self.sink_via
            self.sink_via = ((passed,) + ps.steps[:-1], ps.steps[-1] if ps.steps else None, ps.dumped, ps.label)
            self.system_list += ps.system_only  # (a caller's parameter: its system messages, gathered there too)
            try:
                self.sink_value(arg, arg_node, ps.arg_kind, ps.layer)
            finally:
                self.sink_via = saved
                self.system_list -= ps.system_only
        for index, written in summary.writes.items():
            index, field = index if isinstance(index, tuple) else (index, None)
            self._written_into(node, actual.get(index), index - offset, params[index], written, call_step, field)
        if self.passes:  # `self._add_found_tools(found, tools)` in the loop that sends: `tools` grows per pass
            for index in loops.grown_params(ref.node, params):
                self._grown_by_call(node, actual.get(index), index - offset, params[index])
        # A model's reply carries none of the request the arguments made (what a helper that asks
        # a model returns is new text; the model's own output is a source only by its own rule).
        ret = summary.ret.keep_deep(lambda t: t.param < 0) if summary.replies else summary.ret
        shaped = structure(ret)
        return Val(shaped.taints, origin=ret.origin if ret.origin and ret.origin.startswith("@") else f"{ref.qualname}()",
                   items=shaped.items, keys=shaped.keys, func=ret.func, node=node, template=ret.template,
                   sink_layer=ret.sink_layer)

    def _grown_by_call(self, node: ast.Call, arg: Val | None, position: int, name: str) -> None:
        at = arguments.argument_syntax(node, position, name)
        if arg is None or at is None:
            return
        grown = self.grown(self._dotted_local(at), node, arg)
        if grown:
            self._update_container(at, arg.with_taints(merge(arg.taints, grown)))

    def _written_into(self, node: ast.Call, arg: Val | None, position: int, name: str, written, call_step, field=None) -> None:
        """``enrich(context)`` wrote sources into ``context`` (or its ``field``): the caller's object holds them now."""
        if arg is None:
            return
        at = arguments.argument_syntax(node, position, name)
        if at is None or self._dotted_local(at) is None:
            return
        if field is not None:  # (`prepare(chat_log)` appended to `chat_log.content`)
            at = ast.copy_location(ast.Attribute(value=at, attr=field, ctx=ast.Load()), at)
            arg = self.eval(at)
        taints = merge(arg.taints, tuple(t._replace(steps=clip(t.steps + (call_step,))) for t in written))
        # Where inside the object the callee wrote is not known: its structure is no longer either.
        self._update_container(at, Val(taints, origin=arg.origin, node=arg.node, template=arg.template))

    def _store_params_in_attrs(self, node: ast.Call, ref: FunctionRef, actual: dict[int, Val]) -> None:
        """``builder.add_section("Now", clock())`` where ``add_section`` keeps its parameter in
        ``self._sections``: the object now holds the argument's sources, and the class's other
        methods (``build()``) read them there. Summaries of those methods are redone."""
        # Only an object this function built itself (`builder = PromptBuilder()`): what a
        # parameter or `self` holds is shared with other callers, and class-wide attributes
        # would merge unrelated instances.
        # But the model's reply a method hands its own setter (`self._apply_plan(parse(reply))`) is
        # kept as it would be by `self.plan = ...` there: on the next call, it is last turn's reply.
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        own = isinstance(receiver, ast.Name) and receiver.id == "self" and ref.cls is self.cls
        if not own and not (isinstance(receiver, ast.Name) and receiver.id not in self.params
                            and self.env.get(receiver.id) is not None
                            and self.env[receiver.id].origin == f"@{ref.cls.qualname}()"):
            return
        params = param_names(ref.node)
        changed = False
        for attr, index in arguments.param_stores(ref.node, params):
            arg = actual.get(index)
            if arg is None:
                continue
            step = self.m.step(node, f"kept in `self.{attr}` by {ref.node.name}()")
            kept = tuple(t.then(step) for t in arg.taints if t.param < 0 and (not self.frozen or frozen_ok(t))
                         and (t.reply or not own))
            for t in kept if own else ():
                self.kept_replies.setdefault(loops.origin(t), node.lineno)
            if not kept:
                continue
            old = ref.cls.attrs.get(attr)
            if old is not None and all(t in old.taints for t in kept):
                continue
            ref.cls.attrs[attr] = Val(merge(old.taints if old is not None else (), kept), node=old.node if old else None)
            changed = True
        if changed:
            ref.module.forget_methods(ref.cls)
