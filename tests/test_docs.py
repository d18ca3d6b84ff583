"""The documentation site builds offline with ``mkdocs build --strict``, and README.md stays a few screens.

The strict build fails on a broken link or anchor, a missing image, a page left out of the navigation or a
failed API reference; on top of that, any WARNING line fails here. The tour notebooks are pages with the
outputs stored in them, and the API reference covers every public name.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

README_MAX_LINES = 250
NOTEBOOKS = {"tour": ROOT / "notebooks" / "tour.ipynb", "warehouse": ROOT / "notebooks" / "warehouse.ipynb"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                        str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-5000:]
    assert [line for line in log.splitlines() if "WARNING" in line] == []
    return out


def _page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text(encoding="utf-8")


def _visible_text(markup: str) -> str:
    """Text as a reader sees it: no styles, no tags, entities decoded, whitespace collapsed."""
    markup = re.sub(r"<style.*?</style>", " ", markup, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def test_every_page_of_the_nav_is_built(site):
    import yaml

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)

    def sources(nav):
        for item in nav:
            for value in item.values():
                yield from (sources(value) if isinstance(value, list) else [value])

    pages = list(sources(config["nav"]))
    assert {p for p in pages if p.endswith(".md")} == {p.name for p in (ROOT / "docs").glob("*.md")}
    for page in pages:
        assert (site / Path(page).with_suffix("") / "index.html").is_file() or page == "index.md", page
    assert (site / "index.html").is_file()


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_notebook_pages_show_their_stored_outputs(site, name):
    """Every output stored in the notebook is on its page: images byte for byte, HTML and text as read."""
    notebook = json.loads(NOTEBOOKS[name].read_text(encoding="utf-8"))
    page = _page(site, f"notebooks/{name}")
    text = _visible_text(page)
    outputs = [o for cell in notebook["cells"] for o in cell.get("outputs", [])]
    assert len(outputs) > 20
    for o in outputs:
        data = o.get("data", {})
        if "image/png" in data:
            assert f"data:image/png;base64,{data['image/png'].strip()}" in page
        elif "text/html" in data:
            assert _visible_text("".join(data["text/html"]))[:300] in text
        elif o["output_type"] == "stream":
            assert " ".join("".join(o["text"]).split())[:300] in text
        elif "text/plain" in data:
            assert " ".join("".join(data["text/plain"]).split())[:300] in text


def test_the_tour_page_shows_the_dv_chart(site):
    """The tour's ``dv.plot()`` cell: its stored PNG is an image on the page."""
    notebook = json.loads(NOTEBOOKS["tour"].read_text(encoding="utf-8"))
    [cell] = [c for c in notebook["cells"] if "".join(c["source"]).strip() == "dv.plot()"]
    [png] = [o["data"]["image/png"] for o in cell["outputs"] if "image/png" in o.get("data", {})]
    assert re.search(r'<img[^>]*src="data:image/png;base64,' + re.escape(png.strip()) + '"',
                     _page(site, "notebooks/tour"))


def test_the_api_reference_covers_every_public_name(site):
    import puffin_explorer
    from puffin_explorer import spark

    api = _page(site, "api")
    for name in puffin_explorer.__all__:
        module = "puffin_explorer.display" if name in puffin_explorer._DISPLAY_NAMES else "puffin_explorer"
        assert f'id="{module}.{name}"' in api, name
    assert "A Puffin file, opened leniently." in _visible_text(api)  # the docstrings' own words
    spark_api = _page(site, "api-spark")
    documented = set(re.findall(r'id="(puffin_explorer\.spark\.[A-Za-z_.]+)"', spark_api))
    for name in spark.__all__:  # ``session`` and ``health`` share their names with their modules
        assert {f"puffin_explorer.spark.{name}", f"puffin_explorer.spark.{name}.{name}"} & documented, name
    assert "every position deleted by a live DV of table" in _visible_text(spark_api)
    # Sphinx roles in docstrings read as code, "~" keeping the last name, as Sphinx shows them
    assert not re.search(r":(class|meth|func|attr|data|exc):", _visible_text(api + spark_api))
    assert "strict=True opening reads and checks every blob too, and raises InvalidFileError for the first error" in (
        _visible_text(api))


def test_the_site_loads_nothing_from_the_network(site):
    """No script, stylesheet, font or image comes from another host: the site reads offline."""
    remote = []
    for path in site.rglob("*.html"):
        page = path.read_text(encoding="utf-8")
        remote += [(path.name, m) for m in re.findall(r'<(?:script|img|link|iframe)\b[^>]*?(?:src|href)="((?:https?:)?//[^"]+)"',
                                                      page) if not m.startswith("https://squidfunk")]
    assert remote == []
    assert not any("fonts.googleapis" in p.read_text(encoding="utf-8") for p in site.rglob("*.css"))


def test_pages_show_the_pictures_in_both_palettes(site):
    """Each picture of docs/images is on the site, light and dark, and the built page holds the file."""
    images = sorted(p.name for p in (ROOT / "docs" / "images").glob("*.png"))
    assert len(images) >= 12
    built = "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))
    for name in images:
        assert (site / "images" / name).read_bytes() == (ROOT / "docs" / "images" / name).read_bytes()
        assert f"images/{name}#only-{'dark' if name.endswith('-dark.png') else 'light'}" in built, name


def test_readme_is_a_few_screens_with_pictures():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    images = set(re.findall(r'(?:src|srcset)="([^"]+\.png)"|!\[[^\]]*\]\(([^)\s]+\.png)\)', text))
    paths = {a or b for a, b in images}
    assert len(paths) >= 4
    assert [p for p in paths if not (ROOT / p).is_file()] == []


def test_readme_links_to_pages_that_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+)", text)
    assert len(links) >= 10
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_stored_outputs_name_no_folder_of_the_machine_that_ran_them():
    """The tours' outputs are published as pages: a path they show is a temporary folder or the demo's
    neutral one (/tmp/...), never a checkout or home folder of whoever stored them."""
    private = re.compile(r"(?<![\w.])/(?:work|home|root|Users|mnt|opt|srv|var/lib)/[\w.-]+")
    for name, path in NOTEBOOKS.items():
        nb = json.loads(path.read_text(encoding="utf-8"))
        hits = sorted({m.group(0) for cell in nb["cells"] for out in cell.get("outputs", [])
                       for m in private.finditer(json.dumps(out))})
        assert hits == [], f"{name}.ipynb stores outputs naming {hits}"


def _relative_paths(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w/.])(\.\./[^\s\"'`),]+)", text))


def test_examples_and_tours_read_only_files_of_a_fresh_clone():
    """What the README, the pages and the tours open is in the repository (``resources/``) or made by
    ``make demo`` (``./demo-warehouse``): a fresh clone has nothing beside it, so a path that climbs out of
    the repository is a dead end for a new user."""
    outside = []
    for page in ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]:
        blocks = "\n".join(re.findall(r"```(?:python|bash)\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"),
                                      re.S))
        for rel in _relative_paths(blocks):
            if not (ROOT / rel).resolve().is_relative_to(ROOT):
                outside.append((page, rel))
    for name, path in NOTEBOOKS.items():
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        for rel in _relative_paths(code):
            if not (path.parent / rel).resolve().is_relative_to(ROOT):
                outside.append((name, rel))
    assert outside == []
    tour = "".join("".join(c["source"]) for c in json.loads(NOTEBOOKS["tour"].read_text(encoding="utf-8"))["cells"])
    assert '"../resources/fixtures/engines"' in tour  # the tour's Delta and DuckDB tables, shipped
