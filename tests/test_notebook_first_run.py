"""The tour notebooks as a new user first runs them: a fresh kernel with empty HOME, MPLCONFIGDIR and
XDG_CACHE_HOME (no matplotlib font cache, no IPython profile), Python warnings from the package and from
matplotlib's date ticks turned into errors.  Every figure handed back draws itself (an image, not the text
``<Figure size ...>``), whatever backend the kernel starts with; no cell shows an error, a warning or
anything on stderr."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: The first cell of every run: the warnings a user must never see become errors.
STRICT = ("import warnings\n"
          "warnings.filterwarnings('error', module='puffin_explorer')\n"
          "warnings.filterwarnings('error', message='AutoDateLocator')\n")
#: A warning or an error a card caught and printed inside its own output.
WARNING_TEXT = re.compile(r"\b\w*(Warning|Error): ")


def run_fresh(name: str, tmp_path: Path, env: dict[str, str] = (), upto: str = "", before: str = "") -> list:
    """Execute ``notebooks/name`` (up to the first cell whose source contains ``upto``, or up to the one before
    the first that contains ``before``) in a fresh kernel; its code cells."""
    nb = nbformat.read(str(NOTEBOOKS / name), as_version=4)
    if upto or before:
        last = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (upto or before) in c.source)
        nb.cells = nb.cells[:last + 1 if upto else last]
    nb.cells.insert(0, nbformat.v4.new_code_cell(STRICT))
    kernel_env = dict(os.environ)
    for var in ("HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME"):
        (tmp_path / var.lower()).mkdir()
        kernel_env[var] = str(tmp_path / var.lower())
    kernel_env.pop("MPLBACKEND", None)
    kernel_env.update(dict(env))
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute(env=kernel_env)
    return [c for c in nb.cells if c.cell_type == "code"]


def problems(cells: list) -> list[str]:
    """Error outputs, stderr streams, and warnings or errors printed inside an output, per cell."""
    found = []
    for i, cell in enumerate(cells):
        first = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
        for out in cell.outputs:
            if out.output_type == "error":
                found.append(f"cell {i} ({first}): {out.ename}: {out.evalue[:300]}")
            elif out.output_type == "stream" and out.name == "stderr":
                found.append(f"cell {i} ({first}): stderr: {out.text[:300]}")
            else:
                texts = [out.get("text", "")] + [v for k, v in out.get("data", {}).items()
                                                 if k in ("text/plain", "text/html") and isinstance(v, str)]
                for text in texts:
                    m = WARNING_TEXT.search(text)
                    if m and "Warning" in m.group(1):
                        found.append(f"cell {i} ({first}): {text[max(0, m.start() - 80):m.end() + 200]}")
    return found


def plot_outputs(cells: list) -> list:
    cell = next(c for c in cells if c.source.strip() == "dv.plot()")
    return [sorted(o.get("data", {})) for o in cell.outputs]


def test_the_tour_in_a_fresh_kernel_draws_dv_plot_and_warns_nothing(tmp_path):
    cells = run_fresh("tour.ipynb", tmp_path)
    assert plot_outputs(cells) == [["image/png", "text/plain"]]
    assert problems(cells) == []


def test_a_figure_draws_itself_when_the_kernel_starts_with_another_backend(tmp_path):
    # the inline backend then registers no figure formatter: the figure's own _repr_png_ draws it
    cells = run_fresh("tour.ipynb", tmp_path, {"MPLBACKEND": "agg"}, upto="dv.plot()")
    assert plot_outputs(cells) == [["image/png", "text/plain"]]
    png = next(o for o in cells[-1].outputs if o.output_type == "execute_result")
    assert png.data["text/plain"] == "<Figure size 700x210 with 1 Axes>"
    assert problems(cells) == []


@pytest.mark.spark
def test_the_warehouse_notebook_in_a_fresh_kernel_warns_nothing(tmp_path, demo_warehouse):
    """Its cards, frames and doctor: what a fresh kernel changes.  Its Spark part starts a session of its own
    (40 s) and draws nothing; nbval runs the whole notebook, where a warning or error in a cell fails too."""
    session = "# NBVAL_IGNORE_OUTPUT\nspark = pes.session("
    cells = run_fresh("warehouse.ipynb", tmp_path, {"PUFFIN_EXPLORER_WAREHOUSE": str(demo_warehouse)}, before=session)
    assert any("wh.health(now=NOW)" in c.source for c in cells) and not any(session in c.source for c in cells)
    assert problems(cells) == []
