"""[tool.promptlint] discovery, validation and selection (promptlint.lint.config)."""

from __future__ import annotations

import os

import pytest

from promptlint.lint.config import ConfigError, is_selected, load_settings
from promptlint.lint.diagnostic import Settings


def write_pyproject(directory, body: str):
    path = directory / "pyproject.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_closest_pyproject_with_the_section_wins(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nignore = ['PC5']\n")
    inner = tmp_path / "pkg"
    inner.mkdir()
    write_pyproject(inner, "[project]\nname = 'x'\n")  # no [tool.promptlint]: skipped
    settings = load_settings([str(inner)])
    assert settings.ignore == ("PC5",)
    assert settings.root == str(tmp_path)
    assert settings.config_path == str(tmp_path / "pyproject.toml")


def test_standalone_promptlint_toml_has_keys_at_top_level(tmp_path):
    (tmp_path / "promptlint.toml").write_text("select = ['PC1']\n", encoding="utf-8")
    assert load_settings([str(tmp_path)]).select == ("PC1",)


def test_no_config_means_defaults_rooted_at_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = load_settings([str(tmp_path)])
    assert settings.select == Settings.select and settings.root == os.getcwd()


def test_unknown_key_names_the_file_and_the_key(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nselekt = ['PC1']\n")
    with pytest.raises(ConfigError, match=r"pyproject\.toml.*'selekt'"):
        load_settings([str(tmp_path)])


def test_snake_case_key_is_rejected_with_the_kebab_spelling(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nmemory_files = ['MEMORY.md']\n")
    with pytest.raises(ConfigError, match="did you mean 'memory-files'"):
        load_settings([str(tmp_path)])


def test_wrong_type_names_the_key(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nmax-file-bytes = 'big'\n")
    with pytest.raises(ConfigError, match="'max-file-bytes' must be a positive integer"):
        load_settings([str(tmp_path)])


def test_string_instead_of_list_names_the_key(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nignore = 'PC101'\n")
    with pytest.raises(ConfigError, match="'ignore' must be a list of strings"):
        load_settings([str(tmp_path)])


def test_unknown_code_names_the_key_and_the_code(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nselect = ['PC1', 'PC999']\n")
    with pytest.raises(ConfigError, match="'select' names unknown rule code or prefix 'PC999'"):
        load_settings([str(tmp_path)])


def test_unknown_code_in_per_file_ignores_names_the_glob(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint.per-file-ignores]\n'tests/*' = ['XX1']\n")
    with pytest.raises(ConfigError, match=r"'per-file-ignores\.tests/\*'"):
        load_settings([str(tmp_path)])


def test_invalid_toml_is_a_config_error(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings([str(tmp_path)])


def test_missing_rule_file_names_the_key(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nrule-files = ['rules/mine.yaml']\n")
    with pytest.raises(ConfigError, match="'rule-files' entry 'rules/mine.yaml' not found"):
        load_settings([str(tmp_path)])


def test_rule_files_and_src_resolve_relative_to_the_config_file(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text("version: 1\n", encoding="utf-8")
    write_pyproject(tmp_path, "[tool.promptlint]\nrule-files = ['mine.yaml']\nsrc = ['lib']\n")
    monkeypatch.chdir("/")
    settings = load_settings([str(tmp_path)])
    assert settings.rule_files == (str(tmp_path / "mine.yaml"),)
    assert settings.src == (str(tmp_path / "lib"),)


def test_explicit_config_without_the_section_is_an_error(tmp_path):
    path = write_pyproject(tmp_path, "[project]\nname = 'x'\n")
    with pytest.raises(ConfigError, match=r"no \[tool\.promptlint\] table"):
        load_settings([str(tmp_path)], config_path=str(path))


def test_command_line_select_replaces_and_ignore_adds(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nselect = ['PC1']\nignore = ['PC601']\n")
    settings = load_settings([str(tmp_path)], overrides={"select": ["PC5"], "ignore": "PC501,PC502"})
    assert settings.select == ("PC5",)
    assert settings.ignore == ("PC601", "PC501", "PC502")


def test_unknown_code_on_the_command_line_names_the_option(tmp_path):
    with pytest.raises(ConfigError, match="--select"):
        load_settings([str(tmp_path)], overrides={"select": ["NOPE"]})


def test_extend_select_adds_to_select(tmp_path):
    write_pyproject(tmp_path, "[tool.promptlint]\nselect = ['PC1']\nextend-select = ['PC5']\n")
    assert load_settings([str(tmp_path)]).select == ("PC1", "PC5")


def test_ignore_removes_a_code_and_the_more_specific_select_wins():
    settings = Settings(select=("PC", "PC601"), ignore=("PC6",))
    assert not is_selected("PC602", "a.py", settings)
    assert is_selected("PC601", "a.py", settings)
    assert is_selected("PC501", "a.py", settings)


def test_unselected_code_is_not_reported():
    assert not is_selected("PC501", "a.py", Settings(select=("PC1",)))


def test_per_file_ignores_match_paths_relative_to_the_root(tmp_path):
    settings = Settings(root=str(tmp_path), per_file_ignores=(("tests/*", ("PC1",)),))
    assert not is_selected("PC101", str(tmp_path / "tests" / "deep" / "test_a.py"), settings)
    assert is_selected("PC101", str(tmp_path / "app" / "a.py"), settings)
    assert is_selected("PC501", str(tmp_path / "tests" / "test_a.py"), settings)


def test_an_optional_entry_names_a_bundled_opt_in_rule_file(tmp_path):
    from promptlint.lint.catalog import rules_dir

    write_pyproject(tmp_path, '[tool.promptlint]\nrule-files = ["optional:ordering", "optional:host"]\n')
    assert load_settings([str(tmp_path)]).rule_files == (
        str(rules_dir() / "optional" / "ordering.yaml"), str(rules_dir() / "optional" / "host.yaml"))


def test_an_unknown_optional_entry_is_a_config_error_listing_the_bundled_ones(tmp_path):
    write_pyproject(tmp_path, '[tool.promptlint]\nrule-files = ["optional:orderings"]\n')
    with pytest.raises(ConfigError) as raised:
        load_settings([str(tmp_path)])
    message = str(raised.value)
    assert "'optional:orderings' is not a bundled opt-in file" in message
    assert "optional:environment, optional:host, optional:live, optional:ordering" in message


def test_orderings_are_sources_only_when_opted_in(tmp_path):
    from promptlint.lint.engine import lint_source

    source = '''TOOLS = {"search", "open"}

def system_prompt():
    return "Tools: " + ", ".join(TOOLS)
'''
    write_pyproject(tmp_path, '[tool.promptlint]\nrule-files = ["optional:ordering"]\n')
    assert [d.code for d in lint_source(source)] == []
    assert [d.code for d in lint_source(source, settings=load_settings([str(tmp_path)]))] == ["PC501"]
