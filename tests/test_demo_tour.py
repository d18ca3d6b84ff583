"""The demo entry point around the tour: reusing a finished warehouse, notebooks to HTML.

The tour notebooks themselves are checked by ``pytest --nbval notebooks/`` (which builds
the demo warehouse when it is missing); these tests cover what the command adds.
"""

from __future__ import annotations

import pytest

from puffin_explorer import demo


def _finished_layout(folder, hint="2"):
    for table in demo.TABLES:
        meta = folder / demo.NAMESPACE / table / "metadata"
        meta.mkdir(parents=True)
        (meta / "version-hint.text").write_text(hint)


def test_only_a_finished_build_is_ready(tmp_path):
    assert not demo.demo_warehouse_ready(str(tmp_path))
    _finished_layout(tmp_path)
    assert not demo.demo_warehouse_ready(str(tmp_path))  # tables, but the build never said it finished
    (tmp_path / demo.COMPLETE_MARKER).write_text("{}")
    assert demo.demo_warehouse_ready(str(tmp_path))


def test_a_finished_warehouse_is_reused_without_spark(tmp_path, capsys):
    _finished_layout(tmp_path, hint="7")
    (tmp_path / demo.COMPLETE_MARKER).write_text("{}")
    assert demo.main([str(tmp_path), "--no-notebooks"]) == 0
    out = capsys.readouterr().out
    assert f"reusing the demo warehouse in {tmp_path}" in out
    assert str(tmp_path / "shop" / "events" / "metadata" / "v7.metadata.json") in out


def test_the_tour_notebooks_are_found_in_the_checkout():
    folder = demo.notebooks_folder()
    assert folder is not None and folder.endswith("notebooks")


def test_notebook_to_html_runs_in_the_notebook_folder_with_the_warehouse_set(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbconvert")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nprint('wh=' + os.environ['PUFFIN_EXPLORER_WAREHOUSE'])"),
                nbformat.v4.new_code_cell("print('cwd=' + os.getcwd())"),
                nbformat.v4.new_code_cell("raise ValueError('cell three fails')")]
    (tmp_path / "nbs").mkdir()
    path = tmp_path / "nbs" / "probe.ipynb"
    nbformat.write(nb, str(path))
    lines: list[str] = []
    with pytest.raises(Exception, match="cell three fails"):
        demo.notebook_to_html(str(path), str(tmp_path / "wh"), str(tmp_path / "out" / "probe.html"), log=lines.append)
    assert [ln.split("]")[0] for ln in lines] == ["  probe.ipynb [ 1/3", "  probe.ipynb [ 2/3", "  probe.ipynb [ 3/3"]
    assert not (tmp_path / "out" / "probe.html").exists()
    partial = (tmp_path / "out" / "probe.partial.html").read_text()
    assert f"wh={tmp_path / 'wh'}" in partial and f"cwd={tmp_path / 'nbs'}" in partial

    nb.cells = nb.cells[:2]
    nbformat.write(nb, str(path))
    written = demo.notebook_to_html(str(path), str(tmp_path / "wh"), str(tmp_path / "out" / "probe.html"),
                                    log=lines.append)
    page = (tmp_path / "out" / "probe.html").read_text()
    assert written == str(tmp_path / "out" / "probe.html")
    assert page.lstrip().lower().startswith("<!doctype html") and f"wh={tmp_path / 'wh'}" in page
