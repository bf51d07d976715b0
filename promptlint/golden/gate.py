"""Golden prefix-hash files and the ``promptlint hash`` / ``promptlint golden`` commands.

A golden file (``<dir>/<contract name>.json``) records, for one contract version, the
sha256 of the cacheable prefix of every provider rendering, a hash per layer, the estimated
tokens and the breakpoints, plus the text of every global/project layer so a failed check can
show what changed. Exit codes (docs/golden.md): 0 every hash matches; 1 a hash, the version or
a golden file is different or missing; 2 usage error (bad TARGET, corrupt golden file).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import click

from promptlint.contract import DEFAULT_MODELS, ContractError, PromptContract
from promptlint.contract.layers import STABLE_STABILITIES, sha256_hex
from promptlint.contract.request import data_provider
from promptlint.providers import DATA_DATE, is_known_model

GOLDEN_FORMAT = 1
"""Version of the golden file layout."""

DEFAULT_DIR = "fixtures/golden"


class GoldenUsageError(click.ClickException):
    """A usage problem (bad TARGET, corrupt golden file): exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"promptlint: error: {self.format_message()}", err=True)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


# --- targets -----------------------------------------------------------------------------------


def load_contracts(target: str) -> list[PromptContract]:
    """Resolve ``path/to/file.py:name`` or ``package.module:name`` to contracts.

    The object may be a PromptContract, a list/tuple of them, or a zero-argument callable
    returning either.
    """
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise GoldenUsageError(f"TARGET {target!r} must look like path/to/file.py:name or package.module:name")
    try:
        if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
            path = Path(module_part)
            if not path.is_file():
                raise GoldenUsageError(f"TARGET {target!r}: no such file {module_part}")
            name = "promptlint_target_" + sha256_hex(str(path.resolve()).encode())[:12]
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_part)
    except GoldenUsageError:
        raise
    except ContractError as exc:
        raise GoldenUsageError(f"TARGET {target!r}: invalid contract: {exc}") from None
    except SystemExit as exc:  # the target module called sys.exit(); that is not a contract
        raise GoldenUsageError(f"TARGET {target!r}: importing {module_part} called sys.exit({exc.code!r})") from None
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's target
        raise GoldenUsageError(f"TARGET {target!r}: cannot import {module_part}: {_one_line(exc)}") from None
    if not hasattr(module, attr):
        raise GoldenUsageError(f"TARGET {target!r}: {module_part} has no attribute {attr!r}")
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, PromptContract):
        try:
            value = value()
        except ContractError as exc:
            raise GoldenUsageError(f"TARGET {target!r}: invalid contract: {exc}") from None
        except SystemExit as exc:
            raise GoldenUsageError(f"TARGET {target!r}: calling {attr}() called sys.exit({exc.code!r})") from None
        except Exception as exc:  # noqa: BLE001 - the user's callable failed
            raise GoldenUsageError(f"TARGET {target!r}: calling {attr}() raised {_one_line(exc)}") from None
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items or not all(isinstance(item, PromptContract) for item in items):
        raise GoldenUsageError(f"TARGET {target!r} is not a PromptContract, a list of them, or a callable returning one")
    return items


# --- golden documents --------------------------------------------------------------------------


def layer_text(contract: PromptContract, name: str) -> str:
    """Readable text of a stable layer (tools as pretty JSON) for diffs."""
    layer = contract.layer(name)
    if layer.tools is not None:
        return json.dumps([spec.neutral() for spec in layer.tool_specs], indent=2, sort_keys=True, ensure_ascii=False)
    return layer.content_text() or ""


def golden_document(contract: PromptContract, renderers: Iterable[str] = tuple(DEFAULT_MODELS)) -> dict[str, Any]:
    """The golden record of ``contract``: per-provider prefix hashes and the stable layers' text."""
    provider_docs: dict[str, Any] = {}
    for provider in renderers:
        report = contract.prefix_report(provider)
        provider_docs[provider] = {
            "model": report.model,
            "sha256": report.sha256,
            "tokens": report.tokens,
            "token_method": report.token_method,
            "floor": report.floor,
            "breakpoints": list(report.breakpoints),
            "layers": dict(report.layers),
            "cache_key": report.cache_key,
            "preloaded": list(report.preloaded),
        }
    layers = {}
    for layer in contract.layers:
        if layer.stability in STABLE_STABILITIES:
            text = layer_text(contract, layer.name)
            layers[layer.name] = {"stability": layer.stability, "text": text}
    return {
        "format": GOLDEN_FORMAT,
        "contract": contract.name,
        "version": contract.version,
        "provider_data": DATA_DATE,
        "layers": layers,
        "skills": {skill.name: {"description": skill.description, "body": skill.body} for skill in contract.catalogue},
        "providers": provider_docs,
    }


def golden_path(directory: str | os.PathLike[str], contract: PromptContract) -> Path:
    """Where the golden file of ``contract`` lives."""
    return Path(directory) / f"{contract.name}.json"


def write_golden(directory: str | os.PathLike[str], contract: PromptContract) -> Path:
    """Write the golden file of ``contract`` atomically (temp file in the same dir, then replace)."""
    path = golden_path(directory, contract)
    text = json.dumps(golden_document(contract), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise GoldenUsageError(f"cannot write goldens into {path.parent}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a golden is a normal repository file
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise GoldenUsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    return path


class GoldenFileError(Exception):
    """A golden file exists but cannot be read as a golden."""


def read_golden(path: Path) -> dict[str, Any]:
    """Parse and validate a golden file; raises :class:`GoldenFileError` with the reason."""
    try:
        document = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GoldenFileError(f"{path}: not a readable JSON golden file ({exc})") from None
    if not isinstance(document, dict) or document.get("format") != GOLDEN_FORMAT:
        raise GoldenFileError(f"{path}: not a promptlint golden file of format {GOLDEN_FORMAT}")
    for key, kind in (("contract", str), ("version", str), ("providers", dict), ("layers", dict)):
        if not isinstance(document.get(key), kind):
            raise GoldenFileError(f"{path}: field {key!r} is missing or not a {kind.__name__}")
    for provider, entry in document["providers"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str) or not isinstance(entry.get("layers"), dict):
            raise GoldenFileError(f"{path}: provider {provider!r} lacks a sha256 or layer hashes")
        if not all(isinstance(digest, str) for digest in entry["layers"].values()):
            raise GoldenFileError(f"{path}: provider {provider!r} has a layer hash that is not a string")
        for key, kind in (("model", str), ("floor", int), ("preloaded", list)):
            if key in entry and (not isinstance(entry[key], kind) or isinstance(entry[key], bool)):
                raise GoldenFileError(f"{path}: provider {provider!r}: {key!r} is not a {kind.__name__}")
        if not all(isinstance(name, str) for name in entry.get("preloaded", [])):
            raise GoldenFileError(f"{path}: provider {provider!r}: 'preloaded' lists a non-name")
    skills = document.get("skills", {})
    if not isinstance(skills, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("body"), str) and isinstance(e.get("description"), str)
            for e in skills.values()):
        raise GoldenFileError(f"{path}: 'skills' must map each skill name to its description and body")
    for name, entry in document["layers"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            raise GoldenFileError(f"{path}: layer {name!r} lacks its text")
    return document


# --- comparison --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    """One way a contract differs from its golden, with a message a human can act on."""

    contract: str
    provider: str | None
    layer: str | None
    offset: int | None
    message: str


def _first_difference(old: bytes, new: bytes) -> int:
    for index, (a, b) in enumerate(zip(old, new)):
        if a != b:
            return index
    return min(len(old), len(new))


def _short_diff(old: str, new: str, limit: int = 20) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), "golden", "current", n=1, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join("    " + line for line in lines)


def _text_change(what: str, old: str, new: str) -> tuple[int, str]:
    offset = _first_difference(old.encode("utf-8"), new.encode("utf-8"))
    line = new.encode("utf-8")[:offset].decode("utf-8", "ignore").count("\n") + 1
    return offset, f"{what} changed at byte offset {offset} (line {line}):\n{_short_diff(old, new)}"


def _padding_change(contract: PromptContract, golden: dict[str, Any], provider: str, old: dict[str, Any],
                    new: dict[str, Any]) -> tuple[int | None, str]:
    """Why the padding changed: the model, its floor, a pre-loaded skill's body, or the fallback text."""
    if old.get("model") != new["model"]:
        return None, (f"the padding changed because the model changed ({old.get('model')} -> {new['model']}, "
                      f"floor {old.get('floor')} -> {new['floor']})")
    if old.get("floor") != new["floor"]:
        return None, (f"the padding changed because the cache floor of {new['model']} changed "
                      f"({old.get('floor')} -> {new['floor']} tokens; provider data of {DATA_DATE}, golden made with "
                      f"{golden.get('provider_data')})")
    old_skills, new_skills = golden.get("skills", {}), {s.name: s for s in contract.catalogue}
    for name in new.get("preloaded", []):
        if name in old_skills and old_skills[name]["body"] != new_skills[name].body:
            return _text_change(f"the body of pre-loaded skill {name!r} (padding of {new['model']})",
                                old_skills[name]["body"], new_skills[name].body)
    if old.get("preloaded") is not None and old.get("preloaded") != new.get("preloaded"):
        return None, (f"the skills pre-loaded as padding changed ({old.get('preloaded')} -> {new.get('preloaded')}): "
                      "a skill was added, removed or resized, or the stable text around it changed length")
    return None, ("the padding changed: its fallback paragraphs or the token estimate changed "
                  f"(provider data of {DATA_DATE}, golden made with {golden.get('provider_data')})")


def _layer_change(contract: PromptContract, golden: dict[str, Any], provider: str, name: str,
                  old: dict[str, Any], new: dict[str, Any]) -> tuple[int | None, str]:
    """Byte offset and readable description of how layer ``name`` changed."""
    old_entry = golden["layers"].get(name)
    if name == "(padding)":
        return _padding_change(contract, golden, provider, old, new)
    try:
        layer = contract.layer(name)
    except ContractError:
        return None, f"layer {name!r} was removed from the contract"
    if layer.stability not in STABLE_STABILITIES:
        return None, f"session layer {name!r} moved or changed its placeholder"
    new_text = layer_text(contract, name)
    if old_entry is None:
        return 0, f"layer {name!r} is new"
    old_text = str(old_entry.get("text", ""))
    if old_text == new_text:
        if layer.skills is not None and old.get("preloaded") != new.get("preloaded"):
            return None, (f"skill index {name!r}: the skills marked [preloaded] for {new['model']} changed "
                          f"({old.get('preloaded')} -> {new.get('preloaded')})")
        if old.get("model") != new["model"]:
            return None, f"layer {name!r} renders differently because the model changed ({old.get('model')} -> {new['model']})"
        return None, f"layer {name!r} renders differently for {provider} (renderer or provider data change)"
    return _text_change(f"layer {name!r}", old_text, new_text)


def compare(contract: PromptContract, golden: dict[str, Any], current: dict[str, Any] | None = None) -> list[Mismatch]:
    """Every difference between ``contract`` and its ``golden`` document (empty: it matches).

    Providers whose prefix changed for the same reason are reported together, so one edited
    layer gives one message (listing each provider's old and new hash) with one diff.
    """
    current = current or golden_document(contract)
    found: list[Mismatch] = []
    version_bumped = golden["version"] != contract.version
    if version_bumped:
        remedy = (f"the version was bumped ({golden['version']} -> {contract.version}) but the goldens "
                  "were not updated: run `promptlint golden update` and commit the golden file")
    else:
        remedy = (f"the stable prefix changed without a version bump (still {contract.version}): if the "
                  "change is a leak, fix it; if it is intended, bump the contract version and run "
                  "`promptlint golden update`")
    groups: dict[tuple[str | None, int | None, str], tuple[list[str], dict[str, None]]] = {}
    for provider, entry in current["providers"].items():
        old = golden["providers"].get(provider)
        if old is None:
            found.append(Mismatch(contract.name, provider, None, None,
                                  f"contract {contract.name!r} {provider}: no golden hash recorded; "
                                  "run `promptlint golden update`"))
            continue
        if old["sha256"] == entry["sha256"]:
            continue
        old_layers, new_layers = old["layers"], entry["layers"]
        changed = [name for name in new_layers if old_layers.get(name) != new_layers[name]]
        changed += [name for name in old_layers if name not in new_layers]
        layer = changed[0] if changed else None
        offset, detail = (_layer_change(contract, golden, provider, layer, old, entry) if layer
                          else (None, "no layer changed: the wire shape or model changed "
                                f"(model {old.get('model')} -> {entry['model']})"))
        line = f"{provider} ({entry['model']}) {old['sha256'][:12]} -> {entry['sha256'][:12]}"
        lines, others = groups.setdefault((layer, offset, detail), ([], {}))
        lines.append(line)
        others.update(dict.fromkeys(changed[1:]))
    for (layer, offset, detail), (lines, others) in groups.items():
        providers_changed = ", ".join(line.split(" ")[0] for line in lines)
        also = f"\n  also changed: {', '.join(others)}" if others else ""
        message = (f"contract {contract.name!r}: prefix sha256 changed for "
                   + "; ".join(lines) + f"\n  {detail}{also}\n  what to do: {remedy}")
        found.append(Mismatch(contract.name, providers_changed, layer, offset, message))
    if version_bumped and not found:
        found.append(Mismatch(contract.name, None, None, None,
                              f"contract {contract.name!r}: version changed ({golden['version']} -> {contract.version}) "
                              "but the prefix did not; run `promptlint golden update` to record the new version"))
    return found


def check_contract(contract: PromptContract, directory: str | os.PathLike[str]) -> list[Mismatch]:
    """Compare ``contract`` with its golden file; a missing file is a mismatch.

    Raises :class:`GoldenFileError` for a corrupt golden file.
    """
    path = golden_path(directory, contract)
    if not path.exists():
        return [Mismatch(contract.name, None, None, None,
                         f"contract {contract.name!r} ({contract.version}): no golden file {path}; "
                         "run `promptlint golden update` and commit it")]
    golden = read_golden(path)
    if golden["contract"] != contract.name:
        raise GoldenFileError(f"{path}: records contract {golden['contract']!r}, not {contract.name!r}")
    return compare(contract, golden)


CLI_UPDATE_HINT = "run `promptlint golden update`"


def assert_matches_golden(contract: PromptContract, directory: str | os.PathLike[str] = DEFAULT_DIR,
                          *, update: bool = False, update_hint: str = CLI_UPDATE_HINT) -> None:
    """Raise AssertionError naming every mismatch, or rewrite the golden when ``update``.

    ``update_hint`` replaces the CLI remedy in messages (the pytest plugin names its option).
    """
    if update:
        try:
            write_golden(directory, contract)
        except GoldenUsageError as exc:
            raise AssertionError(exc.format_message()) from None
        return
    try:
        mismatches = check_contract(contract, directory)
    except GoldenFileError as exc:
        raise AssertionError(str(exc)) from None
    if mismatches:
        raise AssertionError("\n".join(m.message for m in mismatches).replace(CLI_UPDATE_HINT, update_hint))


# --- commands ----------------------------------------------------------------------------------


def _contracts(targets: Iterable[str]) -> list[PromptContract]:
    contracts = [contract for target in targets for contract in load_contracts(target)]
    names = [contract.name for contract in contracts]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise GoldenUsageError(f"two contracts share a name (their goldens would collide): {', '.join(duplicates)}")
    return contracts


@click.command("hash")
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--provider", "providers_", multiple=True, type=click.Choice(list(DEFAULT_MODELS)),
              help="Only this renderer (repeatable). Default: all.")
@click.option("--model", default=None, help="Render with this model instead of the contract's default.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def hash_command(targets: tuple[str, ...], providers_: tuple[str, ...], model: str | None, as_json: bool) -> None:
    """Print prefix hashes of prompt contracts.

    TARGET is path/to/file.py:name or package.module:name naming a PromptContract, a list of
    them, or a zero-argument callable. Per provider: prefix sha256, estimated tokens, floor,
    breakpoint positions and per-layer hashes.
    """
    chosen = providers_ or tuple(DEFAULT_MODELS)
    if model is not None and not providers_:
        # A model belongs to one provider: render it only where it can be sent.
        chosen = tuple(p for p in DEFAULT_MODELS if is_known_model(data_provider(p), model))
        if not chosen:
            raise GoldenUsageError(f"--model {model!r} is not a model of any provider in the provider data; "
                                   "check the spelling or pass --provider")
    output = []
    for contract in _contracts(targets):
        entries = []
        for provider in chosen:
            try:
                report = contract.prefix_report(provider, model)
            except ContractError as exc:
                raise GoldenUsageError(str(exc)) from None
            entries.append({"provider": provider, "model": report.model, "sha256": report.sha256,
                            "tokens": report.tokens, "token_method": report.token_method, "floor": report.floor,
                            "breakpoints": list(report.breakpoints), "layers": dict(report.layers),
                            "cache_key": report.cache_key})
        output.append({"contract": contract.name, "version": contract.version, "providers": entries})
    if as_json:
        click.echo(json.dumps(output, indent=2, sort_keys=True))
        return
    for item in output:
        click.echo(f"{item['contract']} {item['version']}")
        for entry in item["providers"]:
            below = "" if entry["tokens"] >= entry["floor"] else "  BELOW FLOOR (not cached)"
            click.echo(f"  {entry['provider']} {entry['model']}")
            click.echo(f"    prefix sha256 {entry['sha256']}")
            click.echo(f"    tokens ~{entry['tokens']} ({entry['token_method']}), floor {entry['floor']}{below}")
            click.echo(f"    breakpoints {', '.join(entry['breakpoints']) or '(none: automatic prefix)'}")
            for name, digest in entry["layers"].items():
                click.echo(f"    layer {name:<16} {digest[:16]}")


@click.group("golden")
def golden_group() -> None:
    """Check or update golden prefix-hash files (exit 0 match, 1 mismatch or missing, 2 usage)."""


_dir_option = click.option("--dir", "directory", default=DEFAULT_DIR, show_default=True,
                           type=click.Path(file_okay=False), help="Directory of golden files.")


@golden_group.command("update")
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@_dir_option
def update_command(targets: tuple[str, ...], directory: str) -> None:
    """Write one golden file per contract, atomically."""
    for contract in _contracts(targets):
        try:
            path = write_golden(directory, contract)
        except ContractError as exc:
            raise GoldenUsageError(f"contract {contract.name!r} cannot be rendered: {exc}") from None
        click.echo(f"wrote {path} ({contract.name} {contract.version})")


@golden_group.command("check")
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@_dir_option
def check_command(targets: tuple[str, ...], directory: str) -> None:
    """Fail (exit 1) when a contract's prefix hashes differ from its golden file."""
    failures = 0
    for contract in _contracts(targets):
        try:
            mismatches = check_contract(contract, directory)
        except GoldenFileError as exc:
            raise GoldenUsageError(f"{exc}; restore it from version control or run `promptlint golden update`") from None
        except ContractError as exc:
            raise GoldenUsageError(f"contract {contract.name!r} cannot be rendered: {exc}") from None
        if mismatches:
            failures += 1
            for mismatch in mismatches:
                click.echo(f"FAIL {mismatch.message}", err=True)
        else:
            click.echo(f"ok {contract.name} {contract.version}")
    if failures:
        click.echo(f"{failures} contract(s) differ from their goldens", err=True)
        raise SystemExit(1)
