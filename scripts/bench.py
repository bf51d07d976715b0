#!/usr/bin/env python3
"""Benchmark promptlint against its peers on a real corpus (issue 3, "Speed").

The corpus is the source of two PyPI wheels, ``langchain-core==1.7.2`` and
``anthropic==2.12.0``, downloaded with ``pip download --no-deps`` into ``.bench/wheels`` and
unpacked side by side into ``.bench/corpus`` (as in a site-packages, so cross-package imports
resolve). The peers ``cachedrift`` and ``pcdlint`` (and ``fixit`` with ``--with-fixit``) are
installed into ``.bench/peers-venv`` so they never touch the project environment.

One run prints: files and lines of the corpus; wall seconds (best of N) and files/s for
promptlint cold (``--no-cache``), promptlint warm (after a cache-filling run), promptlint on one
file, cachedrift, pcdlint, ruff cold and warm (installed into the peers venv when absent) and Fixit
(opt-in); then the ratios the issues target. It never asserts a time: it prints figures (a table, or ``--json``).

Exit codes: 0 the benchmark ran (whatever the figures say, whatever tool was unavailable);
2 the corpus could not be built (PyPI unreachable, pip failed) or bad arguments.
docs/benchmark.md documents the options, the JSON shape and measured figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

#: The wheels whose sources form the corpus (issue 3: 3,168 files, ~270k lines).
CORPUS_PACKAGES = ("langchain-core==1.7.2", "anthropic==2.12.0")

#: Peer linters, pinned to the versions the issue measured: (distribution, pin, console script).
PEERS = (("cachedrift", "0.1.0", "cachedrift"), ("pcdlint", "0.3.0", "pcdlint"))
FIXIT = ("fixit", None, "fixit")
#: ruff, when none is beside the interpreter or on PATH, is installed into the peers venv.
RUFF = ("ruff", "0.17.6", "ruff")

#: The file timed for "promptlint on one file": real sink shapes, a large module.
SINGLE_FILE = "anthropic/resources/messages/messages.py"

#: Targets of issue 3, as ratios taken in one run (seconds for the single file).
TARGETS = {
    "cold_over_cachedrift": 0.5,
    "warm_over_cold": 0.05,
    "warm_over_ruff_warm": 1.0,
    "single_file_seconds": 0.5,
}

#: pip must fail fast when PyPI is unreachable instead of retrying for minutes.
PIP_NETWORK_FLAGS = ("--retries", "1", "--timeout", "15", "--disable-pip-version-check")


class BenchError(Exception):
    """A failure that stops the benchmark: printed as one line, exit code 2."""


@dataclass
class Measurement:
    """One timed row: a tool on the corpus (or on one file)."""

    name: str
    status: str  # "ok" | "not available" | "not installed" | "failed"
    command: list[str] = field(default_factory=list)
    detail: str = ""
    version: str = ""
    seconds: float | None = None  # best of the timed runs
    all_seconds: list[float] = field(default_factory=list)
    files: int | None = None  # files the timing covers
    exit_code: int | None = None
    findings: int | None = None  # counted on runs whose JSON output is read

    @property
    def files_per_second(self) -> float | None:
        if self.seconds is None or not self.files:
            return None
        return self.files / self.seconds


# --- corpus ----------------------------------------------------------------------------------


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:])


def _wheel_for(wheels_dir: Path, requirement: str) -> Path | None:
    """The cached wheel of ``name==version``, if already downloaded."""
    name, version = requirement.split("==")
    stem = f"{name.replace('-', '_')}-{version}-"
    matches = sorted(p for p in wheels_dir.glob("*.whl") if p.name.lower().startswith(stem.lower()))
    return matches[0] if matches else None


def download_wheels(cache: Path) -> list[Path]:
    """Download the corpus wheels once into ``cache/wheels``; raise BenchError when offline."""
    wheels_dir = cache / "wheels"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    missing = [req for req in CORPUS_PACKAGES if _wheel_for(wheels_dir, req) is None]
    if missing:
        print(f"downloading {', '.join(missing)} from PyPI into {wheels_dir} ...", file=sys.stderr)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               *PIP_NETWORK_FLAGS, "--dest", str(wheels_dir), *missing]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BenchError(
                f"cannot download the corpus wheels ({', '.join(missing)}): is PyPI reachable? "
                f"pip said: {_last_lines(proc.stderr) or f'exit status {proc.returncode}'}")
    wheels = [_wheel_for(wheels_dir, req) for req in CORPUS_PACKAGES]
    if any(w is None for w in wheels):
        raise BenchError(f"pip succeeded but no wheel for {CORPUS_PACKAGES} landed in {wheels_dir}")
    return wheels  # type: ignore[return-value]


def unpack_corpus(cache: Path, wheels: list[Path]) -> Path:
    """Unpack the wheels side by side into ``cache/corpus`` (once; atomic by directory rename)."""
    corpus = cache / "corpus"
    marker = corpus / ".bench-wheels"
    wanted = "\n".join(w.name for w in wheels) + "\n"
    if marker.is_file() and marker.read_text() == wanted:
        return corpus
    staging = Path(tempfile.mkdtemp(prefix="corpus.", dir=cache))
    try:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(staging)
        # Its own (empty) config stops the config search here, so the repository's
        # [tool.promptlint] excludes do not apply and the result cache lands inside the corpus.
        (staging / "promptlint.toml").write_text(
            "# Empty on purpose: the benchmark lints this corpus with promptlint's defaults.\n")
        (staging / ".bench-wheels").write_text(wanted)
        if corpus.exists():
            shutil.rmtree(corpus)
        os.replace(staging, corpus)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return corpus


def count_corpus(corpus: Path) -> tuple[int, int]:
    """Number of ``.py`` files and of lines in them."""
    files = lines = 0
    for path in corpus.rglob("*.py"):
        if ".promptlint_cache" in path.parts:
            continue
        data = path.read_bytes()
        files += 1
        lines += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return files, lines


# --- tools -----------------------------------------------------------------------------------


def _timed(name: str, command: list[str], cwd: Path, runs: int, files: int | None,
           ok_codes: set[int], version: str = "", json_findings: bool = False) -> Measurement:
    """Best wall time of ``runs`` runs of ``command``; a bad exit code makes the row "failed".

    With ``json_findings`` the output (a JSON array) is read and its length kept, so a run that
    is fast because it analysed nothing shows up as such.
    """
    row = Measurement(name=name, status="ok", command=command, version=version, files=files)
    print(f"timing {name} ({runs} run(s)) ...", file=sys.stderr, flush=True)
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=cwd, stderr=subprocess.PIPE, text=True, errors="replace",
                              stdout=subprocess.PIPE if json_findings else subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        row.exit_code = proc.returncode
        if proc.returncode not in ok_codes:
            row.status = "failed"
            row.detail = f"exit {proc.returncode}: {_last_lines(proc.stderr) or 'no message'}"
            return row
        row.all_seconds.append(round(elapsed, 4))
        if json_findings:
            try:
                row.findings = len(json.loads(proc.stdout))
            except (ValueError, TypeError):
                row.detail = "output was not a JSON array"
    row.seconds = min(row.all_seconds)
    return row


def promptlint_available() -> str | None:
    """None when ``promptlint lint`` can run here, otherwise why not."""
    proc = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--help"],
                          capture_output=True, text=True, errors="replace")
    if proc.returncode == 0 and "--no-cache" in proc.stdout:
        return None
    return _last_lines(proc.stderr or proc.stdout, 1) or f"exit {proc.returncode}"


def _promptlint_version() -> str:
    proc = subprocess.run([sys.executable, "-m", "promptlint", "--version"],
                          capture_output=True, text=True, errors="replace")
    return proc.stdout.strip().split()[-1] if proc.returncode == 0 and proc.stdout.strip() else ""


def measure_promptlint(corpus: Path, files: int, runs: int, single: Path) -> list[Measurement]:
    """Cold, cache fill, warm and single-file rows for promptlint."""
    base = [sys.executable, "-m", "promptlint", "lint", "--exit-zero"]
    names = ("promptlint cold", "promptlint cache fill", "promptlint warm", "promptlint one file")
    reason = promptlint_available()
    if reason is not None:
        return [Measurement(name=n, status="not available", detail=reason) for n in names]
    version = _promptlint_version()
    ok = {0}
    cold = _timed(names[0], [*base, "--no-cache", "."], corpus, runs, files, ok, version)
    shutil.rmtree(corpus / ".promptlint_cache", ignore_errors=True)
    # The filling run pays for writing the cache; it is shown, but the ratio uses warm runs.
    fill = _timed(names[1], [*base, "--format", "json", "."], corpus, 1, files, ok, version,
                  json_findings=True)
    if fill.status == "ok":
        warm = _timed(names[2], [*base, "."], corpus, runs, files, ok, version)
    else:
        warm = Measurement(name=names[2], status="failed", detail="the cache-filling run failed")
    one = _timed(names[3], [*base, "--no-cache", str(single.relative_to(corpus))], corpus, runs, 1,
                 ok, version)
    return [cold, fill, warm, one]


def _venv_python(peers_venv: Path) -> Path:
    return peers_venv / ("Scripts" if os.name == "nt" else "bin") / "python"


def _installed_version(python: Path, distribution: str) -> str:
    proc = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"],
        capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def install_peer(peers_venv: Path, distribution: str, pin: str | None) -> tuple[str, str]:
    """Install one peer into the peers venv; (version, "") or ("", why it failed)."""
    python = _venv_python(peers_venv)
    if not python.exists():
        try:
            venv.EnvBuilder(with_pip=True, clear=True).create(peers_venv)
        except Exception as exc:  # venv/ensurepip failures come in many types
            return "", f"cannot create {peers_venv}: {exc}"
    have = _installed_version(python, distribution)
    if have and (pin is None or have == pin):
        return have, ""
    requirement = f"{distribution}=={pin}" if pin else distribution
    print(f"installing {requirement} into {peers_venv} ...", file=sys.stderr)
    proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PIP_NETWORK_FLAGS,
                           requirement], capture_output=True, text=True)
    if proc.returncode != 0:
        return "", f"pip install {requirement} failed (is PyPI reachable?): {_last_lines(proc.stderr)}"
    return _installed_version(python, distribution), ""


def measure_peer(peers_venv: Path, peer: tuple[str, str | None, str], corpus: Path, files: int,
                 runs: int, ok_codes: set[int], args: list[str]) -> Measurement:
    """Install (if needed) and time one peer linter on the corpus."""
    distribution, pin, script = peer
    version, problem = install_peer(peers_venv, distribution, pin)
    if problem:
        return Measurement(name=distribution, status="not installed", detail=problem)
    executable = _venv_python(peers_venv).parent / script
    return _timed(distribution, [str(executable), *args], corpus, runs, files, ok_codes, version)


def _find_ruff(peers_venv: Path | None = None) -> tuple[Path | None, str]:
    """A ruff executable: beside the interpreter, on PATH, or (given a peers venv) installed
    there; (None, why not) otherwise."""
    beside = Path(sys.executable).parent / "ruff"
    if beside.exists():
        return beside, ""
    found = shutil.which("ruff")
    if found:
        return Path(found), ""
    if peers_venv is None:
        return None, "no ruff on PATH or beside python"
    _, problem = install_peer(peers_venv, RUFF[0], RUFF[1])
    if problem:
        return None, problem
    return _venv_python(peers_venv).parent / RUFF[2], ""


def measure_ruff(corpus: Path, files: int, runs: int, peers_venv: Path | None = None) -> list[Measurement]:
    """ruff's default rules on the corpus, as a floor for what a native linter costs: cold
    (``--no-cache``), then warm (its cache, in a temporary folder, filled by one untimed run)."""
    ruff, problem = _find_ruff(peers_venv)
    if ruff is None:
        return [Measurement(name=n, status="not installed", detail=problem) for n in ("ruff", "ruff warm")]
    version = subprocess.run([str(ruff), "--version"], capture_output=True, text=True).stdout.strip()
    version = version.split()[-1] if version else ""
    base = [str(ruff), "check", "--isolated", "--exit-zero", "--quiet"]
    cold = _timed("ruff", [*base, "--no-cache", "."], corpus, runs, files, {0}, version)
    with tempfile.TemporaryDirectory(prefix="ruff-cache-") as cache:
        warm_cmd = [*base, "--cache-dir", cache, "."]
        fill = subprocess.run(warm_cmd, cwd=corpus, capture_output=True, text=True, errors="replace")
        if fill.returncode != 0:
            return [cold, Measurement(name="ruff warm", status="failed", command=warm_cmd,
                                      detail=f"cache-filling run: exit {fill.returncode}: {_last_lines(fill.stderr)}")]
        warm = _timed("ruff warm", warm_cmd, corpus, runs, files, {0}, version)
    return [cold, warm]


# --- report ----------------------------------------------------------------------------------


def _row(rows: list[Measurement], name: str) -> Measurement | None:
    return next((r for r in rows if r.name == name and r.status == "ok"), None)


def compute_ratios(rows: list[Measurement]) -> dict[str, dict]:
    """The issue's targets, each with its value (None when an input is missing)."""
    cold, warm = _row(rows, "promptlint cold"), _row(rows, "promptlint warm")
    cachedrift, one = _row(rows, "cachedrift"), _row(rows, "promptlint one file")
    ruff_warm = _row(rows, "ruff warm")
    values = {
        "cold_over_cachedrift": cold.seconds / cachedrift.seconds if cold and cachedrift else None,
        "warm_over_cold": warm.seconds / cold.seconds if warm and cold else None,
        "warm_over_ruff_warm": warm.seconds / ruff_warm.seconds if warm and ruff_warm else None,
        "single_file_seconds": one.seconds if one else None,
    }
    return {
        key: {"value": None if value is None else round(value, 4), "target": TARGETS[key],
              "meets": None if value is None else value <= TARGETS[key]}
        for key, value in values.items()
    }


def machine() -> dict:
    """Where the figures were taken."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "date": time.strftime("%Y-%m-%d")}


def report_json(corpus: Path, packages: list[str], files: int, lines: int, runs: int,
                rows: list[Measurement]) -> dict:
    """The machine-readable report (shape documented in docs/benchmark.md)."""
    return {
        "corpus": {"path": str(corpus), "packages": packages, "files": files, "lines": lines},
        "runs": runs,
        "machine": machine(),
        "tools": [{**asdict(r), "files_per_second": None if r.files_per_second is None
                   else round(r.files_per_second, 1)} for r in rows],
        "ratios": compute_ratios(rows),
    }


def report_text(corpus: Path, packages: list[str], files: int, lines: int, runs: int,
                rows: list[Measurement]) -> str:
    """The human-readable table."""
    info = machine()
    what = ", ".join(packages) if packages else "given directory"
    out = [f"corpus: {corpus}", f"  {what}: {files:,} .py files, {lines:,} lines",
           f"machine: {info['cpus']} cpus, Python {info['python']}, {info['platform']}; "
           f"best of {runs} run(s)", ""]
    out.append(f"{'tool':<24}{'version':<10}{'seconds':>10}{'files/s':>10}{'findings':>10}  status")
    for r in rows:
        seconds = f"{r.seconds:.3f}" if r.seconds is not None else "-"
        rate = f"{r.files_per_second:,.0f}" if r.files_per_second is not None else "-"
        found = f"{r.findings:,}" if r.findings is not None else ""
        status = r.status + (f": {r.detail}" if r.detail else "")
        out.append(f"{r.name:<24}{r.version:<10}{seconds:>10}{rate:>10}{found:>10}  {status}")
    out += ["", "ratios (targets of issues 3 and 14):"]
    labels = {"cold_over_cachedrift": "promptlint cold / cachedrift",
              "warm_over_cold": "promptlint warm / cold",
              "warm_over_ruff_warm": "promptlint warm / ruff warm",
              "single_file_seconds": "promptlint one file (s)"}
    for key, ratio in compute_ratios(rows).items():
        if ratio["value"] is None:
            verdict, value = "n/a (a row is missing)", "-"
        else:
            verdict, value = ("meets" if ratio["meets"] else "misses"), f"{ratio['value']:.3f}"
        out.append(f"  {labels[key]:<30}{value:>8}   target <= {ratio['target']}: {verdict}")
    return "\n".join(out)


# --- main ------------------------------------------------------------------------------------


def build_selftest_corpus(directory: Path) -> Path:
    """A 3-file corpus (one leak, one clean module, one helper) for --selftest."""
    (directory / "promptlint.toml").write_text("")
    (directory / "app.py").write_text(
        "import anthropic\nfrom datetime import datetime\n\nclient = anthropic.Anthropic()\n\n\n"
        "def ask(q):\n    system = f'Today is {datetime.now()}'\n"
        "    return client.messages.create(model='m', max_tokens=10, system=system,\n"
        "                                  messages=[{'role': 'user', 'content': q}])\n")
    (directory / "clean.py").write_text("def add(a, b):\n    return a + b\n")
    (directory / "helper.py").write_text("import time\n\n\ndef stamp():\n    return time.time()\n")
    return directory


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time promptlint against cachedrift, pcdlint, ruff (and Fixit) on the "
                    "langchain-core 1.7.2 + anthropic 2.12.0 sources.",
        epilog="Exit codes: 0 ran, 2 corpus could not be built (e.g. PyPI unreachable) or bad "
               "arguments. See docs/benchmark.md.")
    parser.add_argument("--runs", "-n", type=int, default=3, help="timed runs per tool; best is kept (default 3)")
    parser.add_argument("--cache-dir", type=Path, default=REPO_ROOT / ".bench",
                        help="wheels, corpus and peers venv live here (default: .bench/)")
    parser.add_argument("--corpus", type=Path, help="time this directory instead of the PyPI corpus")
    parser.add_argument("--no-peers", action="store_true", help="time promptlint (and ruff) only")
    parser.add_argument("--with-fixit", action="store_true", help="also time Fixit (takes minutes)")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    parser.add_argument("--json-file", type=Path, help="also write the JSON report to this file")
    parser.add_argument("--selftest", action="store_true",
                        help="time promptlint on a 3-file corpus in a temp dir; no peers, no network")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.corpus is not None and not args.corpus.is_dir():
        parser.error(f"--corpus {args.corpus}: not a directory")
    if args.json_file is not None and not args.json_file.resolve().parent.is_dir():
        parser.error(f"--json-file {args.json_file}: its directory does not exist")
    return args


def run(args: argparse.Namespace, corpus: Path, packages: list[str]) -> dict:
    """Time every tool on ``corpus``, print the report and return it as JSON data."""
    corpus = corpus.resolve()
    files, lines = count_corpus(corpus)
    if files == 0:
        raise BenchError(f"{corpus}: no .py files to time")
    single = corpus / SINGLE_FILE
    if not single.is_file():
        single = min(corpus.rglob("*.py"))
    rows = measure_promptlint(corpus, files, args.runs, single)
    peers_venv = None if args.no_peers else args.cache_dir.resolve() / "peers-venv"
    if peers_venv is not None:
        # cachedrift exits 1/2 for findings (3 for a bad path); pcdlint exits 1 for findings and
        # 2 when some file could not be analysed, which still times a complete run.
        rows.append(measure_peer(peers_venv, PEERS[0], corpus, files, args.runs, {0, 1, 2}, ["."]))
        rows.append(measure_peer(peers_venv, PEERS[1], corpus, files, args.runs, {0, 1, 2}, ["."]))
        if args.with_fixit:
            rows.append(measure_peer(peers_venv, FIXIT, corpus, files, args.runs, {0, 1}, ["lint", "."]))
    rows += measure_ruff(corpus, files, args.runs, peers_venv)
    report = report_json(corpus, packages, files, lines, args.runs, rows)
    print(json.dumps(report, indent=2) if args.json
          else report_text(corpus, packages, files, lines, args.runs, rows))
    if args.json_file is not None:
        write_atomically(args.json_file, json.dumps(report, indent=2) + "\n")
    return report


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file in the same directory."""
    path = path.resolve()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: list[str] | None = None) -> int:
    """Build the corpus, time the tools, print the figures; the exit code says whether it ran."""
    args = parse_args(argv)
    try:
        if args.selftest:
            args.no_peers = True
            args.with_fixit = False
            with tempfile.TemporaryDirectory(prefix="promptlint-bench-") as tmp:
                run(args, build_selftest_corpus(Path(tmp)), [])
            return 0
        if args.corpus is not None:
            run(args, args.corpus, [])
            return 0
        args.cache_dir.mkdir(parents=True, exist_ok=True)
        corpus = unpack_corpus(args.cache_dir.resolve(), download_wheels(args.cache_dir.resolve()))
        run(args, corpus, list(CORPUS_PACKAGES))
        return 0
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
