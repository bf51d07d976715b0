"""The ``lint``, ``rules`` and ``explain`` commands (docs/cli.md).

Exit codes: 0 clean, 1 findings (or, with ``--diff``, edits to show), 2 usage, config or
internal error. Errors print one line on stderr, never a traceback (set
``PROMPTLINT_DEBUG=1`` to see one).
"""

from __future__ import annotations

import os
import sys
import time

import click

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split_codes(values: tuple[str, ...]) -> list[str] | None:
    if not values:
        return None
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def _fail(message: str) -> None:
    # One line, whatever the message holds: scripts and CI logs read stderr line by line.
    import re

    one_line = re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", message.strip())
    click.echo(f"promptlint: error: {one_line}", err=True)
    sys.exit(EXIT_ERROR)


def _guarded(run):
    """Run a command body; map known failures to one stderr line and exit code 2."""
    from promptlint.lint.catalog import CatalogError
    from promptlint.lint.config import ConfigError

    try:
        return run()
    except (ConfigError, CatalogError) as exc:
        _fail(str(exc))
    except FileNotFoundError as exc:
        _fail(str(exc) if not exc.filename else f"{exc.filename}: {exc.strerror}")
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(EXIT_CLEAN)
    except OSError as exc:  # -o into a missing folder, a full disk...: the OS said why
        if os.environ.get("PROMPTLINT_DEBUG"):
            raise
        _fail(f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else f"{type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        click.echo("promptlint: interrupted", err=True)
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - an internal error is exit 2 with one line
        if os.environ.get("PROMPTLINT_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set PROMPTLINT_DEBUG=1 for a traceback)")


# ------------------------------------------------------------------------- writing
def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to the regular file ``path`` through a temp file in the same folder and ``os.replace``."""
    from promptlint.lint.writing import replace_atomically

    replace_atomically(path, data)


class Progress:
    """``Linting 120/3168 files`` on a TTY stderr, after the run has taken half a second."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.start < 0.5 or (now - self.last < 0.1 and done < total):
            return
        self.last = now
        self.shown = True
        sys.stderr.write(f"\rLinting {done}/{total} files")
        sys.stderr.flush()

    def clear(self) -> None:
        """Erase the progress line, if one was shown."""
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


# ----------------------------------------------------------------------------- fixes
def _fix_file(diagnostic) -> str:
    """The file a fix edits: ``Fix.path`` when the engine sets it, else the trace step at its range."""
    fix = diagnostic.fix
    path = getattr(fix, "path", None)
    if path:
        return path
    on_line = [s for s in diagnostic.trace if s.line == fix.line]
    exact = [s for s in on_line if s.column == fix.column]
    if exact:
        return exact[0].path
    return on_line[0].path if on_line else diagnostic.path


def planned_fixes(diagnostics) -> dict[str, list]:
    """Safe fixes grouped by the file they edit, without duplicates, in file order."""
    from promptlint.lint.output import is_fixable

    plan: dict[str, dict] = {}
    for d in diagnostics:
        if is_fixable(d):
            fix = d.fix
            key = (fix.kind, fix.line, fix.column, fix.end_line, fix.end_column)
            plan.setdefault(_fix_file(d), {}).setdefault(key, fix)
    return {path: list(fixes.values()) for path, fixes in sorted(plan.items())}


def apply_fixes(plan: dict[str, list], *, write: bool, allowed: list[str] | None = None) -> tuple[list[str], list[str]]:
    """Apply planned fixes; returns (unified diffs, error lines). Writes only when ``write``.

    A file outside ``allowed`` (the paths given on the command line), a read-only file or one
    that would not parse after fixing is reported as ``path: not fixed: reason`` and left
    alone, with ``--diff`` as with ``--fix``.
    """
    import ast
    import difflib

    diffs: list[str] = []
    errors: list[str] = []
    if not plan:
        return diffs, errors
    try:
        from promptlint.lint.fix import FixError, fix_source
    except ImportError as exc:
        _fail(f"fixes are not available in this installation ({exc})")
    from promptlint.lint.source import SourceError, declared_encoding, decode_source
    from promptlint.lint.writing import why_not_writable, write_source

    for path, fixes in plan.items():
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
            text = decode_source(raw)
            fixed = fix_source(text, fixes)
            if fixed == text:
                continue
            ast.parse(fixed)  # a fix never leaves a file that does not parse
        except (OSError, SourceError, FixError, SyntaxError, ValueError) as exc:
            errors.append(f"{path}: not fixed: {exc}")
            continue
        refusal = why_not_writable(path, allowed)
        if refusal is not None:
            errors.append(f"{path}: not fixed: {refusal}")
            continue
        diffs.append("".join(difflib.unified_diff(
            text.splitlines(keepends=True), fixed.splitlines(keepends=True), f"a/{path}", f"b/{path}")))
        if write:
            try:
                write_source(path, fixed.encode(declared_encoding(raw)))
            except OSError as exc:
                diffs.pop()
                errors.append(f"{path}: not fixed: {exc.strerror or exc}")
    return diffs, errors


# ------------------------------------------------------------------------------ lint
@click.command("lint")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text",
              show_default=True, help="Output format.")
@click.option("--config", "config_path", type=click.Path(), help="Read this config file instead of searching.")
@click.option("--select", multiple=True, help="Codes or prefixes to report (comma-separated); replaces the config.")
@click.option("--ignore", multiple=True, help="Codes or prefixes not to report (comma-separated); adds to the config.")
@click.option("--extend-select", multiple=True, help="Codes or prefixes to report in addition to the selection.")
@click.option("--exclude", multiple=True, help="Exclude globs (comma-separated); replace the configured/default ones.")
@click.option("--extend-exclude", multiple=True, help="Exclude globs added to the configured/default ones.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per code instead of the findings.")
@click.option("-q", "--quiet", is_flag=True, help="Print only findings (no summary, no fix report).")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False), help="Write the report to this file (regular files atomically).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write .promptlint_cache/.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default and maximum: the usable cores).")
@click.option("--fix", is_flag=True, help="Apply safe fixes, then report what remains.")
@click.option("--diff", is_flag=True, help="Print the safe fixes as a unified diff; change nothing.")
def lint(paths, fmt, config_path, select, ignore, extend_select, exclude, extend_exclude, exit_zero, statistics,
         quiet, output_file, no_cache, jobs, fix, diff) -> None:
    """Find volatile values that reach stable prompt layers (default path: .)."""
    paths = list(paths) or ["."]
    overrides = {
        "select": _split_codes(select), "ignore": _split_codes(ignore), "extend-select": _split_codes(extend_select),
        "exclude": _split_codes(exclude), "extend-exclude": _split_codes(extend_exclude),
    }
    if fix and diff:
        raise click.UsageError("--fix and --diff cannot be used together")
    if select and not overrides["select"]:
        raise click.UsageError("--select needs at least one rule code or prefix (e.g. --select PC)")
    code = _guarded(lambda: _run_lint(paths, fmt, config_path, overrides, exit_zero, statistics, quiet, output_file,
                                      not no_cache, jobs, fix, diff))
    sys.exit(code)


def _run_lint(paths, fmt, config_path, overrides, exit_zero, show_statistics, quiet, output_file, use_cache, jobs,
              fix, diff) -> int:
    from promptlint.lint.catalog import load_rule_docs
    from promptlint.lint.config import load_settings
    from promptlint.lint.engine import lint_paths
    from promptlint.lint.output import render, render_text, statistics

    settings = load_settings(paths, config_path, overrides)
    progress = Progress() if sys.stderr is not None and sys.stderr.isatty() else None

    def run():
        try:
            return lint_paths(paths, settings, use_cache=use_cache, jobs=jobs, progress=progress)
        finally:
            if progress is not None:
                progress.clear()

    report = run()
    if diff:
        diffs, errors = apply_fixes(planned_fixes(report.diagnostics), write=False, allowed=paths)
        for line in errors:
            click.echo(line, err=True)
        _emit("".join(diffs), output_file)
        if not quiet:
            click.echo(f"Would fix {len(diffs)} file{'s' if len(diffs) != 1 else ''}.", err=True)
        return EXIT_FINDINGS if diffs and not exit_zero else EXIT_CLEAN
    fixed_note = ""
    if fix:
        diffs, errors = apply_fixes(planned_fixes(report.diagnostics), write=True, allowed=paths)
        for line in errors:
            click.echo(line, err=True)
        if diffs:
            before = len(report.diagnostics)
            report = run()
            fixed_note = f"Fixed {before - len(report.diagnostics)} finding(s) in {len(diffs)} file(s)."
    diagnostics = report.diagnostics
    to_stdout = output_file is None
    color = (to_stdout and fmt == "text" and sys.stdout is not None and sys.stdout.isatty()
             and "NO_COLOR" not in os.environ)
    if show_statistics:
        body = statistics(diagnostics, "json" if fmt == "json" else "text")
    elif fmt == "text":
        body = render_text(diagnostics, color=color, summary=not quiet)
        if fixed_note and not quiet:
            body += fixed_note + "\n"
    else:
        body = render(diagnostics, fmt, rules=load_rule_docs(), root=settings.root)
    _emit(body, output_file)
    return EXIT_FINDINGS if diagnostics and not exit_zero else EXIT_CLEAN


def _silence_stdout() -> None:
    # The reader went away (`promptlint rules | head`): drop the rest of the output quietly.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _emit(body: str, output_file: str | None) -> None:
    if output_file is None:
        if sys.stdout is None:  # started with stdout closed (`>&-`): nowhere to print
            return
        try:
            click.echo(body, nl=False)
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_stdout()
    else:
        from promptlint.lint.writing import write_report

        write_report(output_file, body.encode("utf-8", "backslashreplace"))


# ----------------------------------------------------------------------------- rules
def _fixable(doc) -> bool:
    return doc.fixable


@click.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules(fmt) -> None:
    """List every rule code with its name, family, severity and whether it is fixable."""

    def run():
        import json

        from promptlint.lint.catalog import load_rule_docs

        docs = list(load_rule_docs().values())
        if fmt == "json":
            rows = [{"code": d.code, "name": d.name, "family": d.family, "severity": d.severity,
                     "fixable": _fixable(d), "summary": d.summary} for d in docs]
            click.echo(json.dumps(rows, indent=2))
            return
        width = max(len(d.name) for d in docs)
        click.echo(f"{'CODE':<7} {'NAME':<{width}} {'FAMILY':<10} {'SEVERITY':<8} FIXABLE")
        for d in docs:
            click.echo(f"{d.code:<7} {d.name:<{width}} {d.family:<10} {d.severity:<8} {'yes' if _fixable(d) else 'no'}")

    _guarded(run)


# --------------------------------------------------------------------------- explain
def explain_text(doc) -> str:
    """A rule's documentation in ruff's fixed sections."""
    parts = [f"{doc.code} {doc.name} ({doc.family}{f': {doc.sources} values' if doc.sources else ''}, {doc.severity})", "",
             "What it does", _indent(doc.what), "", "Why is this bad?", _indent(doc.why)]
    if doc.example.strip():
        parts += ["", "Example", _indent(doc.example.rstrip())]
    if doc.use_instead.strip():
        parts += ["", "Use instead", _indent(doc.use_instead.rstrip())]
    parts += ["", "Fix safety", _indent(doc.fix_safety)]
    return "\n".join(parts) + "\n"


def _indent(text: str) -> str:
    return "\n".join(("    " + line) if line.strip() else "" for line in text.splitlines())


@click.command("explain")
@click.argument("code")
def explain(code) -> None:
    """Print the documentation of a rule (by code, e.g. PC101, or by name)."""

    def run():
        import difflib

        from promptlint.lint.catalog import load_rule_docs

        docs = load_rule_docs()
        wanted = code.strip()
        doc = docs.get(wanted.upper()) or next((d for d in docs.values() if d.name == wanted.lower()), None)
        if doc is None:
            candidates = list(docs) + [d.name for d in docs.values()]
            close = difflib.get_close_matches(wanted.upper(), list(docs), n=3, cutoff=0.6)
            close += difflib.get_close_matches(wanted.lower(), candidates, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else "; see `promptlint rules`"
            _fail(f"unknown rule code {code!r}{hint}")
        click.echo(explain_text(doc), nl=False)

    _guarded(run)
