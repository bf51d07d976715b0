"""One lint run: find files, skip the ones that cannot matter, analyse the rest in parallel,
reuse cached results, apply suppressions and select/ignore.

Which files are analysed:
1. every file that imports an LLM library and names a sink token (``Catalog.might_contain_sink``);
2. then, until nothing changes, every file that imports a module in which a function
   carries one of its parameters into a sink (``build(system_text)``): its callers may pass
   volatile values in. Helper modules that only *return* volatile values are parsed on
   demand, when an analysed file calls into them.
Other files are read and regex-tested only.
"""

from __future__ import annotations

import gc
import os
import re
from dataclasses import dataclass, replace

from promptlint.lint.diagnostic import Diagnostic, FileResult, Settings
from promptlint.lint.flows import one_per_flow
from promptlint.lint.notebook import is_notebook, notebook_source
from promptlint.lint.literal_search import names_test
from promptlint.lint.run_state import resolve as resolve_run_state, written_fields
from promptlint.lint.source import SourceError, decode_source, display_path, generator_template, parse_python

_IMPORT_NAMES = re.compile(r"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+([\w, \t()]+)|import[ \t]+([\w., \t]+))", re.MULTILINE)
PARALLEL_THRESHOLD = 48  # files to read; below this a pool costs more than it saves
CHUNKS_PER_JOB = 16  # small chunks of neighbours: helpers shared, load balanced


@dataclass
class LintReport:
    """The result of a run."""

    diagnostics: list[Diagnostic]
    files: int
    analyzed: int = 0
    cached: int = 0


# ------------------------------------------------------------------------ one file
def _meta(path: str, code: str, detail: str, line: int = 1, column: int = 1) -> Diagnostic:
    from promptlint.lint.catalog import load_rule_docs

    doc = load_rule_docs()[code]
    return Diagnostic(path=path, line=line, column=column, end_line=line, end_column=column + 1, code=code,
                      name=doc.name, message=doc.summary.format(detail=detail, sink=""), severity=doc.severity)


NOTEBOOK_BYTES_PER_CODE_BYTE = 50  # a notebook file may be this much larger than the limit


def read_text(path: str, max_bytes: int) -> tuple[str | None, Diagnostic | None]:
    """A file's text, or the PC002/PC003 diagnostic saying why it cannot be linted."""
    notebook = is_notebook(path)
    try:
        size = os.path.getsize(path)
        # A notebook's outputs (images, tables) are most of its bytes: the limit is on its code.
        if size > max_bytes * (NOTEBOOK_BYTES_PER_CODE_BYTE if notebook else 1):
            return None, _meta(path, "PC003", f"larger than max-file-bytes ({size} > {max_bytes} bytes)")
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        return None, _meta(path, "PC003", f"cannot read: {exc.strerror or exc}")
    try:
        text = notebook_source(raw) if notebook else decode_source(raw)
    except SourceError as exc:
        project = _WORKER.get("project")
        if notebook and exc.code == "PC001" and project is not None and not project.catalog.might_contain_sink(
                raw.decode("utf-8", "replace")):
            return "", None  # an empty or broken notebook with no prompt in it hides no finding (as a .py file)
        return None, _meta(path, exc.code, exc.detail)
    if notebook and len(text) > max_bytes:
        return None, _meta(path, "PC003", f"code larger than max-file-bytes ({len(text)} > {max_bytes} bytes)")
    return text, None


def analyze_file(path: str, text: str, project, extra_names: frozenset[str] = frozenset()) -> FileResult:
    """Analyse one file fully; any failure becomes a diagnostic for this file only."""
    try:
        # A file another one called into is parsed already: its analysis is reused as it is.
        tree = None if project.is_built(path) else parse_python(text, path)
    except SyntaxError as exc:
        if generator_template(path, text):
            return FileResult(analyzed=True)
        return FileResult([_meta(path, "PC001", f"{exc.msg}", exc.lineno or 1, max(exc.offset or 1, 1))], analyzed=True)
    except (ValueError, MemoryError, RecursionError) as exc:
        return FileResult([_meta(path, "PC001", str(exc) or type(exc).__name__)], analyzed=True)
    try:
        return in_deep_stack(_analyze_tree, path, text, tree, project, extra_names)
    except RecursionError:
        return FileResult([_meta(path, "PC004", "expression nesting too deep")], analyzed=True)
    except Exception as exc:  # noqa: BLE001 - an internal error is reported for this file, never fatal
        if getattr(project, "strict", False):
            raise
        return FileResult([_meta(path, "PC004", f"{type(exc).__name__}: {exc}")], analyzed=True)


def _analyze_tree(path: str, text: str, tree, project, extra_names: frozenset[str]) -> FileResult:
    module = project.analysis(path, text, tree)
    if module is None:
        return FileResult([_meta(path, "PC004", "module could not be built")], analyzed=True)
    module.run(extra_names)
    found = [] if module.dead else list(module.diagnostics)  # (its code never runs)
    for dep in sorted(module.failed_deps):
        code, detail, line, col = project.failed[dep]
        found.append(_meta(display_path(dep), code, detail, line, col))
    return FileResult(found, sorted(d for d in module.deps if d != path), True, module.param_sink_functions(),
                      writes=module.state_writes)


# The parser accepts expressions about 3,000 levels deep (at the default recursion limit);
# the analysis recurses a few frames per level. It runs on a thread of its own with a large
# stack and a recursion limit to match, so everything CPython compiles is analysed.
DEEP_RECURSION_LIMIT = 30_000
DEEP_STACK_BYTES = 256 * 1024 * 1024  # address space reserved, not memory used
_DEEP: dict = {}


def in_deep_stack(func, *args):
    """``func(*args)`` on this process's deep-stack thread, with the raised recursion limit."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    executor = _DEEP.get(os.getpid())  # threads do not survive a fork: one executor per process
    if executor is None:
        import threading

        previous = threading.stack_size(DEEP_STACK_BYTES)
        try:
            executor = _DEEP[os.getpid()] = ThreadPoolExecutor(1, thread_name_prefix="promptlint-analysis")
            executor.submit(lambda: None).result()  # start the thread while the stack size is set
        finally:
            threading.stack_size(previous)

    def call():
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEEP_RECURSION_LIMIT))
        try:
            return func(*args)
        finally:
            sys.setrecursionlimit(limit)

    return executor.submit(call).result()


def release_deep_stack() -> None:
    """Stop this process's deep-stack thread (at the end of a run: a later run may fork workers,
    and a process should not fork while it has threads)."""
    executor = _DEEP.pop(os.getpid(), None)
    if executor is not None:
        executor.shutdown(wait=True)


# --------------------------------------------------------------------- workers
_WORKER: dict = {}


def _worker_init(settings: Settings, roots: list[str], strict: bool) -> None:
    _WORKER["project"] = _make_project(settings, roots, strict)
    _WORKER["max_bytes"] = settings.max_file_bytes


def _make_project(settings: Settings, roots: list[str], strict: bool):
    from promptlint.lint.catalog import load_catalog, rule_files
    from promptlint.lint.project import Project

    catalog = load_catalog(rule_files(settings), settings.memory_files)
    return Project(catalog, roots, strict=strict, max_file_bytes=settings.max_file_bytes, base=settings.root)


class _QuietHeap:
    """Analyse a file with Python's cyclic garbage collector off.

    A worker keeps every module it parsed (ASTs and summaries: millions of small objects that
    live to the end of the run). Left on, the collector rescans them again and again as the heap
    grows: on a 4,000-file tree it cost more than parsing, and the first file of a framework
    (which pulls in hundreds of helper modules) took 2.4 times as long. So the collector is off
    while a file is analysed, and what the file left is kept: ``gc.freeze`` moves it out of the
    collector's sight (``gc.unfreeze`` at the end of the run hands it back). Collecting the young
    generation after each file cost more than the few cycles it freed (agno, 3,200 files: 12.4 s
    median without it, 13.7 s with it, 52 MiB more at the peak).
    """

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc) -> None:
        gc.freeze()
        if self.was_enabled:
            gc.enable()


def _first_pass(path: str) -> tuple[str, FileResult, str]:
    """Read one file, note its imports, analyse it if it may hold a sink."""
    text, problem = read_text(path, _WORKER["max_bytes"])
    if problem is not None:
        return path, FileResult([problem]), ""
    project = _WORKER["project"]
    result = FileResult()
    if project.catalog.might_contain_sink(text):
        with _QuietHeap():
            result = analyze_file(path, text, project)
    return path, _noted(result, text), _imported_modules(text)


def _second_pass(item: tuple[str, frozenset[str]]) -> tuple[str, FileResult, str]:
    """Analyse a caller of functions that carry parameters into sinks."""
    path, extra_names = item
    text, problem = read_text(path, _WORKER["max_bytes"])
    if problem is not None:
        return path, FileResult([problem]), ""
    with _QuietHeap():
        result = analyze_file(path, text, _WORKER["project"], extra_names)
    if [d.code for d in result.diagnostics] == ["PC001"]:
        # A caller that does not parse passes nothing on. Whether it parses is said only of files
        # that may hold a sink themselves, so a file gets one verdict alone or in its folder (a
        # project generator's `{{name}}` template is neither).
        result = FileResult(analyzed=True)
    return path, _noted(result, text), _imported_modules(text)


def _noted(result: FileResult, text: str) -> FileResult:
    """What the rest of the run needs from a file's text besides its analysis."""
    result.has_marker = "promptlint:" in text
    result.writes = {**written_fields(text), **result.writes}  # the analysis knows what was written
    return result


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells, else all)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(jobs: int | None, files: int) -> int:
    """Worker processes for ``files`` files: ``jobs`` (default: every usable core), clamped to
    the usable cores and to the work (at least ``PARALLEL_THRESHOLD // 2`` files per worker;
    below ``PARALLEL_THRESHOLD`` files one process does it all), as ruff and pytest-xdist do.
    More processes than cores only add start-up and switching costs."""
    if files < PARALLEL_THRESHOLD:
        return 1
    return max(1, min(jobs or usable_cores(), usable_cores(), files // (PARALLEL_THRESHOLD // 2)))


def deal(items: list, jobs: int) -> list[list[list]]:
    """The batches each of ``jobs`` workers runs, in order: batches of neighbouring items (they
    share helper modules), dealt round-robin so that every worker gets a share of each part of
    the tree. A function of the items and the number of workers only."""
    size = max(1, len(items) // (jobs * CHUNKS_PER_JOB))
    batches = [items[i:i + size] for i in range(0, len(items), size)]
    return [batches[number::jobs] for number in range(jobs)]


def _serve(conn, settings: Settings, roots: list[str], strict: bool) -> None:
    """A worker process: each task is ``(function, batches)``; one message back per batch, then
    ``("end",)``. An exception goes back as ``("error", exc)`` (strict runs re-raise it)."""
    try:
        _worker_init(settings, roots, strict)
        broken = None
    except Exception as exc:  # noqa: BLE001 - e.g. a rule file that does not load: said on each task
        broken = exc
    while True:
        task = conn.recv()
        if task is None:
            break
        func, batches = task
        try:
            if broken is not None:
                raise broken
            for batch in batches:
                conn.send(("ok", [func(item) for item in batch]))
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
            try:
                conn.send(("error", exc))
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
            continue
        conn.send(("end",))
    conn.close()


class _Workers:
    """Runs file tasks in this process or on worker processes kept for the whole run, so later
    rounds reuse the helper-module summaries the workers already built.

    Which worker analyses which file, and in what order, is fixed by the file list and the
    number of workers, never by timing: a worker's summaries of helper modules depend on the
    files it met before, so a first-come pool printed different findings from run to run on
    large trees. Batches of neighbouring files (which share helpers) are dealt round-robin.
    """

    def __init__(self, settings: Settings, roots: list[str], jobs: int | None, strict: bool, files: int):
        self.settings, self.roots, self.strict = settings, roots, strict
        self.jobs = worker_count(jobs, files)
        self.parallel = self.jobs > 1
        self.processes: list = []
        self.conns: list = []
        self.idle = True  # no task under way: the workers can be asked to stop

    def map(self, func, items: list):
        if not items:
            return  # a warm run: no catalog to load, no pool to start
        if not self.parallel:
            if "project" not in _WORKER or _WORKER.get("owner") is not self:
                _worker_init(self.settings, self.roots, self.strict)
                _WORKER["owner"] = self
            yield from map(func, items)
            return
        if not self.processes:
            self._start()
        self.idle = False
        for conn, batches in zip(self.conns, deal(items, self.jobs)):
            conn.send((func, batches))
        from multiprocessing.connection import wait

        busy = list(self.conns)
        while busy:
            for conn in wait(busy):
                try:
                    message = conn.recv()
                except EOFError:
                    raise RuntimeError("a lint worker process ended unexpectedly") from None
                if message[0] == "ok":
                    yield from message[1]
                elif message[0] == "end":
                    busy.remove(conn)
                else:
                    raise message[1]
        self.idle = True

    def _start(self) -> None:
        import multiprocessing

        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        for _ in range(self.jobs):
            mine, theirs = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(theirs, self.settings, self.roots, self.strict), daemon=True)
            process.start()
            theirs.close()
            self.processes.append(process)
            self.conns.append(mine)

    def close(self) -> None:
        _WORKER.pop("owner", None)
        for conn, process in zip(self.conns, self.processes):
            if self.idle:
                try:
                    conn.send(None)
                except OSError:  # the worker is gone already
                    pass
            else:  # interrupted mid-task: the worker may be blocked writing results nobody reads
                process.terminate()
        for conn, process in zip(self.conns, self.processes):
            process.join()
            conn.close()
        self.processes, self.conns = [], []


# ------------------------------------------------------------------------- runs
def _imported_modules(text: str) -> str:
    """Names a file imports (modules and imported names), space-separated for a compact cache."""
    names = set()
    for m in _IMPORT_NAMES.finditer(text):
        if m.group(1):
            module, imported = _from_import(m)
            base = module.lstrip(".")
            if base:
                names.add(base.rsplit(".", 1)[-1])
            names.update(imported)
        else:
            for part in re.split(r"[,\s]+", m.group(3)):
                if part and part != "as":
                    names.add(part.rsplit(".", 1)[-1])
    return " ".join(sorted(names))


def _from_import(m: re.Match) -> tuple[str, list[str]]:
    """The module and the names of a ``from module import a, b as c`` that ``_IMPORT_NAMES`` matched."""
    return m.group(1), [part for part in re.split(r"[,\s()]+", m.group(2)) if part and part != "as"]


def _offered_names(results: dict[str, FileResult]) -> dict[str, frozenset[str]]:
    """What importing a name offers a caller: a module's stem offers the functions that module
    carries into sinks, a base class (`+BaseLLM`) the methods of its subclasses there."""
    offered: dict[str, set[str]] = {}
    for path, result in results.items():
        names = [n for n in result.param_sink_functions if not n.startswith("+")]
        for key in [_stem(path), *(n[1:] for n in result.param_sink_functions if n.startswith("+"))]:
            offered.setdefault(key, set()).update(names)
    return {key: frozenset(names) for key, names in offered.items() if names}


_CLASS_BASES = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)


def _calls_into(path: str, imported: str, offered: dict[str, frozenset[str]], reaching: set[str],
                imported_by_stem: dict[str, set[str]], text_of) -> frozenset[str]:
    """The functions a file may call into: those offered by the modules (or base classes) it
    imports, when it names one of them; empty when it names none.
    A subclass also holds what its base class's module imports (`llm: BaseLLM` declared there,
    `self.llm.generate(prompt)` called here). ``reaching``: the modules whose own imports offer
    something (only a file that imports one of those or an offering module is read)."""
    names = set(imported.split())
    if names.isdisjoint(offered) and names.isdisjoint(reaching):
        return frozenset()
    text = text_of(path)
    if text is None:
        return frozenset()
    bases = {word for m in _CLASS_BASES.finditer(text) for word in re.findall(r"\w+", m.group(1))} & names
    if bases:
        for module, imported in (_from_import(m) for m in _IMPORT_NAMES.finditer(text) if m.group(1)):
            if not bases.isdisjoint(imported):  # a module a base class comes from
                names.update(imported_by_stem.get(module.rsplit(".", 1)[-1], ()))
    functions = frozenset().union(*(offered[n] for n in names if n in offered))
    return functions if functions and names_test(functions).search(text) else frozenset()


def _stem(path: str) -> str:
    name = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(path)) if name == "__init__" else name


def lint_paths(paths: list[str], settings: Settings, *, use_cache: bool = True, jobs: int | None = None,
               progress=None, strict: bool = False) -> LintReport:
    """Lint files and folders; the one entry point the CLI and the tests use."""
    from promptlint.lint.catalog import known_codes, load_rule_docs
    # Not project.py: a warm run would import the whole analysis package for this one function.
    from promptlint.lint.discover import collect_files, import_roots

    unreadable: list[tuple[str, str]] = []
    files = collect_files(list(paths), settings, unreadable)
    # Fixed before any analysis: what an import resolves to must not depend on scheduling.
    roots = sorted({*(os.path.abspath(r) for r in settings.src), *import_roots(files)})
    cache = None
    if use_cache:
        import hashlib

        from promptlint.lint.catalog import settings_fingerprint
        from promptlint.lint.result_cache import CACHE_DIR, LintCache

        # Results depend on the import roots too: a new top-level folder may change what resolves.
        roots_digest = hashlib.sha256("\0".join(roots).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        cache = LintCache(os.path.join(os.path.abspath(settings.root or "."), CACHE_DIR),
                          f"{settings_fingerprint(settings)}-{roots_digest}")
    results: dict[str, FileResult] = {}
    imports: dict[str, str] = {}
    texts: dict[str, str | None] = {}  # read once in this process (rounds, lifetimes)

    def text_of(path: str) -> str | None:
        if path not in texts:
            texts[path] = read_text(path, settings.max_file_bytes)[0]
        return texts[path]

    pending: list[str] = []
    for path in files:
        hit = cache.lookup(path) if cache is not None else None
        if hit is not None:
            results[path], imports[path] = hit
            continue
        pending.append(path)
    workers = _Workers(settings, roots, jobs, strict, len(pending))
    analyzed_count = 0
    done = len(files) - len(pending)
    try:
        for path, result, names in workers.map(_first_pass, sorted(pending)):
            results[path], imports[path] = result, names
            analyzed_count += result.analyzed
            done += 1
            if progress:
                progress(done, len(files))
        # Callers of functions that carry a parameter into a sink are analysed too, in rounds
        # until no module offers a new such function. Only files that import the module (or the
        # base class a caller holds an adapter as: `+BaseLLM`, or subclass a class whose module
        # does) and name one of its functions can pass anything into it.
        # (Every file a cache hit: the run that stored them made these rounds with the same files.)
        seen: frozenset[tuple[str, str]] = frozenset()
        imported_by_stem: dict[str, set[str]] = {}  # (a file's imports are the same in every round)
        for path in files if pending else ():
            imported_by_stem.setdefault(_stem(path), set()).update(imports.get(path, "").split())
        for _ in range(20 if pending else 0):
            offered = _offered_names(results)
            pairs = frozenset((key, name) for key, names in offered.items() for name in names)
            if pairs <= seen:
                break
            seen = pairs
            reaching = {stem for stem, names in imported_by_stem.items() if not names.isdisjoint(offered)}
            todo = [(p, called) for p in files if not results[p].analyzed and not results[p].diagnostics
                    for called in [_calls_into(p, imports.get(p, ""), offered, reaching, imported_by_stem, text_of)]
                    if called]
            for path, result, names in workers.map(_second_pass, todo):
                results[path], imports[path] = result, names
                analyzed_count += 1
                if path not in pending:
                    pending.append(path)
    finally:
        workers.close()
        release_deep_stack()
        gc.unfreeze()  # what this process froze (a run without a pool) is collectable again
    if cache is not None:
        for path in pending:
            if path in results:
                cache.store(path, results[path], imports.get(path, ""))
        cache.save()
    from promptlint.lint.config import is_selected

    diagnostics: list[Diagnostic] = [
        d for folder, reason in unreadable
        for d in [_meta(folder, "PC003", f"cannot read folder ({reason}); the files in it were not linted")]
        if is_selected(d.code, d.path, settings)]

    writes = {display_path(path): result.writes for path, result in results.items() if result.writes}
    docs = load_rule_docs()
    lifetimes = None
    for path in files:
        result = results[path]
        found = result.diagnostics
        if found:
            from promptlint.lint.lifetimes import Lifetimes

            lifetimes = lifetimes or Lifetimes(files, text_of)
            found = [d for d in resolve_run_state(found, writes, docs) if not lifetimes.computed_once(d)]
        if found or result.has_marker:
            text = text_of(path)
            if text is not None:
                from promptlint.lint.suppress import apply_suppressions

                found = apply_suppressions(path, text, list(found), known_codes())
        diagnostics.extend(_unfixable_in_notebooks(d) for d in found if is_selected(d.code, d.path, settings))
    unique = {(d.path, d.line, d.column, d.code, d.message, d.trace): d for d in diagnostics}
    return LintReport(sorted(one_per_flow(unique.values()), key=Diagnostic.sort_key), len(files), analyzed_count,
                      len(files) - len(pending))


def _unfixable_in_notebooks(d: Diagnostic) -> Diagnostic:
    """A notebook's code is JSON strings: an edit at a code column would break the file (ruff
    does not fix notebooks in place either)."""
    if d.fix is not None and (is_notebook(d.path) or is_notebook(d.fix.path)):
        return replace(d, fix=None)
    return d


def lint_source(text: str, path: str = "example.py", settings: Settings | None = None) -> list[Diagnostic]:
    """Lint one source string as if it were a file of its own (rule examples, fuzzing)."""
    import tempfile

    settings = settings or Settings()
    with tempfile.TemporaryDirectory(prefix="promptlint-") as tmp:
        target = os.path.join(tmp, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
        report = lint_paths([target], Settings(**{**settings.__dict__, "root": tmp}), use_cache=False, jobs=1)
    prefix = tmp + os.sep
    return [_relocate(d, prefix) for d in report.diagnostics]


def _relocate(d: Diagnostic, prefix: str) -> Diagnostic:
    strip = (lambda p: p[len(prefix):] if p.startswith(prefix) else p)
    fix = replace(d.fix, path=strip(d.fix.path)) if d.fix is not None else None
    return replace(d, path=strip(d.path), trace=tuple(replace(s, path=strip(s.path)) for s in d.trace), fix=fix)
