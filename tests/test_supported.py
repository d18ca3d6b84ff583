"""What the package claims to support is what make test runs: pyproject's Pythons, the Makefile's, the docs'."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import ROOT

try:
    import tomllib
except ImportError:  # Python 3.10: pytest depends on tomli there
    import tomli as tomllib


def _makefile_value(name: str) -> str:
    m = re.search(rf"^{name}\s*[:?]?=\s*(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert m, f"Makefile has no {name}"
    return m.group(1).strip()


def _supported_section() -> str:
    """The page docs/supported.md, below its title (it was the README's "## Supported" section)."""
    text = (ROOT / "docs" / "supported.md").read_text()
    m = re.search(r"^# Supported[^\n]*\n(.*)", text, re.S | re.M)
    assert m, "docs/supported.md has no '# Supported' title"
    return m.group(1)


def test_classifiers_name_the_pythons_make_test_runs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    classified = sorted((c.rsplit(":: ", 1)[1] for c in project["classifiers"]
                         if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)), key=lambda v: int(v[2:]))
    others = _makefile_value("OTHER_PYTHONS").split()
    main = "3.11"  # the python3 .venv is made from on this kind of machine (pyenv's global 3.11.7)
    spark4 = "3.12"  # .venv-spark4's (SPARK4_PYTHON)
    assert "3.12" in _makefile_value("SPARK4_PYTHON")
    assert classified == sorted({main, spark4, *others}, key=lambda v: int(v[2:])) == ["3.10", "3.11", "3.12", "3.13"]
    assert project["requires-python"] == f">={classified[0]}"


def test_docs_supported_table_names_every_python_and_runtime():
    section = _supported_section()
    for version in ["3.10", "3.11", "3.12", "3.13"]:
        assert re.search(rf"^\|[^\n]*\b{re.escape(version)}\b", section, re.M), version
    for venv in [".venv-py310", ".venv-py313", ".venv-spark4"]:
        assert f"`{venv}`" in section, venv
    assert _makefile_value("ICEBERG_NEXT") == "1.10.2" and "1.10.2" in section and "1.9.2" in section


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_find_python_finds_a_working_interpreter_of_that_version_or_says_none(version):
    p = subprocess.run([str(ROOT / ".ci" / "find-python"), version], capture_output=True, text=True, timeout=120)
    if p.returncode == 1:
        assert p.stdout == "" and p.stderr == ""
        pytest.skip(f"no Python {version} on this machine")
    assert p.returncode == 0, p.stderr
    out = subprocess.run([p.stdout.strip(), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == version


def test_find_python_refuses_what_is_not_a_version_and_finds_no_python_2_9():
    bad = subprocess.run([str(ROOT / ".ci" / "find-python"), "three"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "expected a version like 3.12" in bad.stderr
    none = subprocess.run([str(ROOT / ".ci" / "find-python"), "3.99"], capture_output=True, text=True, timeout=60)
    assert (none.returncode, none.stdout) == (1, "")


def test_a_missing_python_is_one_line_and_no_failure(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "PYENV_ROOT": str(tmp_path), "HOME": str(tmp_path)}
    p = subprocess.run(["bash", str(ROOT / ".ci" / "test-python"), "3.99"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout == (f"make test: no Python 3.99 here (looked in {tmp_path}/versions and for python3.99 on PATH): "
                        "its tests are skipped\n")
    assert not (ROOT / ".venv-py399").exists()
