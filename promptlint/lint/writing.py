"""How ``lint`` writes files: the report (``-o``) and fixed sources (``--fix``).

A regular file is replaced atomically (a temporary file in the same folder, then
``os.replace``), so a crash never leaves half a file. Everything else is written the way every
command-line tool writes it:

* a **symlink** is followed: the file it points to is written (atomically when it is a
  regular file) and the link stays a link;
* a **FIFO, device node** or other special file is opened and written (``-o /dev/stdout``,
  ``-o /dev/null``, a named pipe), never replaced;
* a **new file** gets the mode the umask gives (``0666 & ~umask``, like ``>`` in a shell); an
  existing file keeps its mode;
* a **hard-linked** source file (``--fix``) is rewritten in place, so every name of it sees
  the fix; replacing it would split the links.
"""

from __future__ import annotations

import os
import secrets
import stat


def replace_atomically(path: str, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path``.

    The new file gets ``mode`` (default: the mode of the file it replaces, else what the umask
    gives a new file).
    """
    directory, name = os.path.split(os.path.abspath(path))
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = None
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: never open something (or a link) planted under the temporary name;
    # 0o666 minus the umask, as a shell's ``>`` creates files.
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as exc:  # name the file the user asked for, not our temporary name
        raise type(exc)(exc.errno, exc.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_report(path: str, data: bytes) -> None:
    """Write a report to ``path`` (``-o``): see the module docstring for what happens to links,
    special files and new files."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is None or stat.S_ISREG(mode):
        replace_atomically(target, data)
    elif stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "is a directory", path)
    else:
        with open(path, "wb") as handle:
            handle.write(data)


def write_source(path: str, data: bytes) -> None:
    """Write a fixed source file: through a symlink to its target, in place when the file has
    other hard links, else atomically; the file keeps its mode."""
    target = os.path.realpath(path)
    st = os.stat(target)
    if st.st_nlink > 1:
        with open(target, "r+b") as handle:
            handle.write(data)
            handle.truncate()
        return
    replace_atomically(target, data, stat.S_IMODE(st.st_mode))


def why_not_writable(path: str, allowed: list[str] | None) -> str | None:
    """Why ``--fix`` must leave ``path`` alone, or None when it may edit it.

    ``allowed`` are the paths given on the command line: a file whose real location (links
    resolved) is outside all of them is not edited — a helper module found through ``src``
    or a link pointing out of the tree. A file without any write permission bit is read-only
    even for root.
    """
    target = os.path.realpath(path)
    if allowed is not None and not any(_within(target, os.path.realpath(a)) for a in allowed):
        return "outside the paths given on the command line (name it, or its folder, to fix it)"
    try:
        st = os.stat(target)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        return "read-only file"
    return None


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)
