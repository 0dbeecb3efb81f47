"""Shared fixtures.

Tests that need the real 1,000-product shop and the reference's golden outputs use the
``real_dir`` / ``golden_dir`` fixtures, which skip cleanly when ``../shared/webshop-small`` (beside
the checkout) is absent, as on a user's fresh clone.  Set ``WEBSHOP_GYM_SHARED`` to point
elsewhere.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.helpers import disk_shortfall

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("WEBSHOP_GYM_SHARED", ROOT.parent / "shared")) / "webshop-small"


def pytest_sessionstart(session):
    """Say up front when the disk is too full for the suite (on the controller only, not per worker)."""
    if hasattr(session.config, "workerinput"):
        return
    from webshop_gym.utils.paths import cache_dir

    message = disk_shortfall([tempfile.gettempdir(), cache_dir(create=False)])
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if message and reporter is not None:
        reporter.write_line(f"WARNING: {message}", yellow=True, bold=True)


def shared_available() -> bool:
    """Whether the real shop and its golden outputs are present."""
    return (SHARED / "items_shuffle_1000.json").is_file() and (SHARED / "golden" / "goals.json").is_file()


@pytest.fixture(scope="session")
def real_dir() -> Path:
    """The real 1k shop (skips when ../shared is absent)."""
    if not shared_available():
        pytest.skip("../shared/webshop-small is not present (it is beside the project's own checkout only)")
    return SHARED


@pytest.fixture(scope="session")
def golden_dir(real_dir) -> Path:
    """The reference's golden outputs for the real shop."""
    return real_dir / "golden"


@pytest.fixture(scope="session")
def default_shop():
    """The embedded default shop with its synthetic goals (seed 0)."""
    from webshop_gym import load_shop

    return load_shop(progress=False)


@pytest.fixture(scope="session")
def real_shop(real_dir, golden_dir):
    """The real 1k shop under the reference's golden goal set and prices."""
    from webshop_gym import load_shop

    return load_shop(real_dir, goals=golden_dir / "goals.json", progress=False)


@pytest.fixture(scope="session")
def real_human_shop(real_dir, golden_dir):
    """The real 1k shop under the reference's golden human goal set."""
    from webshop_gym import load_shop

    return load_shop(real_dir, goals=golden_dir / "human" / "goals.json", progress=False)
