"""pytest plugin (entry point ``pytest11``): assert prompt contracts against their goldens.

    def test_support_bot_prefix_is_unchanged(promptlint_golden):
        promptlint_golden(contract)                       # fixtures/golden by default
        promptlint_golden(contract, directory="tests/golden")

Run ``pytest --promptlint-update-goldens`` after a deliberate version bump to rewrite them.
The plugin imports nothing heavy until the fixture is used.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

UPDATE_OPTION = "--promptlint-update-goldens"
_SEEN = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--promptlint-update-goldens``."""
    group = parser.getgroup("promptlint")
    group.addoption(UPDATE_OPTION, action="store_true", default=False,
                    help="Rewrite promptlint golden prefix-hash files instead of checking them.")


@pytest.fixture
def promptlint_golden(request: pytest.FixtureRequest) -> Callable[..., None]:
    """A function ``check(contract, directory="fixtures/golden")`` that fails the test on a mismatch.

    Relative directories resolve against pytest's rootdir, so the test passes from any cwd.
    Two different contracts with one name in one directory fail the run (their golden files
    would overwrite each other), as ``promptlint golden`` refuses them.
    """
    from promptlint.golden.gate import DEFAULT_DIR, assert_matches_golden, golden_path, golden_document

    config = request.config
    update = bool(config.getoption(UPDATE_OPTION))
    root = config.rootpath
    seen = config.stash.setdefault(_SEEN, {})

    def check(contract: Any, directory: str = DEFAULT_DIR) -> None:
        __tracebackhide__ = True
        path = golden_path(root / directory, contract).resolve()
        document = golden_document(contract)
        owner = seen.setdefault(path, (request.node.nodeid, document))
        if owner[1] != document:
            pytest.fail(f"two different contracts named {contract.name!r} use the golden file {path} "
                        f"(the other is checked in {owner[0]}); give one another name", pytrace=False)
        try:
            assert_matches_golden(contract, root / directory, update=update,
                                  update_hint=f"rerun pytest with {UPDATE_OPTION}")
        except AssertionError as exc:
            message = str(exc)
        else:
            return
        # Raised outside the except block, so pytest shows the message once (no chained context).
        pytest.fail(message, pytrace=False)

    return check


@pytest.fixture
def prompt_harness():
    """A :class:`promptlint.caching.harness.PrefixHarness`: SDK clients pointed at an in-process
    emulator, a movable clock, and ``assert_stable_prefix()`` (see docs/harness.md)."""
    from promptlint.caching.harness import PrefixHarness

    with PrefixHarness() as harness:
        yield harness
