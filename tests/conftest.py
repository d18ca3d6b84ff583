"""Shared test helpers: where the reference fixtures and the samples live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"
#: Reference files written by other implementations (read-only), beside the repository.
FIXTURES = Path(os.environ.get("PUFFIN_EXPLORER_FIXTURES", ROOT.parent / "shared" / "fixtures"))

sys.path.insert(0, str(RESOURCES))

# One Spark session and one demo warehouse per run: fixtures defined once here, never imported into
# test modules (an imported session fixture is a second fixture, which would start a second catalog).
from _spark import demo_warehouse, fixture_warehouse, spark  # noqa: E402,F401


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"reference fixtures not found at {FIXTURES} (set PUFFIN_EXPLORER_FIXTURES)")
    return FIXTURES


@pytest.fixture(scope="session")
def resources() -> Path:
    return RESOURCES
