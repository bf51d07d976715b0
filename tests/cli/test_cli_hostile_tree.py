"""A hostile or odd tree, run through the real CLI in a subprocess: one bad entry never aborts
the run, writes go where a user expects (issue 13, docs/cli.md)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from tests.cli.test_cli_lint_command import LEAK, UNORDERED, promptlint
from tests.lint.opt_in import ORDERING_PYPROJECT

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="needs POSIX symlinks")
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file types and modes")


@pytest.fixture()
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.promptlint]\n", encoding="utf-8")
    (tmp_path / "agent.py").write_text(LEAK, encoding="utf-8")
    return tmp_path


def no_crash(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr


# ------------------------------------------------------------------------------ -o FILE
@posix_only
def test_output_file_new_file_gets_the_umask_mode(project):
    result = subprocess.run(["sh", "-c", f"umask 022 && exec {sys.executable} -m promptlint lint --no-cache -o out.txt"],
                            cwd=project, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert stat.S_IMODE((project / "out.txt").stat().st_mode) == 0o644
    assert "PC101" in (project / "out.txt").read_text()


@posix_only
def test_output_file_existing_file_keeps_its_mode(project):
    (project / "out.txt").write_text("old")
    os.chmod(project / "out.txt", 0o640)
    assert promptlint("lint", "--no-cache", "-o", "out.txt", cwd=project).returncode == 1
    assert stat.S_IMODE((project / "out.txt").stat().st_mode) == 0o640
    assert "PC101" in (project / "out.txt").read_text()


@needs_symlinks
def test_output_file_writes_through_a_symlink_and_keeps_the_link(project):
    (project / "reports").mkdir()
    (project / "out.txt").symlink_to(project / "reports" / "real.txt")
    assert promptlint("lint", "--no-cache", "-o", "out.txt", cwd=project).returncode == 1
    assert (project / "out.txt").is_symlink()
    assert "PC101" in (project / "reports" / "real.txt").read_text()


@posix_only
def test_output_file_writes_into_a_fifo_without_replacing_it(project):
    fifo = project / "report.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    try:
        result = promptlint("lint", "--no-cache", "-o", str(fifo), cwd=project)
        out, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()  # a build that replaces the FIFO never opens it: the reader would wait forever
        reader.wait()
    assert result.returncode == 1, result.stderr
    assert "PC101" in out
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@posix_only
def test_output_file_writes_to_a_device_node_without_replacing_it(project):
    if os.geteuid() == 0:
        # Never aim a possibly broken build at the system's /dev/null as root: it could replace it.
        # A private null device (major 1, minor 3 on Linux) in the test folder instead.
        if not sys.platform.startswith("linux"):
            pytest.skip("device numbers of the null device are Linux's")
        device = str(project / "null")
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        device = "/dev/null"  # a user cannot replace it, so the old behaviour fails harmlessly
    before = os.lstat(device)
    result = promptlint("lint", "--no-cache", "-o", device, cwd=project)
    assert result.returncode == 1, result.stderr
    after = os.lstat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_output_file_in_a_missing_folder_is_one_error_line(project):
    result = promptlint("lint", "--no-cache", "-o", os.path.join("nowhere", "out.txt"), cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"promptlint: error: {os.path.join('nowhere', 'out.txt')}: No such file or directory"]


# ------------------------------------------------------------------------------- --fix
@pytest.fixture()
def unordered(project):
    (project / "pyproject.toml").write_text(ORDERING_PYPROJECT, encoding="utf-8")
    (project / "agent.py").write_text(UNORDERED, encoding="utf-8")
    return project / "agent.py"


@posix_only
def test_fix_leaves_a_read_only_file_alone_and_says_so(unordered):
    pytest.importorskip("promptlint.lint.fix")
    os.chmod(unordered, 0o444)
    result = promptlint("lint", "--no-cache", "--fix", cwd=unordered.parent)
    assert result.returncode == 1
    assert "agent.py: not fixed: read-only file" in result.stderr
    assert unordered.read_text() == UNORDERED


@needs_symlinks
def test_fix_edits_the_target_of_a_symlink_and_keeps_the_link(project):
    pytest.importorskip("promptlint.lint.fix")
    (project / "pyproject.toml").write_text(ORDERING_PYPROJECT, encoding="utf-8")
    (project / "agent.py").unlink()
    (project / "real").mkdir()
    (project / "real" / "impl.py").write_text(UNORDERED, encoding="utf-8")
    (project / "agent.py").symlink_to(os.path.join("real", "impl.py"))
    result = promptlint("lint", "--no-cache", "--fix", "agent.py", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "agent.py").is_symlink()
    assert "sorted(TOOLS)" in (project / "real" / "impl.py").read_text()


@needs_symlinks
def test_fix_refuses_a_symlink_that_leads_out_of_the_given_paths(tmp_path):
    pytest.importorskip("promptlint.lint.fix")
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir(), outside.mkdir()
    (tree / "pyproject.toml").write_text(ORDERING_PYPROJECT)
    (outside / "impl.py").write_text(UNORDERED, encoding="utf-8")
    (tree / "agent.py").symlink_to(outside / "impl.py")
    result = promptlint("lint", "--no-cache", "--fix", ".", cwd=tree)
    assert result.returncode == 1
    assert "agent.py: not fixed: outside the paths given on the command line" in result.stderr
    assert (outside / "impl.py").read_text() == UNORDERED


@posix_only
def test_fix_keeps_hard_links(unordered):
    pytest.importorskip("promptlint.lint.fix")
    twin = unordered.parent / "twin.txt"
    os.link(unordered, twin)
    result = promptlint("lint", "--no-cache", "--fix", "agent.py", cwd=unordered.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.path.samefile(unordered, twin)
    assert "sorted(TOOLS)" in twin.read_text()


HELPER = textwrap.dedent('''\
    TOOLS = {"search", "open"}


    def tools_text():
        return ", ".join(TOOLS)
    ''')

CALLER = textwrap.dedent('''\
    import anthropic

    from helpers import tools_text

    client = anthropic.Anthropic()


    def ask(question):
        return client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            system="Tools: " + tools_text(),
            messages=[{"role": "user", "content": question}],
        )
    ''')


@pytest.fixture()
def helper_in_src(tmp_path):
    (tmp_path / "pyproject.toml").write_text(ORDERING_PYPROJECT + 'src = ["lib"]\n')
    (tmp_path / "app").mkdir(), (tmp_path / "lib").mkdir()
    (tmp_path / "app" / "agent.py").write_text(CALLER, encoding="utf-8")
    (tmp_path / "lib" / "helpers.py").write_text(HELPER, encoding="utf-8")
    return tmp_path


def test_fix_never_edits_a_helper_outside_the_given_paths(helper_in_src):
    pytest.importorskip("promptlint.lint.fix")
    result = promptlint("lint", "--no-cache", "--fix", "app", cwd=helper_in_src)
    assert result.returncode == 1  # the finding stays
    assert os.path.join("lib", "helpers.py") + ": not fixed: outside the paths given on the command line" in result.stderr
    assert (helper_in_src / "lib" / "helpers.py").read_text() == HELPER
    diff = promptlint("lint", "--no-cache", "--diff", "app", cwd=helper_in_src)
    assert diff.stdout == "" and "not fixed: outside" in diff.stderr


def test_fix_edits_the_helper_when_its_folder_is_given(helper_in_src):
    pytest.importorskip("promptlint.lint.fix")
    result = promptlint("lint", "--no-cache", "--fix", "app", "lib", cwd=helper_in_src)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sorted(TOOLS)" in (helper_in_src / "lib" / "helpers.py").read_text()


# -------------------------------------------------------------- one bad entry, not the run
@needs_symlinks
@pytest.mark.parametrize("target", ["loop.py", "other.py"])
def test_a_symlink_loop_is_a_finding_and_the_rest_is_linted(project, target):
    (project / "loop.py").symlink_to(project / target)
    if target == "other.py":
        (project / "other.py").symlink_to(project / "loop.py")
    result = promptlint("lint", "--no-cache", "--format", "json", cwd=project)
    no_crash(result)
    assert result.returncode == 1
    found = {(d["path"], d["code"]) for d in json.loads(result.stdout)}
    assert ("agent.py", "PC101") in found and ("loop.py", "PC003") in found


@pytest.mark.parametrize("codec", ["rot13", "hex", "base64", "zlib", "uu", "bz2_codec"])
def test_a_cookie_naming_a_non_text_codec_is_pc002_and_the_rest_is_linted(project, codec):
    (project / "odd.py").write_bytes(f"# -*- coding: {codec} -*-\nx = 1\n".encode())
    result = promptlint("lint", "--no-cache", "--format", "json", cwd=project)
    no_crash(result)
    found = {(d["path"], d["code"]): d["message"] for d in json.loads(result.stdout)}
    assert ("agent.py", "PC101") in found
    assert "not a text encoding" in found[("odd.py", "PC002")]


@posix_only
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can list every folder")
def test_an_unreadable_folder_is_reported_not_skipped(project):
    locked = project / "locked"
    locked.mkdir()
    (locked / "agent.py").write_text(LEAK, encoding="utf-8")
    os.chmod(locked, 0)
    try:
        result = promptlint("lint", "--no-cache", "--format", "json", cwd=project)
    finally:
        os.chmod(locked, 0o755)
    no_crash(result)
    found = {(d["path"], d["code"]) for d in json.loads(result.stdout)}
    assert ("locked", "PC003") in found and ("agent.py", "PC101") in found


def test_an_unreadable_folder_is_reported_by_the_engine(tmp_path, monkeypatch):
    # The same check where the test runs as root (who can list every folder): the OS refuses.
    from promptlint.lint.diagnostic import Settings
    from promptlint.lint.engine import lint_paths

    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "agent.py").write_text(LEAK, encoding="utf-8")
    (tmp_path / "agent.py").write_text(LEAK, encoding="utf-8")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.path.basename(os.path.normpath(str(path))) == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = lint_paths([str(tmp_path)], Settings(root=str(tmp_path)), use_cache=False, jobs=1)
    found = {(os.path.relpath(d.path, tmp_path), d.code): d.message for d in report.diagnostics}
    assert ("agent.py", "PC101") in found
    assert "cannot read folder (Permission denied)" in found[("locked", "PC003")]


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="file names must be bytes (Linux)")
@pytest.mark.parametrize("fmt", ["json", "sarif", "text", "github"])
def test_a_file_name_that_is_not_utf8_is_escaped_in_every_format(project, fmt):
    os.rename(project / "agent.py", os.path.join(os.fsencode(project), b"agent\xff.py"))
    out = promptlint_bytes("lint", "--no-cache", "--format", fmt, cwd=project)
    to_file = promptlint_bytes("lint", "--no-cache", "--format", fmt, "-o", "report.out", cwd=project)
    for result, body in ((out, out.stdout), (to_file, (project / "report.out").read_bytes())):
        assert result.returncode == 1, result.stderr
        text = body.decode("utf-8")  # valid UTF-8, or this raises
        if fmt == "json":
            assert json.loads(text)[0]["path"] == "agent\\xff.py"
        elif fmt == "sarif":
            [finding] = json.loads(text)["runs"][0]["results"]
            assert finding["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "agent%FF.py"
        else:
            assert text.startswith(("agent\\xff.py:12:", "::error file=agent\\xff.py,"))


def promptlint_bytes(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PROMPTLINT_DEBUG"}
    env["LC_ALL"] = env["LANG"] = "C.UTF-8"  # a UTF-8 terminal: stdout would refuse raw bytes
    return subprocess.run([sys.executable, "-m", "promptlint", *args], cwd=cwd, env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize("separator", ["\f", "\u2028", "\x1c", "\x85"])
def test_findings_and_snippets_are_right_after_a_form_feed_or_unicode_line_separator(project, separator):
    # Inside the request function: a value computed per request (an import-time one is frozen).
    source = LEAK.replace("def ask(question):\n",
                          f"def ask(question):\n    # a{separator}b\n    SYSTEM = f'Now {{datetime.datetime.now()}}'\n")
    source = source.replace('f"Today is {datetime.datetime.now()}"', "SYSTEM")
    (project / "agent.py").write_text(source, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--format", "json", cwd=project)
    [finding] = json.loads(result.stdout)
    lines = source.split("\n")
    source_line = next(i for i, line in enumerate(lines, 1) if line.strip().startswith("SYSTEM"))
    assert finding["trace"][0]["line"] == source_line
    assert "`datetime.datetime.now()`" in finding["trace"][0]["note"]
    assert finding["line"] == next(i for i, line in enumerate(lines, 1) if "system=SYSTEM" in line)


@pytest.mark.parametrize("value", ["", ",", " , "])
def test_select_with_no_code_is_a_usage_error(project, value):
    result = promptlint("lint", "--no-cache", "--select", value, cwd=project)
    assert result.returncode == 2
    assert "--select needs at least one rule code" in result.stderr


@pytest.mark.parametrize("version", ["2", "'1'", "true", "0"])
def test_a_rule_file_with_an_unknown_version_is_rejected(project, version):
    (project / "rules.yaml").write_text(f"version: {version}\nsources: []\n")
    (project / "pyproject.toml").write_text('[tool.promptlint]\nrule-files = ["rules.yaml"]\n')
    result = promptlint("lint", "--no-cache", cwd=project)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "rules.yaml: unsupported rule file version" in line and "reads version 1" in line


def test_a_rule_file_of_version_1_or_without_a_version_is_accepted(project):
    (project / "rules.yaml").write_text("sources: []\n")
    (project / "more.yaml").write_text("version: 1\nsinks: []\n")
    (project / "pyproject.toml").write_text('[tool.promptlint]\nrule-files = ["rules.yaml", "more.yaml"]\n')
    assert promptlint("lint", "--no-cache", cwd=project).returncode == 1


def test_a_long_concatenation_that_python_compiles_is_analysed(project):
    chain = " + ".join(["'a'"] * 950)
    source = LEAK.replace('f"Today is {datetime.datetime.now()}"', f"{chain} + str(datetime.datetime.now())")
    compile(source, "agent.py", "exec")  # CPython accepts it
    (project / "agent.py").write_text(source, encoding="utf-8")
    result = promptlint("lint", "--no-cache", "--format", "json", cwd=project)
    assert [d["code"] for d in json.loads(result.stdout)] == ["PC101"]


def test_a_deeply_nested_toml_array_is_a_config_error(project):
    (project / "pyproject.toml").write_text("[tool.promptlint]\nsrc = " + "[" * 3000 + "]" * 3000 + "\n")
    result = promptlint("lint", "--no-cache", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"promptlint: error: {project / 'pyproject.toml'}: invalid TOML: arrays or tables nested too deeply"]


@posix_only
def test_a_closed_stdout_gives_no_internal_error(project):
    env = {k: v for k, v in os.environ.items() if k != "PROMPTLINT_DEBUG"}
    closed = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache"], cwd=project, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
                            preexec_fn=lambda: os.close(1))
    assert closed.returncode == 1 and closed.stderr == ""
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -0`: the reader is gone before anything is written
    try:
        gone = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache"], cwd=project, env=env,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert gone.returncode in (0, 1) and gone.stderr == ""


def test_a_rule_file_that_is_not_yaml_is_one_error_line(project):
    # Found by the config fuzz campaign: YAML's own message spans several lines.
    (project / "pyproject.toml").write_text('[tool.promptlint]\nrule-files = ["agent.py"]\n')
    result = promptlint("lint", "--no-cache", cwd=project)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("promptlint: error: ") and "agent.py: invalid YAML: " in line and "(line " in line
