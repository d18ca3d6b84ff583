"""One catalogue of finding codes: every code a reader emits is in it, named area.name, and in the docs' findings page."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from puffin_explorer import findings as F
from puffin_explorer.regions import Severity

from conftest import ROOT

PACKAGE = ROOT / "puffin_explorer"
#: Calls whose first argument (or ``code=``) is a finding code.
EMITTERS = {"Finding", "TableFinding", "_f", "_add", "_finding", "fail", "make", "finding"}


def _areas() -> set[str]:
    return {c.code.split(".", 1)[0] for c in F.catalogue()}


def _source_codes() -> list[tuple[str, int, str]]:
    """(file, line, code) for every string a module passes as a finding code, or that looks like one."""
    areas = _areas()
    looks_like = re.compile(r"^(%s)\.[a-z0-9]+(-[a-z0-9]+)*$" % "|".join(sorted(areas)))
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "findings.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and looks_like.match(node.value):
                out.append((str(path.relative_to(ROOT)), node.lineno, node.value))
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                args = list(node.args[:1]) + [k.value for k in node.keywords if k.arg == "code"]
                for a in args:
                    if name in EMITTERS and isinstance(a, ast.Constant) and isinstance(a.value, str):
                        out.append((str(path.relative_to(ROOT)), node.lineno, a.value))
    return out


def test_every_code_is_named_area_dot_name():
    codes = F.catalogue()
    assert len(codes) > 90
    for c in codes:
        assert F.CODE_PATTERN.match(c.code), c.code
        assert c.meaning and c.layer and isinstance(c.severity, Severity)
    assert {c.layer for c in codes} >= {"puffin", "parquet", "iceberg"}


def test_every_code_in_the_source_is_in_the_catalogue():
    found = _source_codes()
    assert len({c for _, _, c in found}) > 80  # the scan does see the readers' codes
    unknown = [f"{p}:{line} {code}" for p, line, code in found if code and not F.is_known(code)]
    assert unknown == []
    not_canonical = [f"{p}:{line} {code}" for p, line, code in found if code and F.canonical(code) != code]
    assert not_canonical == []


def test_old_codes_are_aliases():
    assert F.lookup("dv-orphan").code == "iceberg.dv-orphan"
    assert F.canonical("file-missing") == "iceberg.file-missing"
    assert F.canonical("dv-invalid:dv.crc") == "dv.crc"
    assert F.aliases()["table-relocated"] == "iceberg.table-relocated"
    with pytest.raises(KeyError):
        F.lookup("no.such-code")


def test_make_takes_severity_and_hint_from_the_catalogue():
    f = F.make("dv.crc", 10, "bad")
    assert (f.code, f.severity, f.offset, f.hint) == ("dv.crc", Severity.ERROR, 10,
                                                        "the vector's bytes were changed or cut")


def test_define_rejects_bad_names_and_conflicts():
    with pytest.raises(ValueError):
        F.define("x", "Bad_Code", Severity.ERROR, "m")
    with pytest.raises(ValueError):
        F.define("x", "dv.crc", Severity.WARNING, "something else")


def test_docs_findings_table_is_the_catalogue():
    text = (ROOT / F.DOCS_PAGE).read_text()
    start, end = "<!-- findings-table:start -->", "<!-- findings-table:end -->"
    assert start in text and end in text, f"{F.DOCS_PAGE} lost its generated Findings table markers"
    table = text.split(start, 1)[1].split(end, 1)[0].strip()
    assert table == F.markdown_table(), f"regenerate with: python -m puffin_explorer.findings_page --page {F.DOCS_PAGE}"


def test_the_regeneration_command_rewrites_only_the_table(tmp_path):
    page = tmp_path / "findings.md"
    page.write_text("# Findings\n\nbefore\n<!-- findings-table:start -->\nold\n<!-- findings-table:end -->\nafter\n")
    from puffin_explorer.findings_page import main

    assert main(["--page", str(page)]) == 0
    assert page.read_text() == ("# Findings\n\nbefore\n<!-- findings-table:start -->\n" + F.markdown_table()
                                + "\n<!-- findings-table:end -->\nafter\n")
    assert F.update_readme(str(page)) is False
    with pytest.raises(SystemExit) as exc:
        main(["--page", str(tmp_path / "README.md")])
    assert exc.value.code == 2


def test_the_regeneration_command_runs_without_a_warning():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-W", "error", "-m", "puffin_explorer.findings_page"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert (p.returncode, p.stderr) == (0, "") and p.stdout.strip() == F.markdown_table()


def _emitted(resources, fixtures):
    """Every finding the samples and the reference fixtures produce when opened and checked."""
    from puffin_explorer import ParquetLayout, PuffinFile, Warehouse

    out = []
    for p in sorted(resources.glob("*.puffin")) + sorted((fixtures / "puffin").rglob("*.puffin")):
        pf = PuffinFile(str(p))
        out += [(p.name, f) for f in pf.findings]
        for b in pf.blobs:
            try:
                b.decode()
            except Exception:
                pass
    for p in sorted(resources.glob("*.parquet")) + sorted(resources.glob("parquet-testing/*.parquet")):
        pl = ParquetLayout(str(p))
        out += [(p.name, f) for f in pl.findings]
    wh = Warehouse(str(fixtures / "warehouse"))
    for name in wh.table_names():
        t = wh.table(name)
        out += [(name, f) for f in t.check()]
        out += [(name, f) for f in getattr(t, "findings", [])]
    return out


def test_every_emitted_finding_is_catalogued_with_its_severity(resources, fixtures):
    emitted = _emitted(resources, fixtures)
    assert len(emitted) > 40
    bad = []
    for where, f in emitted:
        if not F.is_known(f.code):
            bad.append(f"{where}: unknown code {f.code}")
        elif f.severity not in F.lookup(f.code).severities or F.canonical(f.code) != f.code:
            bad.append(f"{where}: {f.code} emitted as {f.severity.value}")
    assert bad == []


def _broken_samples():
    return sorted((ROOT / "resources").glob("broken-*.puffin"))


@pytest.mark.parametrize("path", _broken_samples(), ids=lambda p: p.name)
def test_golden_findings_beside_each_broken_sample(path):
    """``broken-X.findings.json`` is the full finding list (regenerate: python resources/make_samples.py)."""
    from make_samples import EXPECTED, findings_json, golden_name

    golden = path.parent / golden_name(path.name)
    assert golden.exists(), f"missing {golden.name}: run python resources/make_samples.py"
    expected = json.loads(golden.read_text(encoding="utf-8"))
    assert json.loads(findings_json(path.read_bytes())) == expected
    codes = [f["code"] for f in expected]
    assert all(F.is_known(c) for c in codes)
    if EXPECTED.get(path.name):
        assert EXPECTED[path.name] in codes
    else:
        assert codes == []
