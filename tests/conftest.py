"""Suite-wide settings: the cache-signing key lives in a folder of the test session, never in ~."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_key_dir(tmp_path_factory):
    import os

    os.environ["PROMPTLINT_KEY_DIR"] = str(tmp_path_factory.mktemp("promptlint-key"))
    yield
