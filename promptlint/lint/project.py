"""The linted project: module names, cross-module resolution and template files.

A ``Project`` lives in one worker process. It parses a module the first time another
module calls into it and keeps its ``ModuleAnalysis``, so a helper used by twenty files is
summarised once per worker.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from promptlint.lint.analysis import ClassInfo, FunctionRef, ModuleAnalysis
from promptlint.lint.analysis.module import is_abstract
from promptlint.lint.catalog import Catalog
from promptlint.lint.diagnostic import TraceStep
from promptlint.lint.discover import import_roots  # noqa: F401 - where the roots come from, re-exported
from promptlint.lint.source import SourceError, decode_source, display_path, generator_template, parse_python

_TEMPLATE_DIRS = ("", "templates", "prompts", "prompt", "config", "configs")


class Project:
    """Module resolution against the project's import roots (fixed for the run: ``src`` plus
    ``import_roots`` of the linted files), with per-worker memo tables."""

    def __init__(self, catalog: Catalog, roots: list[str] | None = None, strict: bool = False, max_file_bytes: int = 2_000_000,
                 base: str | None = None):
        self.catalog = catalog
        self.base = os.path.abspath(base) if base else None  # the project's root folder (Settings.root)
        self.extra_roots = [os.path.abspath(r) for r in roots or ()]
        self.strict = strict  # re-raise internal errors (the test suite sets it)
        self.max_file_bytes = max_file_bytes
        self._modules: dict[str, ModuleAnalysis | None] = {}
        self._by_name: dict[str, str | None] = {}
        self._package_dirs: dict[str, bool] = {}
        self._templates: dict[str, tuple[str, str] | None] = {}
        self._overrides: dict[tuple[str, str], FunctionRef | None] = {}
        self._class_index: dict[str, list[tuple[str, str, str, frozenset[str]]]] = {}
        self._roots: list[str] = sorted(set(self.extra_roots))
        self._entries: dict[str, frozenset[str]] = {}
        self._bodies_running: set[str] = set()
        # Helper modules that an analysed file called into but that do not parse: the
        # engine reports them (PC001/PC002), so a broken helper never hides a flow silently.
        self.failed: dict[str, tuple[str, str, int, int]] = {}

    # ---------------------------------------------------------------- naming
    def _is_package(self, directory: str) -> bool:
        hit = self._package_dirs.get(directory)
        if hit is None:
            hit = self._package_dirs[directory] = os.path.isfile(os.path.join(directory, "__init__.py"))
        return hit

    def module_name(self, path: str) -> str:
        """Dotted module name of a file, from the nearest folder without ``__init__.py``."""
        path = os.path.abspath(path)
        directory, filename = os.path.split(path)
        stem = filename[:-3] if filename.endswith(".py") else filename
        parts = [] if stem == "__init__" else [stem]
        while self._is_package(directory):
            directory, name = os.path.split(directory)
            parts.insert(0, name)
            if not name:
                break
        return ".".join(parts)

    def _names_in(self, directory: str) -> frozenset[str]:
        """The entries of a folder, listed once per run. A tree has hundreds of import roots;
        asking each for every module name cost millions of ``stat`` calls, while a name's
        first component rules most roots out without touching the disk."""
        found = self._entries.get(directory)
        if found is None:
            try:
                found = frozenset(os.listdir(directory))
            except OSError:
                found = frozenset()
            self._entries[directory] = found
        return found

    def _may_hold(self, directory: str, rel: str) -> bool:
        """False when ``directory/rel`` cannot exist: its first component is not in the folder."""
        head = rel.split(os.sep, 1)[0]
        return head in ("", ".", "..") or head in self._names_in(directory)

    def module_file(self, name: str) -> str | None:
        """The file of project module ``name`` (``pkg/mod.py`` or ``pkg/mod/__init__.py``) on the import roots."""
        if name in self._by_name:
            return self._by_name[name]
        rel = name.replace(".", os.sep)
        head = rel.split(os.sep, 1)[0]
        found = None
        for root in self._roots:
            listed = self._names_in(root)
            if head not in listed and head + ".py" not in listed:
                continue
            for candidate in (os.path.join(root, rel + ".py"), os.path.join(root, rel, "__init__.py")):
                if os.path.isfile(candidate):
                    found = candidate
                    break
            if found:
                break
        self._by_name[name] = found
        return found

    def missing_module(self, name: str) -> bool:
        """Whether importing ``name`` fails for sure: its first part is a package at the top of
        this project (a folder with ``__init__.py`` in its root or ``src``) and no module, package,
        extension or stub of that name is in it (`from nova.hooks import X` where the project's
        ``nova`` has no ``hooks``). A package deeper in the tree may be imported under another
        name (`adapters/discord/`, while `import discord` is the installed library)."""
        head, _, rest = name.partition(".")
        top = self.module_file(head)
        if not rest or top is None or not top.endswith("__init__.py") or self.module_file(name) is not None:
            return False
        folder = os.path.dirname(top)
        if self.base is None or os.path.dirname(folder) not in (self.base, os.path.join(self.base, "src")):
            return False
        for part in rest.split("."):
            listed = self._names_in(folder)
            if part in listed and os.path.isdir(os.path.join(folder, part)):
                folder = os.path.join(folder, part)
                continue
            return not any(entry.startswith(part + ".") for entry in listed)
        return False  # a folder without `__init__.py`: a namespace package imports

    # -------------------------------------------------------------- analyses
    def is_built(self, path: str) -> bool:
        """Whether this worker holds the analysis of a file already (it was a helper module)."""
        return self._modules.get(os.path.abspath(path)) is not None

    def analysis(self, path: str, text: str | None = None, tree: ast.Module | None = None) -> ModuleAnalysis | None:
        """The (memoised) analysis of a file; ``None`` when it cannot be read or parsed."""
        if path in self._modules:  # resolved module paths are absolute already: skip abspath
            return self._modules[path]
        key = os.path.abspath(path)
        if key in self._modules:
            return self._modules[key]
        self._modules[key] = None  # guards import cycles while we build it
        if text is None:
            try:
                text = _read_source(key, self.max_file_bytes)
            except SourceError as exc:
                self.failed[path] = (exc.code, exc.detail, 1, 1)
                return None
            if text is None:
                return None
        if tree is None:
            try:
                tree = parse_python(text, path)
            except SyntaxError as exc:
                if not generator_template(path, text):  # (a template is no Python: no PC001, engine.py)
                    self.failed[path] = ("PC001", exc.msg, exc.lineno or 1, max(exc.offset or 1, 1))
                return None
            except (ValueError, RecursionError, MemoryError) as exc:
                self.failed[path] = ("PC001", str(exc) or type(exc).__name__, 1, 1)
                return None
        module = ModuleAnalysis(display_path(path), text, tree, self.catalog, self, self.module_name(key))
        self._modules[key] = module
        return module

    def module_globals(self, module: ModuleAnalysis) -> None:
        """Evaluate a dependency's module body once, for the values of its globals."""
        if getattr(module, "_globals_ready", False) or module.path in self._bodies_running:
            return
        self._bodies_running.add(module.path)
        try:
            module.run_body()
        finally:
            self._bodies_running.discard(module.path)

    def resolve(self, qualname: str, origin: ModuleAnalysis, depth: int = 0) -> FunctionRef | ClassInfo | None:
        """A function or class of the project named by a qualified name (re-exports followed)."""
        if depth > 4 or not qualname or qualname.startswith("builtins."):
            return None
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            path = self.module_file(".".join(parts[:cut]))
            if path is None:
                continue
            module = self.analysis(path)
            if module is None:
                if path in self.failed:
                    origin.deps.add(path)
                    origin.failed_deps.add(path)
                return None
            self.module_globals(module)
            rest = parts[cut:]
            found = module.local_callable(".".join(rest))
            if found is not None:
                return found
            method = self._instance_method(module, rest, origin, depth)
            if method is not None:
                return method
            imported = module.imports.get(rest[0])
            if imported and imported != qualname:
                return self.resolve(".".join([imported, *rest[1:]]), origin, depth + 1)
            return None
        return None

    def _instance_method(self, module: ModuleAnalysis, rest: list[str], origin: ModuleAnalysis, depth: int):
        """``registry.create_tools`` where ``registry = ToolRegistry()`` is a module global: the
        method of the instance's class (otherwise the call is unknown and every argument,
        including a set used only as a filter, would flow into its result)."""
        if len(rest) != 2:
            return None
        val = module.globals.get(rest[0])
        cls = val.origin if val is not None else None
        if not cls or not cls.startswith("@") or not cls.endswith("()") or "(" in cls[1:-2]:
            return None
        qual = cls[1:-2]
        info = module.local_callable(qual[len(module.module_name) + 1:]) if qual.startswith(module.module_name + ".") \
            else self.resolve(qual, origin, depth + 1)
        if isinstance(info, ClassInfo):
            return info.methods.get(rest[1])
        return None

    def override(self, ref: FunctionRef, origin: ModuleAnalysis) -> FunctionRef | None:
        """The project's one implementation of an abstract method (``BaseLLM.generate`` that only
        raises ``NotImplementedError``), among the subclasses (and theirs) declared in the base
        class's package: its folder, the folder above, and the folders below those (provider
        adapters live beside their base: ``llms/base.py``, ``llms/openai/chat.py``). None for a
        method with a body of its own, or with no or several implementations (one adapter per
        provider: which one runs is decided at run time)."""
        info = ref.cls
        if info is None or info.module is None or not is_abstract(ref.node):
            return None
        key = (info.qualname, ref.node.name)
        if key not in self._overrides:
            self._overrides[key] = self._find_override(info, ref.node.name)
        found = self._overrides[key]
        if found is not None:
            origin.deps.add(found.module.path)
        return found

    def _find_override(self, info: ClassInfo, name: str) -> FunctionRef | None:
        defines = re.compile(rf"\bdef[ \t]+{re.escape(name)}[ \t]*\(")
        found = []
        for path, text, classes in self._subclasses(info):
            # Parsed only when the file defines a method of that name (a text test first).
            module = self.analysis(path) if defines.search(text) else None
            for cls in (module.classes.get(n) for n in classes) if module is not None else ():
                method = cls.methods.get(name) if cls is not None else None
                if method is not None and not is_abstract(method.node):
                    found.append(method)
            if len(found) > 1:
                return None
        return found[0] if found else None

    def _subclasses(self, info: ClassInfo) -> list[tuple[str, str, list[str]]]:
        """(path, text, class names) of the files in ``info``'s package that declare subclasses
        of it, and subclasses of those (`OpenAIChat(BaseChatModel)`, `BaseChatModel(BaseLLM)`)."""
        folder = os.path.dirname(os.path.abspath(info.module.path))
        parent = os.path.dirname(folder) if self._is_package(folder) else folder
        if parent not in self._class_index:
            # Every class statement of the package, read once: (path, text, name, the words of its bases).
            index = []
            for path in _python_files(parent):
                try:
                    text = _read_source(path, self.max_file_bytes)
                except SourceError:
                    continue
                for match in _CLASS_STATEMENT.finditer(text or ""):
                    index.append((path, text, match.group(1), frozenset(re.findall(r"\w+", match.group(2)))))
            self._class_index[parent] = index
        index = self._class_index[parent]
        bases, seen, out = {info.name}, set(), {}
        for _ in range(3):
            found = [(path, text, name) for path, text, name, words in index
                     if not words.isdisjoint(bases) and (path, name) not in seen]
            seen.update((path, name) for path, _, name in found)
            bases = {name for _, _, name in found}
            for path, text, name in found:
                out.setdefault(path, (text, []))[1].append(name)
            if not bases:
                break
        return [(path, text, names) for path, (text, names) in sorted(out.items())]

    def resolve_value(self, qualname: str, origin: ModuleAnalysis, depth: int = 0):
        """The value of a module-level constant of the project (``from .const import PROMPT``)."""
        if depth > 4 or "." not in qualname or qualname.startswith("builtins."):
            return None
        module_name, _, name = qualname.rpartition(".")
        path = self.module_file(module_name)
        if path is None:
            return None
        module = self.analysis(path)
        if module is None or module is origin:
            return None
        self.module_globals(module)
        if name in module.globals:
            origin.deps.add(module.path)
            return module.globals[name]
        imported = module.imports.get(name)
        if imported and imported != qualname:
            return self.resolve_value(imported, origin, depth + 1)
        return None

    # ------------------------------------------------------------- templates
    def template_text(self, module: ModuleAnalysis, name: str) -> tuple[str, str] | None:
        """Find a template file named in code (``"system.j2"``) near the module or a root."""
        base = os.path.dirname(os.path.abspath(module.path))
        key = f"{base}|{name}"
        if key in self._templates:
            found = self._templates[key]
        else:
            found = None
            starts = [base, os.path.dirname(base), *self._roots, os.getcwd()]
            rels = [os.path.normpath(os.path.join(sub, name)) for sub in _TEMPLATE_DIRS]
            for start in starts:
                for rel in rels:
                    if not self._may_hold(start, rel):
                        continue
                    candidate = os.path.normpath(os.path.join(start, rel))
                    if os.path.isfile(candidate):
                        try:
                            raw = Path(candidate).read_bytes()
                            text = raw.decode("utf-8") if len(raw) <= self.max_file_bytes else None
                        except (OSError, UnicodeDecodeError):
                            text = None
                        if text is not None:
                            found = (display_path(candidate), text)
                        break
                if found:
                    break
            self._templates[key] = found
        if found is not None:
            module.deps.add(found[0])
        return found

    def template_step(self, module: ModuleAnalysis, name: str) -> TraceStep | None:
        found = self.template_text(module, name)
        return TraceStep(found[0], 1, 1, f"template {name}") if found else None

    def template_lines(self, path: str) -> list[str] | None:
        for found in self._templates.values():
            if found is not None and found[0] == path:
                return found[1].splitlines()
        return None


#: A class statement with bases: its name and the text of its bases.
_CLASS_STATEMENT = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.M)
#: How many files below a base class's folder are searched for its subclasses.
MAX_OVERRIDE_FILES = 200


def _python_files(folder: str, depth: int = 2) -> list[str]:
    """The ``.py`` files of a folder and its subfolders down to ``depth`` (sorted, bounded)."""
    out: list[str] = []
    pending = [(folder, 0)]
    while pending and len(out) < MAX_OVERRIDE_FILES:
        directory, level = pending.pop(0)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py") and entry.is_file():
                out.append(entry.path)
            elif level < depth and entry.is_dir(follow_symlinks=False) and not entry.name.startswith((".", "_")):
                pending.append((entry.path, level + 1))
    return out[:MAX_OVERRIDE_FILES]


def _read_source(path: str, limit: int) -> str | None:
    """A file's decoded text; None when it cannot be read or is larger than ``limit`` bytes. A
    file that does not decode raises ``SourceError``."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return None
    return decode_source(raw) if len(raw) <= limit else None
