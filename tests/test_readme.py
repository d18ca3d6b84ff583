"""The README's Python examples run as written."""

from __future__ import annotations

import re

from conftest import ROOT

#: The Spark example needs the demo warehouse; tests/test_spark_pipeline.py runs the same calls on it.
NEEDS_DEMO_WAREHOUSE = "from puffin_explorer import spark as pes"


def test_readme_python_examples_run(monkeypatch):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    ran = 0
    for block in blocks:
        if block.startswith(NEEDS_DEMO_WAREHOUSE):
            continue
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the project's own docs
        ran += 1
    assert ran == len(blocks) - 1
    assert namespace["newer"].difference(namespace["older"]).positions().tolist() == [7, 9]
    assert namespace["orders"].check() == []


def test_readme_spark_example_runs(spark, demo_warehouse, monkeypatch, capsys):
    """The Spark example as written, on the demo warehouse this run built (its catalog is ``demo``)."""
    text = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if b.startswith(NEEDS_DEMO_WAREHOUSE))
    block = block.replace('pes.session("./demo-warehouse")', "spark_session").replace("./demo-warehouse",
                                                                                    str(demo_warehouse))
    block = block.replace('"wh.shop.', '"demo.shop.')
    namespace: dict = {"spark_session": spark}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the project's own docs
    assert namespace["pes"].plan(spark, namespace["t"])["decode_on"] == "driver"
    assert namespace["pes"].check(spark, "demo.shop.orders").where("NOT ok").count() == 0
    assert "data_file" in capsys.readouterr().out
