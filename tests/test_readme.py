"""The README's Python examples run as written."""

from __future__ import annotations

import os
import re

from conftest import ROOT


def test_readme_python_examples_run(monkeypatch):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the project's own docs
    assert namespace["newer"].difference(namespace["older"]).positions().tolist() == [7, 9]
