#!/usr/bin/env python3
"""Regenerate docs/rules/ from rules/codes.yaml (the drift test checks the result)."""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from promptlint.lint.rule_docs import render_all  # noqa: E402


def main() -> int:
    target = ROOT / "docs" / "rules"
    target.mkdir(parents=True, exist_ok=True)
    pages = render_all()
    for stale in target.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; docs are for everyone
        os.replace(tmp, target / name)
    print(f"wrote {len(pages)} pages to {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
