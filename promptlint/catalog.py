"""The rule catalog: codes and their docs, sources, sinks and sanitizers, loaded from YAML.

Everything the analysis knows about the outside world (which call is wall-clock time, which
keyword of which SDK call is a system prompt) is data in ``rules/*.yaml``; users add their
own files through ``rule-files`` in ``[tool.promptlint]``. A broken rule file is a
``CatalogError`` naming the file and the entry, never a traceback.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from promptlint.model import RuleDoc

_HERE = Path(__file__).resolve().parent


class CatalogError(Exception):
    """A rule file is missing, unreadable or does not match the schema."""


def rules_dir() -> Path:
    """The bundled rules folder (``promptlint/_rules`` in a wheel, ``rules/`` in a checkout)."""
    for candidate in (_HERE / "_rules", _HERE.parent / "rules"):
        if (candidate / "codes.yaml").is_file():
            return candidate
    raise CatalogError(f"bundled rule files not found next to {_HERE}")


def _load_yaml(path: Path) -> dict:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read rule file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{path}: rule file is not UTF-8: {exc.reason}") from None
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level")
    return data


_DOC_KEYS = {
    "name", "family", "severity", "summary", "what", "why", "example", "use_instead",
    "fix_safety", "valid", "invalid",
}
_CODE_RE = re.compile(r"^PC\d{3}$")


@functools.lru_cache(maxsize=1)
def load_rule_docs() -> dict[str, RuleDoc]:
    """Every rule code with its documentation, in code order."""
    path = rules_dir() / "codes.yaml"
    raw = _load_yaml(path).get("codes")
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: 'codes' must be a mapping")
    docs: dict[str, RuleDoc] = {}
    for code in sorted(raw):
        entry = raw[code]
        where = f"{path}: {code}"
        if not _CODE_RE.match(str(code)):
            raise CatalogError(f"{where}: codes look like PC123")
        if not isinstance(entry, dict):
            raise CatalogError(f"{where}: expected a mapping")
        unknown = set(entry) - _DOC_KEYS
        if unknown:
            raise CatalogError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        try:
            docs[code] = RuleDoc(
                code=code,
                name=str(entry["name"]),
                family=str(entry["family"]),
                summary=str(entry["summary"]),
                severity=entry.get("severity", "error"),
                what=str(entry["what"]).strip(),
                why=str(entry["why"]).strip(),
                example=str(entry.get("example", "")),
                use_instead=str(entry.get("use_instead", "")),
                fix_safety=str(entry.get("fix_safety", "Not auto-fixable.")),
                valid=tuple(entry.get("valid", ()) or ()),
                invalid=tuple(entry.get("invalid", ()) or ()),
            )
        except KeyError as exc:
            raise CatalogError(f"{where}: missing key {exc.args[0]!r}") from None
        if docs[code].severity not in ("error", "warning"):
            raise CatalogError(f"{where}: severity must be 'error' or 'warning'")
    return docs


def known_codes() -> frozenset[str]:
    """All rule codes."""
    return frozenset(load_rule_docs())


def expand_selector(selector: str, codes: frozenset[str] | None = None) -> frozenset[str]:
    """The codes a selector names: a full code (``PC101``) or a prefix (``PC1``, ``PC``).

    Raises ``ValueError`` when it names no code, so config errors can name the key.
    """
    codes = known_codes() if codes is None else codes
    selector = selector.strip().upper()
    if selector == "ALL":
        return codes
    hits = frozenset(c for c in codes if c.startswith(selector))
    if not hits:
        raise ValueError(f"unknown rule code or prefix {selector!r}")
    return hits


def glob_match(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """True when ``name`` matches one of the shell-style ``patterns``."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def fingerprint_files(paths: list[Path]) -> str:
    """A short hash of rule files' bytes, for cache keys (no YAML parsing needed)."""
    digest = hashlib.blake2b(digest_size=12)
    for path in paths:
        digest.update(str(path).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
