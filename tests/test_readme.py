"""The Python examples of README.md and of every docs/*.md page run as written."""

from __future__ import annotations

import re

from conftest import ROOT

#: The Spark examples need the demo warehouse; tests/test_spark_pipeline.py runs the same calls on it.
NEEDS_DEMO_WAREHOUSE = "from puffin_explorer import spark as pes"


def pages() -> list[str]:
    """README.md, then each page of the documentation site (relative to the repository root)."""
    return ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.S)


def test_readme_python_examples_run(monkeypatch):
    """Each page's blocks run in order in one namespace of their own (a block may use the one before)."""
    monkeypatch.chdir(ROOT)
    namespaces: dict[str, dict] = {}
    ran = total = 0
    spark_pages = []
    for page in pages():
        blocks = python_blocks(page)
        total += len(blocks)
        namespace = namespaces.setdefault(page, {})
        for block in blocks:
            if block.startswith(NEEDS_DEMO_WAREHOUSE):
                spark_pages.append(page)
                continue
            exec(compile(block, page, "exec"), namespace)  # noqa: S102 - the project's own docs
            ran += 1
    assert total >= 15 and len(python_blocks("README.md")) >= 2
    assert spark_pages == ["README.md", "docs/spark.md"]
    assert ran == total - len(spark_pages)
    api = namespaces["docs/puffin.md"]
    assert api["newer"].difference(api["older"]).positions().tolist() == [7, 9]
    assert namespaces["docs/tables.md"]["orders"].check() == []


def test_readme_spark_example_runs(spark, demo_warehouse, monkeypatch, capsys):
    """The Spark examples as written, on the demo warehouse this run built (its catalog is ``demo``)."""
    ran = []
    for page in pages():
        for block in python_blocks(page):
            if not block.startswith(NEEDS_DEMO_WAREHOUSE):
                continue
            block = block.replace('pes.session("./demo-warehouse")', "spark_session").replace(
                "./demo-warehouse", str(demo_warehouse))
            block = block.replace('"wh.shop.', '"demo.shop.')
            namespace: dict = {"spark_session": spark}
            exec(compile(block, page, "exec"), namespace)  # noqa: S102 - the project's own docs
            assert namespace["pes"].plan(spark, namespace["t"])["decode_on"] == "driver"
            assert namespace["pes"].check(spark, "demo.shop.orders").where("NOT ok").count() == 0
            assert "data_file" in capsys.readouterr().out
            ran.append(page)
    assert ran == ["README.md", "docs/spark.md"]
