"""docs/screenshots.py draws a view in JupyterLab's light and dark themes with the real headless Chromium."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.browser


def _screenshots_module():
    spec = importlib.util.spec_from_file_location("docs_screenshots", ROOT / "docs" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_puffin_file_card_in_light_and_dark(tmp_path):
    pytest.importorskip("playwright.sync_api")
    Image = pytest.importorskip("PIL.Image")
    ImageStat = pytest.importorskip("PIL.ImageStat")
    shots = _screenshots_module()
    if not Path(shots.CHROMIUM).exists():
        pytest.skip("chromium not installed (make test installs Debian's chromium)")
    assert not shots.needs_warehouse(["puffin-file"])

    written = shots.render(["puffin-file"], tmp_path / "images", shots.Context(tmp_path / "no-warehouse"))

    light, dark = tmp_path / "images" / "puffin-file-light.png", tmp_path / "images" / "puffin-file-dark.png"
    assert written == [light, dark]
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == ["puffin-file-dark.png", "puffin-file-light.png"]
    with Image.open(light) as a, Image.open(dark) as b:
        assert a.size[0] == b.size[0] == shots.WIDTH  # the output area spans the page
        assert a.size[0] > 400 and a.size[1] > 100 and b.size[1] > 100
        assert a.mode == b.mode == "P"  # reduced to a palette
        la, lb = a.convert("L"), b.convert("L")
        assert la.tobytes() != lb.tobytes()
        light_mean, dark_mean = ImageStat.Stat(la).mean[0], ImageStat.Stat(lb).mean[0]
    assert dark_mean < light_mean
    assert light_mean > 200 and dark_mean < 60  # a white page with dark text, and the other way round
