"""The Spark session the pipeline runs on: the active one, or an embedded ``local[*]``.

The embedded session loads the Iceberg runtime jar shipped in the
``snowpark-connect-deps-iceberg`` wheel (or a jar / Maven coordinate the caller
names) and registers a Hadoop catalog over a local folder.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Optional

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
ICEBERG_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
DEFAULT_CATALOG = "wh"
DEFAULT_WAREHOUSE = "demo-warehouse"
_RUNTIME_NAME = re.compile(r"iceberg-spark-runtime-(\d+\.\d+)_(\d+\.\d+)-([\w.\-]+?)\.jar$")


class SparkSetupError(RuntimeError):
    """Spark cannot be started or cannot load Iceberg: says what is missing and how to fix it."""


def spark_versions() -> tuple[str, str]:
    """(Spark minor version, Scala binary version) of the installed PySpark, e.g. ("3.5", "2.12")."""
    try:
        import pyspark
    except ImportError as exc:
        raise SparkSetupError("PySpark is not installed: pip install 'puffin-explorer[spark]'") from exc
    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    scala = "2.12"
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "scala-library-*.jar"))
    if jars:
        m = re.search(r"scala-library-(\d+\.\d+)", os.path.basename(jars[0]))
        if m:
            scala = m.group(1)
    return spark_minor, scala


def check_runtime_jar(jar: str) -> str:
    """Raise :class:`SparkSetupError` unless ``jar`` exists and is built for this Spark and Scala."""
    if not os.path.isfile(jar):
        raise SparkSetupError(f"Iceberg runtime jar not found: {jar}")
    m = _RUNTIME_NAME.search(os.path.basename(jar))
    if m is None:
        return jar  # a renamed or shaded jar: trust the caller, Spark reports what it cannot load
    spark_minor, scala = spark_versions()
    if (m.group(1), m.group(2)) != (spark_minor, scala):
        raise SparkSetupError(
            f"{os.path.basename(jar)} is built for Spark {m.group(1)} / Scala {m.group(2)}, but the installed "
            f"PySpark is Spark {spark_minor} / Scala {scala}: use iceberg-spark-runtime-{spark_minor}_{scala}-*.jar"
        )
    return jar


def runtime_jar() -> str:
    """The iceberg-spark-runtime jar from ``snowpark-connect-deps-iceberg`` that matches PySpark."""
    spark_minor, scala = spark_versions()
    try:
        import snowpark_connect_deps_iceberg as deps
    except ImportError as exc:
        raise SparkSetupError(
            "no Iceberg runtime: pip install 'snowpark-connect-deps-iceberg==1.0.1' (it ships "
            "iceberg-spark-runtime-3.5_2.12-1.9.2.jar), or pass jar=... or packages=... to session()"
        ) from exc
    jars_dir = str(deps.get_jars_dir())
    found = sorted(glob.glob(os.path.join(jars_dir, f"iceberg-spark-runtime-{spark_minor}_{scala}-*.jar")))
    if not found:
        have = ", ".join(os.path.basename(p) for p in glob.glob(os.path.join(jars_dir, "iceberg-spark-runtime-*.jar")))
        raise SparkSetupError(
            f"no iceberg-spark-runtime jar for Spark {spark_minor} / Scala {scala} in {jars_dir} "
            f"(found: {have or 'none'}); install a matching PySpark (pip install 'pyspark==3.5.*') or pass jar=..."
        )
    return found[-1]


def check_java() -> str:
    """The ``java`` executable Spark will use; :class:`SparkSetupError` when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        where = f"JAVA_HOME={java_home} has no bin/java" if java_home else "no 'java' on PATH and JAVA_HOME is not set"
        raise SparkSetupError(
            f"Spark needs Java 8, 11 or 17 and none was found ({where}): install a JDK "
            "(e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SparkSetupError(f"cannot run {java} -version: {exc}") from exc
    if out.returncode != 0:
        raise SparkSetupError(f"{java} -version failed: {out.stderr.strip()[:300]}")
    return java


def add_catalog(spark, name: str, warehouse: str) -> None:
    """Register an Iceberg Hadoop catalog ``name`` over ``warehouse`` on ``spark``.

    Spark keeps a catalog once it has been used, so a name that already points
    elsewhere is refused rather than silently left pointing at the old folder.
    """
    location = warehouse if "://" in warehouse else os.path.abspath(warehouse)
    current = spark.conf.get(f"spark.sql.catalog.{name}.warehouse", None)
    if current is not None and current.rstrip("/") != location.rstrip("/"):
        raise SparkSetupError(f"catalog {name!r} already points to {current}; register {location} under another name")
    spark.conf.set(f"spark.sql.catalog.{name}", ICEBERG_CATALOG)
    spark.conf.set(f"spark.sql.catalog.{name}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", location)


def _package_root() -> str:
    """The folder that holds the ``puffin_explorer`` package (so local executors import this copy)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # .../puffin_explorer/spark


def session(warehouse: Optional[str] = None, catalog: str = DEFAULT_CATALOG, *, master: str = "local[*]",
            jar: Optional[str] = None, packages: Optional[str] = None, conf: Optional[dict[str, Any]] = None,
            app_name: str = "puffin-explorer", iceberg: bool = True, remote: Optional[str] = None):
    """The active SparkSession if there is one, else an embedded one with Iceberg.

    With an active session (Databricks, EMR, a notebook's own), nothing is
    started; a ``warehouse`` given here is added to it as Hadoop catalog
    ``catalog``.  Otherwise a ``master`` session starts with the Iceberg runtime
    jar (``jar``, else Maven ``packages``, else the jar in
    ``snowpark-connect-deps-iceberg``) and the catalog ``catalog`` over
    ``warehouse`` (default ``./demo-warehouse``).  ``iceberg=False`` starts plain
    Spark (enough for tables this package plans); ``remote="local[2]"`` (or an
    ``sc://`` URL) opens a Spark Connect session instead (PySpark 4 starts a local
    Connect server for ``local[...]``).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkSetupError("PySpark is not installed: pip install 'puffin-explorer[spark]'") from exc

    active = SparkSession.getActiveSession()
    if active is not None:
        if warehouse is not None:
            add_catalog(active, catalog, warehouse)
        return active

    if remote is None or remote.startswith("local"):
        check_java()
    builder = SparkSession.builder.remote(remote) if remote else SparkSession.builder.master(master)
    builder = builder.appName(app_name)
    settings: dict[str, Any] = {}
    if iceberg:
        if packages:
            settings["spark.jars.packages"] = packages
        else:
            settings["spark.jars"] = check_runtime_jar(jar) if jar else runtime_jar()
        location = warehouse or os.environ.get("PUFFIN_EXPLORER_WAREHOUSE") or DEFAULT_WAREHOUSE
        location = location if "://" in location else os.path.abspath(location)
        settings.update({
            "spark.sql.extensions": ICEBERG_EXTENSIONS,
            f"spark.sql.catalog.{catalog}": ICEBERG_CATALOG,
            f"spark.sql.catalog.{catalog}.type": "hadoop",
            f"spark.sql.catalog.{catalog}.warehouse": location,
        })
    settings.update({
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.memory": "2g",
        # Local Python workers import this copy of the package, even from a source checkout.
        "spark.executorEnv.PYTHONPATH": os.pathsep.join(
            p for p in (_package_root(), os.environ.get("PYTHONPATH", "")) if p
        ),
    })
    if (remote or master).startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # Python workers use this interpreter (its venv, its pyarrow), not whatever python3 is on PATH;
        # PySpark reads the variable when the context starts (the spark.pyspark.python setting only
        # reaches spark-submit).
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if remote and not remote.startswith("local"):
        settings = {}  # a running Connect server: its own settings stand, only the caller's are sent
    elif remote:  # a local Connect server takes these at start; re-sending them to its session only warns
        settings = {k: v for k, v in settings.items() if not k.startswith(("spark.ui.", "spark.driver."))}
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # py4j / gateway errors come in many types
        text = str(exc)
        if "JAVA_GATEWAY_EXITED" in text or "Java gateway process exited" in text:
            raise SparkSetupError(
                "the JVM did not start (Java gateway exited): check that JAVA_HOME points to Java 8/11/17 "
                f"and that the jars load ({text.splitlines()[0][:200]})"
            ) from exc
        raise
    if iceberg and not remote:
        _check_iceberg_loaded(spark)
    return spark


def _check_iceberg_loaded(spark) -> None:
    """Fail early, with the versions involved, when the Iceberg classes do not load."""
    try:
        jvm = spark.sparkContext._jvm
        cls = jvm.java.lang.Class.forName(ICEBERG_CATALOG, True, jvm.Thread.currentThread().getContextClassLoader())
        cls.getName()
    except Exception as exc:
        spark_minor, scala = spark_versions()
        raise SparkSetupError(
            f"Spark {spark.version} started but cannot load {ICEBERG_CATALOG}: the Iceberg runtime jar is missing "
            f"or does not match Spark {spark_minor} / Scala {scala} ({str(exc).splitlines()[0][:200]})"
        ) from exc


def ship_package(spark) -> None:
    """Send this copy of ``puffin_explorer`` to the executors of ``spark`` (when it is not installed there)."""
    import tempfile
    import zipfile

    root = _package_root()
    target = os.path.join(tempfile.mkdtemp(prefix="puffin-explorer-"), "puffin_explorer.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for folder, _, files in os.walk(os.path.join(root, "puffin_explorer")):
            for name in files:
                if name.endswith((".py", ".css", ".typed")):
                    full = os.path.join(folder, name)
                    zf.write(full, os.path.relpath(full, root))
    spark.sparkContext.addPyFile(target)
