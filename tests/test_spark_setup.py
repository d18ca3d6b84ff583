"""Setup errors of the Spark layer, raised before any JVM starts (no Spark session needed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pyspark = pytest.importorskip("pyspark")

#: The Iceberg release whose runtime jar the installed snowpark-connect-deps-iceberg ships: 1.9.2 (1.0.1, the
#: "spark" extra); make test also runs the Spark tests with 1.0.3 first on PYTHONPATH and this set to 1.10.2.
ICEBERG = os.environ.get("PUFFIN_EXPLORER_TEST_ICEBERG", "1.9.2")


def test_importing_the_spark_module_does_not_import_pyspark():
    code = "import sys, puffin_explorer.spark as pes; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_runtime_jar_comes_from_the_wheel_and_matches_spark():
    from puffin_explorer.spark import runtime_jar

    jar = runtime_jar()
    assert os.path.basename(jar) == f"iceberg-spark-runtime-3.5_2.12-{ICEBERG}.jar"
    assert os.path.getsize(jar) > 40_000_000


def test_the_runtime_jar_carries_icebergs_relocated_jackson_unless_known_not_to():
    """A jar that lost it is a known one (the README says which); a known one that has it again is news."""
    from _spark import KNOWN_INCOMPLETE_RUNTIMES, runtime_lacks_shaded_jackson

    from puffin_explorer.spark import runtime_jar

    jar = runtime_jar()
    assert runtime_lacks_shaded_jackson(jar) == (os.path.basename(jar) in KNOWN_INCOMPLETE_RUNTIMES)


#: Iceberg on the runtime jar from the wheel, in a process of its own: a v3 table, a merge-on-read delete
#: (a deletion vector), and the position Iceberg's position_deletes table reports.
ROUND_TRIP = """
import tempfile
from puffin_explorer import spark as pes
s = pes.session(tempfile.mkdtemp(), catalog="rt", master="local[1]")
s.sparkContext.setLogLevel("OFF")
try:
    s.sql("CREATE TABLE rt.ns.t (id bigint) USING iceberg "
          "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')")
    s.sql("INSERT INTO rt.ns.t VALUES (1), (2), (3)")
    s.sql("DELETE FROM rt.ns.t WHERE id = 2")
    print(sorted((r.pos, r.file_path.endswith('.parquet')) for r in s.sql("SELECT * FROM rt.ns.t.position_deletes").collect()))
except Exception as exc:
    print("FAILED", next((ln.strip(": ") for ln in str(exc).splitlines() if "Error" in ln), str(exc)[:300]))
"""


@pytest.mark.spark
def test_iceberg_runs_on_the_runtime_jar_or_fails_as_measured():
    from _spark import runtime_lacks_shaded_jackson

    from puffin_explorer.spark import runtime_jar

    p = subprocess.run([sys.executable, "-c", ROUND_TRIP], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    if runtime_lacks_shaded_jackson(runtime_jar()):
        assert p.stdout.strip() == ("FAILED java.lang.NoClassDefFoundError: "
                                    "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder")
    else:
        assert p.stdout.strip() == "[(1, True)]"


def test_a_jar_for_another_scala_is_refused():
    import snowpark_connect_deps_iceberg as deps

    from puffin_explorer.spark import SparkSetupError, check_runtime_jar

    other = os.path.join(str(deps.get_jars_dir()), f"iceberg-spark-runtime-3.5_2.13-{ICEBERG}.jar")
    with pytest.raises(SparkSetupError, match=r"built for Spark 3.5 / Scala 2.13, but the installed PySpark is "
                                              r"Spark 3.5 / Scala 2.12"):
        check_runtime_jar(other)
    with pytest.raises(SparkSetupError, match="jar not found"):
        check_runtime_jar("/nonexistent/iceberg-spark-runtime-3.5_2.12-1.9.2.jar")


def test_missing_java_is_a_clear_error(tmp_path, monkeypatch):
    from puffin_explorer.spark import SparkSetupError, check_java

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkSetupError, match=r"Spark needs Java .* has no bin/java"):
        check_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkSetupError, match="no 'java' on PATH"):
        check_java()


def test_demo_refuses_to_overwrite_without_force(tmp_path):
    from puffin_explorer.demo import build_demo_warehouse, main

    (tmp_path / "shop" / "orders" / "metadata").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="already holds demo tables"):
        build_demo_warehouse(str(tmp_path))
    assert main([str(tmp_path)]) == 2


def test_demo_runs_a_notebook_against_the_warehouse(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    from puffin_explorer.demo import run_notebook

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nprint(os.environ['PUFFIN_EXPLORER_WAREHOUSE'])")]
    path = tmp_path / "nb" / "probe.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    warehouse = tmp_path / "wh"
    out = run_notebook(str(path), str(warehouse))
    assert out == str(tmp_path / "probe-executed.ipynb")
    assert nbformat.read(str(path), as_version=4).cells[0].outputs == []  # the source is left alone
    executed = nbformat.read(out, as_version=4)
    assert executed.cells[0].outputs[0]["text"].strip() == str(warehouse)
