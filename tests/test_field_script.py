"""scripts/field.py materialises mirrors, lints whole trees and counts leaks and verdicts per group."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.loading import import_file

FIELD = Path(__file__).resolve().parent.parent / "scripts" / "field.py"

LEAKY = '''\
import datetime
import anthropic

client = anthropic.Anthropic()


def reply(question):
    system = f"You are terse. Now: {datetime.datetime.now()}"
    return client.messages.create(model="claude-haiku-4-5", max_tokens=64, system=system,
                                  messages=[{"role": "user", "content": question}])
'''


def make_mirror(root: Path, name: str, files: dict[str, str]) -> str:
    """A bare mirror at root/owner+name/repo holding one commit of ``files``; returns the sha."""
    work = root / "src" / name
    work.mkdir(parents=True)
    for path, text in files.items():
        (work / path).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--mirror", str(work), str(root / "mirrors" / name / "repo")], check=True)
    return sha


def test_field_counts_leaks_and_verdicts_per_group(tmp_path):
    dev = make_mirror(tmp_path, "acme+bot", {"bot.py": LEAKY})
    blind = make_mirror(tmp_path, "acme+quiet", {"quiet.py": LEAKY.replace("{datetime.datetime.now()}", "")})
    corpus = tmp_path / "corpus.yaml"
    corpus.write_text(f"""repos:
- repo: acme/bot
  commit: {dev}
  leaks:
  - {{source: bot.py:8, sink: bot.py:9, family: time, reference: read, why: clock in the system prompt}}
  - {{source: bot.py:8, sink: bot.py:9, family: ordering, reference: read, why: wrong family is not found}}
- repo: acme/quiet
  commit: {blind}
  blind: 2026-01-02
""")
    triage = tmp_path / "triage.tsv"
    triage.write_text("")
    out = subprocess.run([sys.executable, str(FIELD), "--mirrors", str(tmp_path / "mirrors"), "--work",
                          str(tmp_path / "work"), "--corpus", str(corpus), "--triage", str(triage), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["confirmed_leaks"], summary["found"]) == (2, 1)
    assert summary["untriaged"] == summary["findings"] >= 1 and summary["true"] == 0
    assert summary["groups"] == ["development", "holdout", "blind 2026-01-02"]
    assert summary["development"]["leaks"] == 2 and summary["blind 2026-01-02"] == {
        "repos": 1, "leaks": 0, "found": 0, "findings": 0, "true": 0}
    assert summary["missed"] == [{"repo": "acme/bot", "source": "bot.py:8", "family": "ordering"}]

    finding = next(f for f in summary["per_repo"] if f["repo"] == "acme/bot")
    triage.write_text(f"acme/bot\t{dev[:10]}\tbot.py:9\tPC101\ttrue\ttime\tclock per request\n")
    again = json.loads(subprocess.run(
        [sys.executable, str(FIELD), "--mirrors", str(tmp_path / "mirrors"), "--work", str(tmp_path / "work"),
         "--corpus", str(corpus), "--triage", str(triage), "--json"], capture_output=True, text=True,
        timeout=300).stdout)
    assert finding["findings"] >= 1 and again["true"] >= 1


def test_a_malformed_corpus_or_triage_is_exit_2_with_one_line(tmp_path):
    corpus = tmp_path / "corpus.yaml"
    corpus.write_text("repos:\n- commit: abc\n")
    out = subprocess.run([sys.executable, str(FIELD), "--mirrors", str(tmp_path), "--corpus", str(corpus)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "repos[0]" in out.stderr and "Traceback" not in out.stderr
    corpus.write_text("repos: []\n")
    triage = tmp_path / "triage.tsv"
    triage.write_text("acme/bot\tabc\tbot.py:9\tPC101\tmaybe\ttime\twhy\n")
    out = subprocess.run([sys.executable, str(FIELD), "--mirrors", str(tmp_path), "--corpus", str(corpus),
                          "--triage", str(triage)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "triage.tsv:1" in out.stderr


def test_a_leak_is_found_through_a_related_source_of_the_same_sink_but_not_a_far_line():
    field = import_file("field_script", FIELD)
    leak = field.Leak("a.py:44", "b.py:134", "identity", "read", "shuffled examples")
    finding = {"code": "PC201", "path": "a.py", "line": 589, "trace": [{"path": "a.py", "line": 458}],
               "related": [{"path": "a.py", "line": 45}]}
    assert field.leak_found(leak, [finding], slack=2) is finding
    assert field.leak_found(leak, [dict(finding, related=[{"path": "a.py", "line": 50}])], slack=2) is None
    assert field.leak_found(leak, [dict(finding, code="PC101")], slack=2) is None


def test_a_framework_check_counts_for_the_family_of_the_values_it_reports():
    """A LlamaIndex engine that renders each turn's retrieval into the system message (PC602)
    finds a per-turn leak; a check of no one family (PC606, breakpoints counted) finds none."""
    field = import_file("field_script", FIELD)
    leak = field.Leak("rag.py:132", "rag.py:104", "per-turn", "read", "retrieval in the system message")
    finding = {"code": "PC602", "path": "rag.py", "line": 102, "trace": []}
    assert [field.family_of(c) for c in ("PC101", "PC401", "PC601", "PC602", "PC606", "PC001")] == [
        "time", "per-turn", "time", "per-turn", None, None]
    assert field.leak_found(leak, [finding], slack=2) is finding
    assert field.leak_found(leak, [dict(finding, code="PC606")], slack=2) is None
