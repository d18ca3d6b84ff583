"""Parsing never imports display code: each model package imports in a fresh interpreter without
loading any ``puffin_explorer.display`` module; the package's import graph has no circles where the
layers say it must not; and the view registry is open."""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "puffin_explorer"
PROBE = """
import importlib, sys
importlib.import_module({module!r})
loaded = sorted(m for m in sys.modules if m.startswith("puffin_explorer.display") or m == "matplotlib")
print(",".join(loaded))
"""


@pytest.mark.parametrize("module", ["puffin_explorer", "puffin_explorer.format", "puffin_explorer.parquet",
                                    "puffin_explorer.iceberg", "puffin_explorer.delta", "puffin_explorer.io"])
def test_model_packages_import_without_the_display_layer(module):
    out = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == ""


@lru_cache(maxsize=1)
def import_graph() -> dict[str, frozenset[str]]:
    """``{module: modules it imports}`` over every ``.py`` file of the package, read with ``ast``: every
    import counts (module level, inside functions, under ``if TYPE_CHECKING:``), relative ones resolved;
    ``from package import name`` is an edge to the submodule ``name`` when there is one, else to the package
    (its ``__init__``), and ``import a.b.c`` to the nearest module of the package it names."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path

    def known(name: str):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(known(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets.update(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else known(source)
                               for alias in node.names)
        graph[name] = frozenset(t for t in targets if t and t != name)
    return graph


def import_cycles(*packages: str) -> list[list[str]]:
    """The import circles among the modules of ``packages`` (``"delta"``, ``"spark"``, …, under
    ``puffin_explorer``) taken together, each as its sorted modules (Tarjan's strongly connected components)."""
    graph = import_graph()  # "" in packages: the package root too
    prefixes = [f"puffin_explorer.{p}" if p else "puffin_explorer" for p in packages]
    nodes = {m for m in graph if any(m == p or (p != "puffin_explorer" and m.startswith(p + ".")) for p in prefixes)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v] & nodes):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return cycles


def test_the_import_graph_sees_every_kind_of_import():
    graph = import_graph()
    assert "puffin_explorer.iceberg.paths" in graph["puffin_explorer.delta.snapshot"]  # module level, relative
    assert "puffin_explorer.format.dv" in graph["puffin_explorer.delta.snapshot"]  # inside a function
    assert "puffin_explorer.spark.index" in graph["puffin_explorer.spark.planner"]  # inside a method
    assert "puffin_explorer.parquet.layout" in graph["puffin_explorer.display.parquet_view"]  # TYPE_CHECKING
    assert "puffin_explorer.delta.z85" in graph["puffin_explorer.delta.snapshot"]  # from . import module


def layer_table() -> list[tuple[str, list[str]]]:
    """The layers of docs/layout.md's table, bottom first: ``(layer, modules and packages under puffin_explorer)``
    (``__init__`` is the package root)."""
    import re

    rows, seen = [], False
    for line in (ROOT / "docs" / "layout.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.strip().startswith("|") else []
        if cells[:2] == ["layer", "modules"]:
            seen = True
        elif seen and cells and not set(cells[0]) <= set("-"):
            rows.append((cells[0], re.findall(r"`([^`]+)`", cells[1])))
        elif seen and not cells:
            break
    return rows[::-1]


def layer_of(module: str, layers: list[tuple[str, list[str]]]) -> int:
    """The index (bottom 0) of the layer holding ``module``: the longest name of the table it is or is under."""
    name = module[len("puffin_explorer."):] if module != "puffin_explorer" else "__init__"
    found = [(len(n), i) for i, (_, names) in enumerate(layers) for n in names
             if name == n or name.startswith(n + ".")]
    assert found, f"{module} is in no layer of docs/layout.md"
    return max(found)[1]


def test_the_whole_package_has_no_import_circle():
    """Every module of the package together, every import counted: no circle at all."""
    packages = sorted({m.split(".")[1] for m in import_graph() if "." in m})
    assert import_cycles("", *packages) == []


def test_no_module_imports_from_a_layer_above_its_own():
    """The layer table of docs/layout.md, held: a module imports its own layer's modules or lower ones."""
    layers = layer_table()
    assert [name for name, _ in layers] == ["base", "io", "formats", "tables", "engines", "views", "apps"]
    upward = []
    for module, targets in import_graph().items():
        mine = layer_of(module, layers)
        upward += [f"{module} ({layers[mine][0]}) -> {t} ({layers[layer_of(t, layers)][0]})"
                   for t in sorted(targets) if layer_of(t, layers) > mine]
    assert upward == []


#: Who may import ``iceberg/table.py``: the packages that hand a Table to the user, its views and the command
#: line.  Every analysis takes ``(source, index)`` instead (``iceberg/source.py``).
TABLE_IMPORTERS = {"puffin_explorer.iceberg", "puffin_explorer.iceberg.warehouse", "puffin_explorer.spark.tables",
                   "puffin_explorer.display.table_view", "puffin_explorer.cli.spark", "puffin_explorer.cli.table"}


def test_no_analysis_imports_the_table_facade():
    graph = import_graph()
    importers = {m for m, ts in graph.items() if "puffin_explorer.iceberg.table" in ts}
    assert importers <= TABLE_IMPORTERS, sorted(importers - TABLE_IMPORTERS)
    for m in ("checks", "commits", "deletes", "files", "overview", "health", "index", "dvreads", "vanished",
              "columns", "source"):
        assert "puffin_explorer.iceberg.table" not in graph[f"puffin_explorer.iceberg.{m}"], m


@pytest.mark.parametrize("facade", ["iceberg/table.py", "delta/table.py"])
def test_the_table_facades_read_plainly(facade):
    """Table and DeltaTable open a source and delegate: no lambda, no ``# type: ignore``, every public method's
    arguments and answer annotated, no line past the project's 120 characters."""
    text = (PACKAGE / facade).read_text(encoding="utf-8")
    tree = ast.parse(text)
    assert not [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    assert "type: ignore" not in text
    assert not [i + 1 for i, line in enumerate(text.splitlines()) if len(line) > 120]
    bare = [f"{c.name}.{f.name}" for c in tree.body if isinstance(c, ast.ClassDef) for f in c.body
            if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")
            and (f.returns is None or any(a.annotation is None for a in f.args.args[1:] + f.args.kwonlyargs))]
    assert bare == []


#: Model packages: they reach views through the registry (``_repr.make_view``), never by importing them.
MODEL_PACKAGES = ("parquet", "iceberg", "delta", "format", "spark", "health")


@pytest.mark.parametrize("package", MODEL_PACKAGES)
def test_models_import_nothing_from_display(package):
    graph = import_graph()
    wrong = {m: sorted(t for t in ts if t.startswith("puffin_explorer.display"))
             for m, ts in graph.items() if m == f"puffin_explorer.{package}" or m.startswith(f"puffin_explorer.{package}.")}
    assert {m: ts for m, ts in wrong.items() if ts} == {}


def test_only_the_delta_facade_and_the_package_import_delta_table():
    graph = import_graph()
    importers = {m for m, ts in graph.items() if "puffin_explorer.delta.table" in ts and m.startswith("puffin_explorer.delta")}
    assert importers <= {"puffin_explorer.delta"}


def test_every_model_type_has_a_registered_view():
    from puffin_explorer import (DeletionOverlay, DeletionVector, ParquetLayout, PuffinFile, RawBlob, Table,
                                 ThetaSketch, Warehouse)
    from puffin_explorer.display.registry import registered_types
    from puffin_explorer.iceberg.commits import CommitDeletes, TableSnapshot
    from puffin_explorer.iceberg.overview import DeleteDebt
    from puffin_explorer.regions import FindingList, Region

    types = set(registered_types())
    for cls in (PuffinFile, DeletionVector, ThetaSketch, RawBlob, ParquetLayout, DeletionOverlay, Region,
                FindingList, Warehouse, Table, TableSnapshot, CommitDeletes, DeleteDebt):
        assert cls in types, cls


def test_an_object_with_regions_gets_the_generic_view():
    from puffin_explorer.display import render_html, render_text
    from puffin_explorer.regions import Finding, Region, Severity

    class Thing:
        findings = [Finding("x.bad", Severity.WARNING, 2, "two is odd")]

        def regions(self):
            return [Region("head", "magic", 0, 4), Region("<b>body</b>", "payload", 4, 8)]

        def summary(self):
            return "a <thing> of 12 bytes"

    html = render_html(Thing())
    assert "a &lt;thing&gt; of 12 bytes" in html and "x.bad" in html and "&lt;b&gt;body&lt;/b&gt;" in html
    text = render_text(Thing())
    assert text.splitlines()[0] == "Thing  a <thing> of 12 bytes" and "x.bad @ 2: two is odd" in text


def test_no_view_is_a_clear_error():
    from puffin_explorer.display import render_text

    with pytest.raises(TypeError, match="no view for object"):
        render_text(object())


def test_render_options_are_passed_not_set():
    from puffin_explorer import PuffinWriter, PuffinFile
    from puffin_explorer.display import RenderOptions, html as H, render_html, view

    w = PuffinWriter()
    for i in range(30):
        w.add_dv([i], referenced_data_file=f"f{i}.parquet")
    pf = PuffinFile(w.to_bytes())
    before = H.MAX_TABLE_ROWS
    short = render_html(pf, RenderOptions(max_rows=5))
    assert "… 25 more rows not shown" in short
    assert "… 25 more rows not shown" in render_html(view(pf, max_rows=5))
    assert "more rows not shown" not in render_html(pf)
    assert H.MAX_TABLE_ROWS == before
    compact = render_html(pf, RenderOptions(compact=True))
    assert "Byte regions" not in compact and "Byte regions" in render_html(pf)


def test_finding_list_text_form():
    from puffin_explorer import PuffinFile

    fl = PuffinFile(str(ROOT / "resources" / "broken-dv-crc.puffin")).findings
    assert repr(fl).startswith("findings (")
    assert "error   dv.crc @ " in repr(fl) and "Finding(" not in repr(fl)


def test_docs_extending_example_plugs_in_a_blob_type_and_its_view():
    import re

    text = (ROOT / "docs" / "extending.md").read_text()
    section = text.split("# Extending", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    ns: dict = {}
    exec(compile(block, "docs/extending.md", "exec"), ns)  # noqa: S102 - the project's own docs
    from puffin_explorer.display import render_html

    html = render_html(ns["pf"])
    assert "count 1,234" in html and "com.example.counter-v1" in html
    assert "<b>1,234</b> counted" in render_html(ns["pf"].blobs[0].decode())


def test_distinct_values_are_found_by_sorting_not_by_numpy_s_hash():
    """numpy 2.4's ``np.unique`` without ``return_*`` hashes (0.9 s at a million distinct values, a sort 0.05 s):
    the package calls :func:`puffin_explorer._arrays.sorted_unique` instead, which gives the same values."""
    import numpy as np

    from puffin_explorer._arrays import sorted_unique

    plain = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "unique" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "np" and not any((k.arg or "").startswith("return_") for k in node.keywords):
                plain.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not plain, plain
    rng = np.random.default_rng(7)
    for values in (np.zeros(0, np.int64), np.array([5]), rng.integers(0, 50, 1000), rng.integers(0, 2 ** 40, 1000),
                   np.arange(12, dtype=np.uint32).reshape(3, 4)[::-1]):
        out = sorted_unique(values)
        assert out.dtype == np.asarray(values).dtype and out.tolist() == np.unique(values).tolist()


#: Names the interpreter or IPython calls, never the package's own code.
_CALLED_FROM_OUTSIDE = {"_ipython_display_", "_repr_html_", "_repr_mimebundle_", "_repr_png_", "_repr_svg_",
                        "_repr_markdown_", "_repr_pretty_", "_repr_latex_", "_repr_json_", "_missing_"}


def test_no_definition_is_left_unused():
    """Dead code stays out: a private function, class or method of the package is named somewhere else in the
    package, and a public module-level one somewhere at all (the package, its tests, resources, benchmarks, docs,
    README or notebooks). Names are matched as words, so a use under another object's attribute counts too:
    this finds what nothing could call, not every unused path."""
    import re
    from collections import Counter

    def words(paths) -> Counter:
        return Counter(w for p in paths for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", p.read_text()))

    sources = sorted(PACKAGE.rglob("*.py"))
    in_package = words(sources)
    elsewhere = words([*ROOT.glob("tests/**/*.py"), *ROOT.glob("resources/**/*.py"), *ROOT.glob("benchmarks/**/*.py"),
                       *ROOT.glob("docs/**/*.md"), ROOT / "README.md", *ROOT.glob("notebooks/**/*.ipynb")])
    unused = []
    for path in sources:
        tree = ast.parse(path.read_text())
        defined = [(n, n.name) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        defined += [(m, f"{c.name}.{m.name}") for c in tree.body if isinstance(c, ast.ClassDef)
                    for m in c.body if isinstance(m, ast.FunctionDef) and m.name.startswith("_")]
        for node, qualified in defined:
            name = node.name
            if name.startswith("__") and name.endswith("__") or name in _CALLED_FROM_OUTSIDE:
                continue
            used = in_package[name] > 1 if name.startswith("_") else in_package[name] + elsewhere[name] > 1
            if not used:
                unused.append(f"{path.relative_to(ROOT)}:{node.lineno} {qualified}")
    assert unused == []


#: What a reader can hold in their head: no module longer, and no function longer outside :data:`FLAT_TABLES`.
MODULE_LINES, FUNCTION_LINES = 800, 80
#: Functions allowed past FUNCTION_LINES because they are a flat table of cases a split would hide, with why.
FLAT_TABLES: dict[str, str] = {}


def test_modules_and_functions_stay_a_size_a_reader_can_hold():
    """Every module of the package is at most MODULE_LINES lines and every function or method at most
    FUNCTION_LINES, bar the flat tables named above."""
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        where = path.relative_to(ROOT)
        if text.count("\n") > MODULE_LINES:
            too_long.append(f"{where}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES and f"{where}:{node.name}" not in FLAT_TABLES:
                    too_long.append(f"{where}:{node.lineno} {node.name}: {lines} lines")
    assert too_long == []
