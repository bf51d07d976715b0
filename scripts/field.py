"""Lint the field corpus of real agent projects and print recall, precision and time.

The corpus (``fixtures/field/corpus.yaml``) lists public repositories at fixed commits with the
cache leaks we confirmed by reading their code or from their issue trackers; the triage
(``fixtures/field/triage.tsv``) holds one verdict per finding promptlint reports on those trees.
No third-party code is kept in this repository: the script materialises each commit from a
local git mirror (a bare clone you made, e.g. ``git clone --mirror``), lints the whole tree
cold, and matches what it finds against the list.

    python scripts/field.py --mirrors DIR            # table: per repo findings, leaks found, time
    python scripts/field.py --mirrors DIR --json     # one JSON object
    python scripts/field.py --mirrors DIR --untriaged  # findings the triage has no verdict for

A mirror for ``owner/name`` is looked up as ``DIR/owner+name/repo``, ``DIR/owner+name``,
``DIR/owner+name.git`` or ``DIR/owner/name.git``. Repositories without a mirror are skipped and
listed. Rules of counting (the same as the people who check the figures, docs/field.md):

* recall = confirmed leaks found, for the right source family / confirmed leaks (entries
  marked ``debatable`` are reported apart and not counted);
* a leak is found when a finding of its family has its source or its sink among the trace
  steps (same file, within ``--slack`` lines);
* precision = findings triaged ``true`` / all findings on the linted trees; an untriaged
  finding counts as not true until someone triages it.

Exit 0 when it ran (whatever the figures), 2 when the corpus or a tool is unusable.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this tree's promptlint (a snapshot's own), as its lint runs use
CORPUS = ROOT / "fixtures" / "field" / "corpus.yaml"
TRIAGE = ROOT / "fixtures" / "field" / "triage.tsv"
TREE_SUFFIXES = (".py", ".ipynb", ".j2", ".jinja", ".jinja2", ".yaml", ".yml", ".txt", ".md", ".prompt", ".tmpl", ".toml",
                 ".json", ".cfg", ".ini")


def family_of(code: str) -> str | None:
    """The source family a rule code reports (PC1xx time, PC2xx identity, ...; a framework
    check's by its ``sources``), or None (meta codes, a framework check of no one family)."""
    from promptlint.lint.catalog import load_rule_docs

    doc = load_rule_docs().get(code)
    return doc.source_family if doc is not None else None


@dataclass
class Leak:
    source: str
    sink: str
    family: str
    reference: str
    why: str
    debatable: bool = False

    def sites(self) -> list[tuple[str, int]]:
        out = []
        for site in (self.source, self.sink):
            path, _, line = site.rpartition(":")
            out.append((path, int(line)))
        return out


@dataclass
class Entry:
    repo: str
    commit: str
    shape: str
    leaks: list[Leak] = field(default_factory=list)
    holdout: bool = False
    blind: str = ""  # the day a blind batch was scouted ("" when not blind)

    @property
    def group(self) -> str:
        """development (looked at while tuning), holdout (leaks unseen) or a blind batch (nothing
        seen): ``blind`` for ``blind: true``, ``blind 2026-11-25`` for a dated batch."""
        if self.blind:
            return "blind" if self.blind == "True" else f"blind {self.blind}"
        return "holdout" if self.holdout else "development"

    @property
    def slug(self) -> str:
        return f"{self.repo.replace('/', '+')}@{self.commit[:10]}"


def load_corpus(path: Path) -> list[Entry]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("repos"), list):
        raise ValueError(f"{path}: expected a mapping with a 'repos' list")
    entries = []
    for i, raw in enumerate(data["repos"]):
        try:
            leaks = [Leak(str(x["source"]), str(x["sink"]), str(x["family"]), str(x.get("reference", "read")),
                          str(x.get("why", "")), bool(x.get("debatable", False))) for x in raw.get("leaks") or ()]
            entries.append(Entry(str(raw["repo"]), str(raw["commit"]), str(raw.get("shape", "")), leaks,
                                 bool(raw.get("holdout", False)) or bool(raw.get("blind", False)),
                                 str(raw.get("blind") or "")))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: repos[{i}]: missing or malformed field {exc}") from None
    return entries


def load_triage(path: Path) -> dict[tuple, tuple[str, str]]:
    """(repo, commit prefix, path:line, code) -> (verdict, why)."""
    out = {}
    if not path.is_file():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 7 or cols[4] not in ("true", "false", "debatable"):
            raise ValueError(f"{path}:{n}: expected 7 tab-separated columns: repo commit path:line code "
                             "true|false|debatable family why")
        out[(cols[0], cols[1][:10], cols[2], cols[3])] = (cols[4], cols[6])
    return out


def find_mirror(mirrors: Path, repo: str) -> Path | None:
    owner, name = repo.split("/", 1)
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}",
                      mirrors / f"{owner}+{name}.git", mirrors / owner / f"{name}.git"):
        if (candidate / "HEAD").is_file() or (candidate / ".git" / "HEAD").is_file():
            return candidate
    return None


def materialise(mirror: Path, commit: str, target: Path) -> None:
    """Write the text files of ``commit`` into ``target`` (once; an existing tree is reused).

    Only the files a lint run reads are written, blob by blob: mirrors may lack large blobs
    (notebooks, data), which would make a whole-tree ``git archive`` fail."""
    marker = target / ".field-complete"
    done = commit + "\n" + " ".join(TREE_SUFFIXES) + "\n"
    if marker.is_file() and marker.read_text() == done:
        return
    git_dir = str(mirror / ".git" if (mirror / ".git").is_dir() else mirror)
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", commit],
                             capture_output=True, check=True).stdout.split(b"\0")
    wanted = []
    for row in listing:
        if not row:
            continue
        meta, _, name = row.partition(b"\t")
        mode, kind, sha = meta.split()
        path = name.decode("utf-8", "surrogateescape")
        if kind == b"blob" and mode != b"120000" and path.endswith(TREE_SUFFIXES) and ".." not in Path(path).parts:
            wanted.append((sha.decode(), path))
    batch = subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        for sha, path in wanted:
            batch.stdin.write(sha.encode() + b"\n")
            batch.stdin.flush()
            header = batch.stdout.readline().split()
            if len(header) < 3 or header[1] != b"blob":
                continue  # missing from the mirror
            data = batch.stdout.read(int(header[2]) + 1)[:-1]
            out = target / path
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
    finally:
        batch.stdin.close()
        batch.wait()
    marker.write_text(done)


def lint_tree(tree: Path, promptlint: list[str]) -> tuple[list[dict], float, str]:
    """Findings (JSON) of one cold run over the whole tree, its wall time, and any error."""
    start = time.perf_counter()
    proc = subprocess.run([*promptlint, "lint", "--format", "json", "--no-cache", "--exit-zero", "."],
                          cwd=tree, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        return [], elapsed, (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
    return json.loads(proc.stdout or "[]"), elapsed, ""


def leak_found(leak: Leak, findings: list[dict], slack: int) -> dict | None:
    for finding in findings:
        if family_of(finding["code"]) != leak.family:
            continue
        # Its trace, its sink, and the other sources it reports for the same sink (`related`).
        steps = [(s["path"], s["line"]) for s in finding.get("trace", []) + finding.get("related", [])] + [
            (finding["path"], finding["line"])]
        for path, line in leak.sites():
            if any(p == path and abs(ln - line) <= slack for p, ln in steps):
                return finding
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", required=True, type=Path, help="folder of bare git mirrors")
    parser.add_argument("--work", type=Path, default=None, help="where trees are extracted (default: a temp folder)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--triage", type=Path, default=TRIAGE)
    parser.add_argument("--repo", action="append", default=[], help="only these owner/name (repeatable)")
    parser.add_argument("--slack", type=int, default=2, help="lines of slack when matching a site (default 2)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--untriaged", action="store_true", help="print findings that have no triage line")
    parser.add_argument("--findings", action="store_true", help="print every finding with its verdict")
    parser.add_argument("--dump", type=Path, default=None,
                        help="also write every finding (JSON: repo, commit, verdict, the finding) to this file")
    args = parser.parse_args(argv)
    try:
        entries = load_corpus(args.corpus)
        triage = load_triage(args.triage)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"field: {exc}", file=sys.stderr)
        return 2
    if args.repo:
        entries = [e for e in entries if e.repo in args.repo]
    work = args.work or Path(tempfile.mkdtemp(prefix="promptlint-field-"))
    promptlint = [sys.executable, "-m", "promptlint"]
    env_path = str(ROOT)
    os.environ["PYTHONPATH"] = env_path + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")

    rows, missing, problems = [], [], []
    for entry in entries:
        mirror = find_mirror(args.mirrors, entry.repo)
        if mirror is None:
            missing.append(entry.repo)
            continue
        tree = work / entry.slug
        try:
            materialise(mirror, entry.commit, tree)
        except (subprocess.CalledProcessError, OSError, ValueError) as exc:
            problems.append(f"{entry.repo}@{entry.commit[:10]}: cannot extract ({exc})")
            continue
        findings, seconds, error = lint_tree(tree, promptlint)
        if error:
            problems.append(f"{entry.repo}@{entry.commit[:10]}: promptlint failed: {error}")
        verdicts = []
        for f in findings:
            key = (entry.repo, entry.commit[:10], f"{f['path']}:{f['line']}", f["code"])
            verdicts.append((f, triage.get(key)))
        found = [(leak, leak_found(leak, findings, args.slack)) for leak in entry.leaks]
        rows.append((entry, verdicts, found, seconds))

    if args.dump is not None:
        args.dump.write_text(json.dumps([{"repo": e.repo, "commit": e.commit, "verdict": (v or ("untriaged", ""))[0],
                                          "finding": f} for e, verdicts, _, _ in rows for f, v in verdicts], indent=1))
    confirmed = [(e, leak, hit) for e, _, found, _ in rows for leak, hit in found if not leak.debatable]
    debatable = [(e, leak, hit) for e, _, found, _ in rows for leak, hit in found if leak.debatable]
    all_findings = [(e, f, v) for e, verdicts, _, _ in rows for f, v in verdicts]
    true = sum(1 for _, _, v in all_findings if v is not None and v[0] == "true")
    untriaged = [(e, f) for e, f, v in all_findings if v is None]
    slowest = max(rows, key=lambda r: r[3]) if rows else None

    def split(group: str) -> dict:
        leaks = [(e, leak, hit) for e, leak, hit in confirmed if e.group == group]
        fs = [(e, f, v) for e, f, v in all_findings if e.group == group]
        return {"repos": sum(1 for r in rows if r[0].group == group), "leaks": len(leaks),
                "found": sum(1 for *_, hit in leaks if hit), "findings": len(fs),
                "true": sum(1 for *_, v in fs if v is not None and v[0] == "true")}

    groups = ["development", "holdout", *sorted({r[0].group for r in rows} - {"development", "holdout"})]
    summary = {
        "groups": groups,
        "repos": len(rows), "confirmed_leaks": len(confirmed), "found": sum(1 for *_, hit in confirmed if hit),
        "recall": round(sum(1 for *_, hit in confirmed if hit) / len(confirmed), 3) if confirmed else None,
        "debatable_leaks": len(debatable), "debatable_found": sum(1 for *_, hit in debatable if hit),
        "findings": len(all_findings), "true": true,
        "precision": round(true / len(all_findings), 3) if all_findings else None,
        "untriaged": len(untriaged),
        "slowest": {"repo": slowest[0].repo, "seconds": round(slowest[3], 2)} if slowest else None,
        "total_seconds": round(sum(r[3] for r in rows), 2),
        **{group: split(group) for group in groups},
        "missing_mirrors": missing, "problems": problems,
    }
    if args.json:
        summary["per_repo"] = [{"repo": e.repo, "commit": e.commit, "findings": len(v), "seconds": round(s, 2),
                                "leaks": len([x for x in f if not x[0].debatable]),
                                "found": sum(1 for leak, hit in f if hit and not leak.debatable)}
                               for e, v, f, s in rows]
        summary["missed"] = [{"repo": e.repo, "source": leak.source, "family": leak.family}
                             for e, leak, hit in confirmed if not hit]
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{'repo':48} {'findings':>8} {'leaks':>5} {'found':>5} {'seconds':>7}")
    for e, verdicts, found, seconds in rows:
        real = [x for x in found if not x[0].debatable]
        tag = "" if e.group == "development" else f" ({e.group})"
        print(f"{(e.repo + tag)[:48]:48} {len(verdicts):8} {len(real):5} {sum(1 for _, h in real if h):5} {seconds:7.2f}")
    for e, leak, hit in confirmed:
        if not hit:
            print(f"missed  {e.repo} {leak.source} ({leak.family}): {leak.why[:100]}")
    if args.findings:
        for e, f, v in all_findings:
            print(f"{(v or ('untriaged', ''))[0]:10} {e.repo} {f['path']}:{f['line']} {f['code']} {f['message'][:110]}")
    if args.untriaged:
        for e, f in untriaged:
            print("\t".join([e.repo, e.commit[:10], f"{f['path']}:{f['line']}", f["code"], "?",
                             family_of(f["code"]) or "-", f["message"][:160]]))
    s = summary
    print(f"\nrepos {s['repos']}  confirmed leaks {s['confirmed_leaks']}  found {s['found']}  recall {s['recall']}")
    print(f"debatable leaks {s['debatable_leaks']}  found {s['debatable_found']}")
    print(f"findings {s['findings']}  true {s['true']}  precision {s['precision']}  untriaged {s['untriaged']}")
    for part in groups:
        p = s[part]
        print(f"{part:16}  repos {p['repos']}  leaks {p['found']}/{p['leaks']}  findings {p['findings']}  true {p['true']}")
    if slowest:
        print(f"slowest repo {s['slowest']['repo']} {s['slowest']['seconds']} s cold; all repos {s['total_seconds']} s")
    for repo in missing:
        print(f"skipped {repo}: no mirror under {args.mirrors}")
    for problem in problems:
        print(f"problem {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
