"""Nothing of the build machine in the product: no tracked file names an absolute local path.

A user has no ``work`` or ``root`` folder at the top of the disk, nor this checkout's location, nor
the home folder of whoever wrote the file. Cite public pages and versions instead. Obvious examples stay allowed:
a home folder of a placeholder user (``/home/me/project``, ``/Users/alice``).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MACHINE_ROOTS = ("work", "root", "tmp", "mnt", "opt/pypi", "var/folders", "private/tmp")
"""Top folders that are only ever this machine's (or a temporary one's), never a user's."""
HOME_ROOTS = ("home", "Users")
PLACEHOLDER_USERS = frozenset({"me", "user", "you", "alice", "bob", "example", "username", "USER", "name"})

# An absolute path starts at a boundary: not inside a word, a URL's host/path or a relative path.
_BOUNDARY = r"(?<![\w.~/\\-])"
_SEGMENT = r"[A-Za-z0-9._@+-]+"
MACHINE_PATH = re.compile(_BOUNDARY + r"/(?:" + "|".join(re.escape(r) for r in MACHINE_ROOTS) + r")(?=/|\b)(?:/" + _SEGMENT + ")*")
HOME_PATH = re.compile(_BOUNDARY + r"/(?:" + "|".join(HOME_ROOTS) + r")/(" + _SEGMENT + r")")
WINDOWS_HOME = re.compile(r"\b[A-Za-z]:\\{1,2}Users\\{1,2}(" + _SEGMENT + r")", re.IGNORECASE)


def tracked_files() -> list[Path]:
    """The files git tracks (a fresh clone's view); every file but VCS and environment folders without git."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
        return [ROOT / name for name in out.decode("utf-8", "surrogateescape").split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        skip = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", ".hypothesis"}
        return [Path(d) / f for d, dirs, files in os.walk(ROOT) for f in files
                if not (dirs.__setitem__(slice(None), [x for x in dirs if x not in skip]))]


def readable(text: str) -> str:
    """What a path looks like once the usual escapes are undone (JSON ``\\/``, URL ``%2F``, ``file://``)."""
    return text.replace("\\/", "/").replace("%2F", "/").replace("%2f", "/").replace("file://", "")


def machine_paths(text: str, forbidden: tuple[str, ...] = ()) -> list[str]:
    """The absolute local paths ``text`` names, besides placeholder examples; ``forbidden`` are
    extra literal paths (this checkout, this user's home) that must not appear at all."""
    text = readable(text)
    found = [m.group(0) for m in MACHINE_PATH.finditer(text)]
    found += [m.group(0) for m in HOME_PATH.finditer(text) if m.group(1) not in PLACEHOLDER_USERS]
    found += [m.group(0) for m in WINDOWS_HOME.finditer(text) if m.group(1) not in PLACEHOLDER_USERS]
    found += [path for path in forbidden if path in text]
    return found


def local_literals() -> tuple[str, ...]:
    """This checkout's absolute location and this user's home, wherever they are."""
    paths = {str(ROOT), str(ROOT.parent)}
    home = os.path.expanduser("~")
    if home.count("/") >= 2:  # a top-level home alone would match too much; MACHINE_ROOTS covers root's
        paths.add(home)
    return tuple(p for p in paths if p.count(os.sep) >= 2)


def _p(*parts: str) -> str:
    """An absolute path built at run time, so this file's own examples are not findings."""
    return "/" + "/".join(parts)


@pytest.mark.parametrize("text,expected", [
    (f"compiled from {_p('work', 'shared', 'reference', 'providers.md')}", [_p("work", "shared", "reference", "providers.md")]),
    (f"see file://{_p('root', 'notes.txt')}", [_p("root", "notes.txt")]),
    ('{"path": "\\/' + 'work\\/x"}', [_p("work", "x")]),
    (f"cache in {_p('tmp', 'data-gym-cache')}", [_p("tmp", "data-gym-cache")]),
    (f"written on {_p('home', 'jdoe', 'src', 'app.py')}", [_p("home", "jdoe")]),
    ("C:\\" + "Users\\jdoe\\app", ["C:\\" + "Users\\jdoe"]),
    ("an example: /home/me/project/pyproject.toml", []),
    ("https://example.com/work/root/tmp and ./work/x and src/tmp/y and a/home/b", []),
])
def test_the_detector_finds_machine_paths_and_spares_examples(text, expected):
    assert machine_paths(text) == expected


def test_the_checkout_location_is_found_whatever_it_is():
    here = str(ROOT)
    assert machine_paths(f"see {here}/docs", local_literals()) != []


def test_no_tracked_file_names_an_absolute_local_path():
    forbidden = local_literals()
    offenders = []
    for path in tracked_files():
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), 1):
            for found in machine_paths(line, forbidden):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {found}")
    assert not offenders, "absolute local paths in tracked files:\n" + "\n".join(offenders)
