"""Import a file that is not on the path (a script, a fixture) as a module, for tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_file(name: str, path: Path) -> ModuleType:
    """``path`` imported as module ``name`` (registered, so its dataclasses resolve)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
