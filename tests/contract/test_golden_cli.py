"""The real `promptlint hash` / `promptlint golden` CLI and the pytest plugin, in subprocesses."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

CONTRACT_SOURCE = '''
from promptlint.contract import Layer, PromptContract

IDENTITY = {identity!r}

contract = PromptContract(
    name="demo",
    version={version!r},
    layers=[
        Layer("identity", text=IDENTITY, stability="global"),
        Layer("tools", tools=[{{"name": "search", "description": "Search.", "parameters": {{"type": "object"}}}}], stability="project"),
        Layer("workspace", stability="session"),
        Layer("memory", stability="turn"),
    ],
)

def both():
    return [contract, PromptContract("other", "o1", [Layer("identity", text="Other bot.")])]
'''

IDENTITY = "You are Demo.\nYou answer questions about the demo product.\nBe brief."


def write_contract(path: Path, identity: str = IDENTITY, version: str = "px1") -> str:
    path.write_text(CONTRACT_SOURCE.format(identity=identity, version=version), encoding="utf-8")
    return f"{path}:contract"


def promptlint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "promptlint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def project(tmp_path):
    target = write_contract(tmp_path / "demo_contract.py")
    result = promptlint("golden", "update", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return tmp_path, target


def test_update_writes_one_golden_file_per_contract(project):
    tmp_path, _ = project
    document = json.loads((tmp_path / "golden" / "demo.json").read_text())
    assert document["contract"] == "demo" and document["version"] == "px1"
    assert set(document["providers"]) == {"anthropic", "openai", "openai-responses", "gemini"}
    assert list(tmp_path.joinpath("golden").iterdir()) == [tmp_path / "golden" / "demo.json"]  # no temp files left


def test_golden_files_are_ordinary_readable_files(project):
    tmp_path, _ = project
    assert stat.S_IMODE((tmp_path / "golden" / "demo.json").stat().st_mode) == 0o644


def test_check_exits_0_when_every_hash_matches(project):
    tmp_path, target = project
    result = promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 0 and "ok demo px1" in result.stdout


def test_check_names_contract_provider_layer_offset_diff_and_remedy_on_an_unbumped_change(project):
    tmp_path, target = project
    write_contract(tmp_path / "demo_contract.py", identity=IDENTITY.replace("Be brief.", "Be brief. It is 09:14."))
    result = promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 1
    err = result.stderr
    offset = len(IDENTITY.encode())
    assert "contract 'demo': prefix sha256 changed for anthropic (claude-haiku-4-5)" in err
    assert err.count("--- golden") == 1  # one diff for all four providers
    assert f"layer 'identity' changed at byte offset {offset} (line 3)" in err
    assert "-Be brief." in err and "+Be brief. It is 09:14." in err
    assert "changed without a version bump" in err and "Traceback" not in err


def test_check_lists_every_other_changed_layer(project):
    tmp_path, target = project
    source = (tmp_path / "demo_contract.py").read_text().replace('"Search."', '"Search the web."')
    (tmp_path / "demo_contract.py").write_text(source.replace("You are Demo.", "You are Demo 2."))
    result = promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 1
    assert "layer 'identity' changed at byte offset 12" in result.stderr and "also changed: tools" in result.stderr


def test_check_says_goldens_were_not_updated_after_a_version_bump(project):
    tmp_path, target = project
    write_contract(tmp_path / "demo_contract.py", identity=IDENTITY + "\nNew rule.", version="px2")
    result = promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 1
    assert "version was bumped (px1 -> px2) but the goldens were not updated" in result.stderr


def test_update_after_a_version_bump_makes_check_pass(project):
    tmp_path, target = project
    write_contract(tmp_path / "demo_contract.py", identity=IDENTITY + "\nNew rule.", version="px2")
    assert promptlint("golden", "update", target, "--dir", "golden", cwd=tmp_path).returncode == 0
    assert promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path).returncode == 0


def test_a_corrupt_golden_file_is_a_usage_error_with_exit_2(project):
    tmp_path, target = project
    (tmp_path / "golden" / "demo.json").write_text('{"format": 1, "contract": ', encoding="utf-8")
    result = promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 2
    assert "not a readable JSON golden file" in result.stderr and "Traceback" not in result.stderr


def test_a_golden_file_of_the_wrong_shape_is_a_usage_error(project):
    tmp_path, target = project
    (tmp_path / "golden" / "demo.json").write_text('{"format": 1, "contract": "demo"}', encoding="utf-8")
    result = promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 2 and "field 'version' is missing" in result.stderr


def test_a_golden_layer_without_its_text_is_a_usage_error(project):
    tmp_path, target = project
    path = tmp_path / "golden" / "demo.json"
    document = json.loads(path.read_text())
    document["layers"]["identity"] = "flattened by hand"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 2 and "layer 'identity' lacks its text" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_golden_file_of_another_contract_is_a_usage_error(project):
    tmp_path, target = project
    path = tmp_path / "golden" / "demo.json"
    path.write_text(path.read_text().replace('"contract": "demo"', '"contract": "other"'), encoding="utf-8")
    result = promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 2 and "records contract 'other', not 'demo'" in result.stderr


def test_a_missing_golden_file_fails_the_check_with_exit_1(project):
    tmp_path, target = project
    result = promptlint("golden", "check", target, "--dir", "elsewhere", cwd=tmp_path)
    assert result.returncode == 1 and "no golden file" in result.stderr


def test_a_bad_target_is_a_usage_error_with_exit_2(tmp_path):
    result = promptlint("golden", "check", "no_such_file.py:contract", cwd=tmp_path)
    assert result.returncode == 2 and "no such file" in result.stderr


def test_a_target_that_is_not_a_contract_is_a_usage_error(tmp_path):
    (tmp_path / "x.py").write_text("contract = 42\n")
    result = promptlint("hash", f"{tmp_path / 'x.py'}:contract", cwd=tmp_path)
    assert result.returncode == 2 and "is not a PromptContract" in result.stderr


def test_a_callable_target_returning_a_list_updates_every_contract(project):
    tmp_path, _ = project
    result = promptlint("golden", "update", f"{tmp_path / 'demo_contract.py'}:both", "--dir", "golden", cwd=tmp_path)
    assert result.returncode == 0
    assert sorted(p.name for p in (tmp_path / "golden").iterdir()) == ["demo.json", "other.json"]


def test_hash_prints_sha_tokens_breakpoints_and_layer_hashes(project):
    tmp_path, target = project
    result = promptlint("hash", target, "--provider", "anthropic", cwd=tmp_path)
    assert result.returncode == 0
    assert "prefix sha256 " in result.stdout and "floor 4096" in result.stdout
    assert "breakpoints tools[0], system[0], system[1]" in result.stdout
    assert "layer identity" in result.stdout and "openai" not in result.stdout


def test_hash_json_matches_the_golden_file(project):
    tmp_path, target = project
    result = promptlint("hash", target, "--json", cwd=tmp_path)
    golden = json.loads((tmp_path / "golden" / "demo.json").read_text())
    for entry in json.loads(result.stdout)[0]["providers"]:
        assert entry["sha256"] == golden["providers"][entry["provider"]]["sha256"]


def test_the_example_contract_matches_its_committed_goldens():
    result = promptlint("golden", "check", "fixtures/contracts/support_bot.py:contract", cwd=ROOT)
    assert result.returncode == 0, result.stderr


PLUGIN_TEST = '''
import demo_contract

def test_demo_prefix(promptlint_golden):
    promptlint_golden(demo_contract.contract, directory="golden")
'''


def run_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_demo_golden.py").write_text(PLUGIN_TEST)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "test_demo_golden.py", "--rootdir", str(tmp_path), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_pytest_plugin_fails_a_test_whose_contract_leaves_its_golden(project):
    tmp_path, _ = project
    write_contract(tmp_path / "demo_contract.py", identity=IDENTITY + " Today is Monday.")
    result = run_pytest(tmp_path)
    assert result.returncode == 1
    assert "layer 'identity' changed at byte offset" in result.stdout


def test_pytest_plugin_update_option_rewrites_the_golden(project):
    tmp_path, _ = project
    write_contract(tmp_path / "demo_contract.py", identity=IDENTITY + " Reworded.", version="px2")
    assert run_pytest(tmp_path, "--promptlint-update-goldens").returncode == 0
    assert run_pytest(tmp_path).returncode == 0
    assert json.loads((tmp_path / "golden" / "demo.json").read_text())["version"] == "px2"


def _usage_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("promptlint: error: "), result.stderr
    return lines[0]


def test_update_into_a_dir_under_a_file_is_a_usage_error(project):
    tmp_path, target = project
    (tmp_path / "plain").write_text("x")
    assert "cannot write goldens into" in _usage_error(promptlint("golden", "update", target, "--dir", "plain/sub", cwd=tmp_path))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_update_into_an_unwritable_dir_is_a_usage_error(project):
    tmp_path, target = project
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert "cannot write goldens into" in _usage_error(promptlint("golden", "update", target, "--dir", "locked", cwd=tmp_path))
    finally:
        locked.chmod(0o700)


def test_a_golden_layer_entry_that_is_not_an_object_is_a_usage_error(project):
    tmp_path, target = project
    path = tmp_path / "golden" / "demo.json"
    document = json.loads(path.read_text())
    document["layers"]["identity"] = "text"
    path.write_text(json.dumps(document))
    assert "layer 'identity' lacks its text" in _usage_error(promptlint("golden", "check", target, "--dir", "golden", cwd=tmp_path))


def test_a_target_callable_that_raises_and_a_module_that_exits_are_usage_errors(tmp_path):
    (tmp_path / "raising.py").write_text("def make():\n    raise RuntimeError('no database')\n")
    (tmp_path / "exiting.py").write_text("import sys\nsys.exit(3)\n")
    assert "calling make() raised RuntimeError: no database" in _usage_error(
        promptlint("golden", "check", "raising.py:make", cwd=tmp_path))
    assert "called sys.exit(3)" in _usage_error(promptlint("hash", "exiting.py:contract", cwd=tmp_path))


def test_hash_model_renders_only_where_the_model_belongs(project):
    tmp_path, target = project
    result = promptlint("hash", target, "--model", "claude-sonnet-4-5", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [e["provider"] for e in json.loads(result.stdout)[0]["providers"]] == ["anthropic"]
    assert "not a model of any provider" in _usage_error(promptlint("hash", target, "--model", "gtp-4.1", cwd=tmp_path))
    assert "is a anthropic model" in _usage_error(
        promptlint("hash", target, "--model", "claude-sonnet-4-5", "--provider", "openai", cwd=tmp_path))


def test_pytest_plugin_prints_a_failure_once_and_names_its_own_option(project):
    tmp_path, _ = project
    write_contract(tmp_path / "demo_contract.py", identity=IDENTITY + " Today is Monday.")
    output = run_pytest(tmp_path).stdout
    # pytest repeats the whole message in its short summary when CI is set; count the failure report only.
    report = output.split("short test summary info")[0]
    assert report.count("changed at byte offset") == 1, output
    assert "rerun pytest with --promptlint-update-goldens" in output and "promptlint golden update" not in output


def test_pytest_plugin_refuses_two_contracts_with_one_name(project):
    tmp_path, _ = project
    (tmp_path / "test_twins.py").write_text(textwrap.dedent('''
        from promptlint.contract import Layer, PromptContract

        def test_first(promptlint_golden):
            promptlint_golden(PromptContract("twin", "v1", [Layer("identity", text="First.")]), directory="golden")

        def test_second(promptlint_golden):
            promptlint_golden(PromptContract("twin", "v1", [Layer("identity", text="Second.")]), directory="golden")
    '''))
    result = run_pytest(tmp_path, "--promptlint-update-goldens", "test_twins.py")
    assert result.returncode == 1 and "two different contracts named 'twin'" in result.stdout
