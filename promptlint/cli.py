"""The ``promptlint`` command line.

Subcommands live in their own modules and are imported only when invoked, so that
``promptlint lint one_file.py`` does not pay for the assembler, the emulator or any SDK.
Exit codes are API (docs/cli.md): 0 clean, 1 findings / check failed, 2 usage, config or
internal error.
"""

from __future__ import annotations

import importlib
import sys

import click

from promptlint import __version__

# name -> "module:attribute" of a click.Command; one place lists every subcommand.
SUBCOMMANDS: dict[str, str] = {
    "lint": "promptlint.lint.cli:lint",
    "rules": "promptlint.lint.cli:rules",
    "explain": "promptlint.lint.cli:explain",
    "hash": "promptlint.golden.gate:hash_command",
    "golden": "promptlint.golden.gate:golden_group",
    "emulate": "promptlint.caching.server:emulate_command",
    "simulate": "promptlint.caching.simulate:simulate_command",
}

SUMMARIES: dict[str, str] = {
    "lint": "Find volatile values that reach stable prompt layers.",
    "rules": "List the rule codes.",
    "explain": "Print the documentation of a rule code.",
    "hash": "Print prefix hashes of a prompt contract.",
    "golden": "Check or update golden prefix-hash files.",
    "emulate": "Run an offline prompt-cache emulator (Anthropic, OpenAI, Gemini HTTP APIs).",
    "simulate": "Predict cache reads/writes for recorded requests.",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing help must not import every subcommand module.
        with formatter.section("Commands"):
            formatter.write_dl([(name, SUMMARIES.get(name, "")) for name in SUBCOMMANDS])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="promptlint")
def cli() -> None:
    """promptlint keeps LLM prompt caches warm.

    Exit codes: 0 clean, 1 findings (or a failed check), 2 usage, config or internal error.
    """


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point; maps click's usage errors to exit code 2."""
    try:
        cli.main(args=argv, prog_name="promptlint", standalone_mode=True)
    except SystemExit as exc:  # pragma: no cover - click always exits
        code = exc.code
        _exit_now(code if isinstance(code, int) else (0 if code is None else 2))


def _exit_now(code: int) -> None:
    """Flush the output and end the process without tearing the heap down.

    A lint run without a worker pool keeps every module it analysed (a large tree: millions of
    objects in reference cycles); the interpreter's orderly shutdown spent longer freeing them
    than the run took. Everything the command writes is written and flushed by now (reports go
    through an atomic rename), so nothing is lost by skipping it."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be written
            pass
    os._exit(code)
