"""Shared test helpers: where the reference fixtures and the samples live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"
#: Reference files written by other implementations (treat as read-only; tests copy before they change one).
FIXTURES = Path(os.environ.get("PUFFIN_EXPLORER_FIXTURES", RESOURCES / "fixtures"))

sys.path.insert(0, str(RESOURCES))

# One Spark session, one demo warehouse and one S3 server per run: fixtures defined once here, never imported
# into test modules (an imported session fixture is a second fixture, which would start a second catalog or
# a second server).
from _s3server import s3_server  # noqa: E402,F401
from _spark import demo_warehouse, fixture_warehouse, spark  # noqa: E402,F401


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"reference fixtures not found at {FIXTURES} (set PUFFIN_EXPLORER_FIXTURES)")
    return FIXTURES


@pytest.fixture(scope="session")
def resources() -> Path:
    return RESOURCES


#: Fixtures that start a real component, and the marker a test that uses one carries (``-m "not spark"`` and
#: the like then select it out even when its module forgot the marker).
MARKER_OF_FIXTURE = {
    "spark": "spark", "demo_warehouse": "spark", "fixture_warehouse": "spark", "any_spark": "spark",
    "s3_server": "s3",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        have = {m.name for m in item.iter_markers()}
        for name in sorted({MARKER_OF_FIXTURE[f] for f in getattr(item, "fixturenames", ()) if f in MARKER_OF_FIXTURE}
                           - have):
            item.add_marker(name)
