"""Settings that turn on the bundled opt-in rule files, for tests of the rules they hold."""

from __future__ import annotations

from promptlint.lint.catalog import rules_dir
from promptlint.lint.diagnostic import Settings


def opt_in(name: str) -> Settings:
    """Settings with the bundled ``rules/optional/<name>.yaml`` (``optional:<name>`` in a config)."""
    return Settings(rule_files=(str(rules_dir() / "optional" / f"{name}.yaml"),))


#: Orderings fixed within a process (PC501, PC502 of dicts built from them): opt-in.
ORDERING = opt_in("ordering")

#: The same in a project's pyproject.toml, for tests that run the real CLI in a tree.
ORDERING_PYPROJECT = '[tool.promptlint]\nrule-files = ["optional:ordering"]\n'
