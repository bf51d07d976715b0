"""``[tool.promptlint]`` configuration: finding it, validating it, merging the command line.

The configuration is found the way ruff finds its own: walk up from the first linted path to
the closest directory holding ``.promptlint.toml`` or ``promptlint.toml`` (keys at the top
level) or a ``pyproject.toml`` with a ``[tool.promptlint]`` table. ``--config`` names one file
instead. Relative paths in the file (``rule-files``, ``src``) are relative to its directory,
which is also ``Settings.root``: exclude and per-file-ignore globs match paths relative to it.

Every mistake is a ``ConfigError`` whose message names the file and the key; the CLI turns it
into one line on stderr and exit code 2. docs/configuration.md documents every key.
"""

from __future__ import annotations

import functools
import os

from promptlint.lint.diagnostic import Settings

#: Files that hold promptlint's keys at the top level, preferred in this order in one directory.
STANDALONE_FILES = (".promptlint.toml", "promptlint.toml")

#: key -> (Settings field, expected type). "list" means a list of strings.
_KEYS: dict[str, tuple[str, str]] = {
    "select": ("select", "list"),
    "ignore": ("ignore", "list"),
    "extend-select": ("extend_select", "list"),
    "exclude": ("exclude", "list"),
    "extend-exclude": ("extend_exclude", "list"),
    "per-file-ignores": ("per_file_ignores", "table"),
    "rule-files": ("rule_files", "list"),
    "memory-files": ("memory_files", "list"),
    "src": ("src", "list"),
    "max-file-bytes": ("max_file_bytes", "int"),
}
_SELECTOR_KEYS = ("select", "ignore", "extend-select")


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and the key."""


def _toml():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib


def _read_toml(path: str) -> dict:
    toml = _toml()
    try:
        with open(path, "rb") as handle:
            return toml.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror or exc}") from None
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: config file is not UTF-8: {exc.reason}") from None
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None


def _section(path: str, data: dict) -> dict | None:
    """The promptlint table of a parsed file, or None when the file has none."""
    if os.path.basename(path) == "pyproject.toml":
        tool = data.get("tool")
        table = tool.get("promptlint") if isinstance(tool, dict) else None
        if table is None:
            return None
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.promptlint] must be a table")
        return table
    return data


#: A ``rule-files`` entry naming a bundled opt-in file: ``optional:ordering`` is
#: ``rules/optional/ordering.yaml`` wherever promptlint is installed.
OPTIONAL_PREFIX = "optional:"


def _bundled_optional(where: str, name: str) -> str:
    from promptlint.lint.catalog import rules_dir

    folder = rules_dir() / "optional"
    stem = name[len(OPTIONAL_PREFIX):]
    known = sorted(p.stem for p in folder.glob("*.yaml"))
    if stem not in known:
        raise ConfigError(f"{where}: 'rule-files' entry {name!r} is not a bundled opt-in file "
                          f"(known: {', '.join(OPTIONAL_PREFIX + k for k in known)})")
    return str(folder / f"{stem}.yaml")


def find_config(start: str) -> tuple[str, dict] | None:
    """The closest config file at or above ``start`` and its promptlint table."""
    directory = os.path.abspath(start)
    if not os.path.isdir(directory):
        directory = os.path.dirname(directory)
    while True:
        for name in (*STANDALONE_FILES, "pyproject.toml"):
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                table = _section(candidate, _read_toml(candidate))
                if table is not None:
                    return candidate, table
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _check_type(where: str, key: str, value, kind: str):
    if kind == "list":
        if isinstance(value, str):
            # A lone string is a common slip for a one-item list; say so precisely.
            raise ConfigError(f"{where}: '{key}' must be a list of strings, got a string (write [{value!r}])")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: '{key}' must be a list of strings, got {_type_name(value)}")
        return tuple(value)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{where}: '{key}' must be a positive integer, got {value!r}")
        return value
    # table: glob -> list of codes
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: '{key}' must be a table of glob = [codes], got {_type_name(value)}")
    out = []
    for pattern, codes in value.items():
        codes = _check_type(where, f"{key}.{pattern}", codes, "list")
        out.append((pattern, codes))
    return tuple(out)


def _type_name(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


def _check_selectors(where: str, key: str, selectors: tuple[str, ...]) -> tuple[str, ...]:
    from promptlint.lint.catalog import expand_selector

    out = []
    for selector in selectors:
        try:
            expand_selector(selector)
        except ValueError:
            raise ConfigError(f"{where}: '{key}' names unknown rule code or prefix {selector!r}") from None
        out.append(selector.strip().upper())
    return tuple(out)


def _parse_table(where: str, table: dict, base: str) -> dict:
    """Validate a ``[tool.promptlint]``-shaped table into Settings field values."""
    values: dict = {}
    for key, value in table.items():
        spec = _KEYS.get(key)
        if spec is None:
            hint = f" (did you mean '{key.replace('_', '-')}'?)" if key.replace("_", "-") in _KEYS else ""
            raise ConfigError(f"{where}: unknown key '{key}'{hint}")
        field_name, kind = spec
        checked = _check_type(where, key, value, kind)
        if key in _SELECTOR_KEYS:
            checked = _check_selectors(where, key, checked)
        elif key == "per-file-ignores":
            checked = tuple((p, _check_selectors(where, f"{key}.{p}", codes)) for p, codes in checked)
        elif key == "rule-files":
            resolved = []
            for name in checked:
                path = _bundled_optional(where, name) if name.startswith(OPTIONAL_PREFIX) else os.path.normpath(os.path.join(base, name))
                if not os.path.isfile(path):
                    raise ConfigError(f"{where}: 'rule-files' entry {name!r} not found (looked at {path})")
                resolved.append(path)
            checked = tuple(resolved)
        elif key == "src":
            checked = tuple(os.path.normpath(os.path.join(base, name)) for name in checked)
        values[field_name] = checked
    return values


def load_settings(paths: list[str], config_path: str | None = None, overrides: dict | None = None) -> Settings:
    """Resolve the Settings of a run from the config file and command-line ``overrides``.

    ``overrides`` keys (kebab- or snake-case): ``select`` replaces the configured selection;
    ``ignore``, ``extend-select``, ``extend-exclude`` add to it; ``exclude`` replaces the
    excludes; the other keys replace their value. Values are lists (or comma-separated strings).
    """
    if config_path is not None:
        if not os.path.isfile(config_path):
            raise ConfigError(f"{config_path}: config file not found")
        found_path = os.path.abspath(config_path)
        table = _section(found_path, _read_toml(found_path))
        if table is None:
            raise ConfigError(f"{config_path}: has no [tool.promptlint] table")
        found = (found_path, table)
    else:
        found = find_config(paths[0] if paths else ".")
    if found is None:
        root, values, where = os.getcwd(), {}, "promptlint configuration"
    else:
        where = found[0]
        root = os.path.dirname(found[0])
        values = _parse_table(where, found[1], root)
    values = _apply_overrides(values, overrides or {}, root)
    extend_select = values.pop("extend_select", ())
    select = values.get("select", Settings.select)
    values["select"] = tuple(dict.fromkeys((*select, *extend_select)))
    return Settings(root=root, config_path=found[0] if found else None, **values)


def _apply_overrides(values: dict, overrides: dict, root: str) -> dict:
    values = dict(values)
    for raw_key, raw in overrides.items():
        if raw is None:
            continue
        key = raw_key.replace("_", "-")
        where = f"command line option --{key}"
        if key == "max-file-bytes":
            values["max_file_bytes"] = _check_type(where, key, raw, "int")
            continue
        if key not in _KEYS or _KEYS[key][1] != "list":
            raise ConfigError(f"{where}: not a command-line override")
        items = tuple(s.strip() for part in ([raw] if isinstance(raw, str) else raw) for s in part.split(",") if s.strip())
        if key in _SELECTOR_KEYS:
            items = _check_selectors(where, key, items)
        field_name = _KEYS[key][0]
        if key in ("ignore", "extend-select", "extend-exclude"):
            values[field_name] = (*values.get(field_name, ()), *items)
        elif key == "src":
            values[field_name] = tuple(os.path.abspath(s) for s in items)
        else:
            values[field_name] = items
    return values


# ------------------------------------------------------------------------ selection
@functools.lru_cache(maxsize=64)
def _selector_table(selectors: tuple[str, ...]) -> dict[str, int]:
    """code -> length of the most specific selector naming it (ruff's specificity rule)."""
    from promptlint.lint.catalog import expand_selector, known_codes

    codes = known_codes()
    table: dict[str, int] = {}
    for selector in selectors:
        # "ALL" is the least specific selector, below the bare prefix "PC".
        weight = 1 if selector.strip().upper() == "ALL" else len(selector.strip())
        try:
            hits = expand_selector(selector, codes)
        except ValueError:
            continue
        for code in hits:
            table[code] = max(table.get(code, 0), weight)
    return table


def _relative(path: str, root: str) -> str:
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, root)
    except ValueError:  # another drive on Windows
        return absolute.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def per_file_ignored(path: str, settings: Settings) -> tuple[str, ...]:
    """The selectors that ``per-file-ignores`` applies to ``path``."""
    if not settings.per_file_ignores:
        return ()
    from promptlint.lint.patterns import glob_match

    rel = _relative(path, settings.root)
    name = rel.rsplit("/", 1)[-1]
    out: list[str] = []
    for pattern, codes in settings.per_file_ignores:
        pattern = pattern.rstrip("/")
        if glob_match(rel, (pattern,)) or glob_match(name, (pattern,)) or rel.startswith(pattern + "/"):
            out.extend(codes)
    return tuple(out)


def is_selected(code: str, path: str, settings: Settings) -> bool:
    """Whether a diagnostic of ``code`` in ``path`` is reported under ``settings``.

    The most specific selector wins (``select = ["PC1"]``, ``ignore = ["PC"]`` keeps PC1xx);
    at equal specificity ``ignore`` wins. ``per-file-ignores`` always wins for its files.
    """
    selected = _selector_table(tuple(settings.select)).get(code, 0)
    if not selected:
        return False
    if _selector_table(tuple(settings.ignore)).get(code, 0) >= selected:
        return False
    extra = per_file_ignored(path, settings)
    return not (extra and code in _selector_table(extra))
