"""The table measures (:mod:`~puffin_explorer.iceberg.measures`, written once as SQL) run by Spark SQL over
DataFrames on the executors; :class:`~puffin_explorer.iceberg.measures.LocalMeasures` runs the same texts by
DuckDB on the driver."""

from __future__ import annotations

from typing import Any

from ..iceberg.measures import RELATIONS, Measure, MeasureRun
from .arrow import kept


class SparkMeasures(MeasureRun):
    """Measures run by Spark SQL over DataFrames (``relations``: name → DataFrame, columns as :data:`RELATIONS`);
    with ``persist``, a measure other measures read is persisted once.  :meth:`close` unpersists those and
    drops the temporary views (on Spark Connect a DataFrame names its views until it has run: close after)."""

    def __init__(self, spark: Any, relations: dict[str, Any], persist: bool = False) -> None:
        super().__init__(relations)
        self.spark = spark
        self.persist = persist
        self.views: list[str] = []
        self.kept: list = []

    def _view(self, name: str, frame: Any) -> str:
        view = f"pe_{name}_{self.tag}"
        frame.createOrReplaceTempView(view)
        self.views.append(view)
        return view

    def _register(self, name: str, frame: Any) -> str:
        if name not in RELATIONS:  # a measure's answer given (computed already): as it is
            return self._view(name, frame)
        wanted = [f.split()[0] for f in RELATIONS[name].split(",")]
        have = set(frame.columns)
        return self._view(name, frame.select(*[c.strip() for c in wanted if c.strip() in have]))

    def _keep(self, name: str, sql: str) -> str:
        frame = self.spark.sql(sql)
        if self.persist:
            frame = kept(frame)
            frame.count()  # computed now: Spark then plans the measures reading it with its real size
            self.kept.append(frame)
        return self._view(name, frame)

    def frame(self, measure: Measure):
        """The measure's answer: a DataFrame of its columns (valid until :meth:`close`)."""
        return self.spark.sql(self._answer_sql(measure)).select(*measure.columns)

    def close(self) -> None:
        for frame in self.kept:
            frame.unpersist()
        self.kept.clear()
        catalog = self.spark.catalog
        for view in self.views:
            try:
                catalog.dropTempView(view)
            except Exception:  # noqa: BLE001 - a session already gone has no views to drop
                pass
        self.views.clear()


def run_spark_measures(spark: Any, measures: tuple, **relations: Any) -> list:
    """Measures (and those they read, each once) run by Spark SQL over DataFrames: a DataFrame each, in order;
    the temporary views dropped as :func:`run_spark` drops them."""
    run = SparkMeasures(spark, relations)
    frames = [run.frame(measure) for measure in measures]
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        run.close()
    return frames


def run_spark(spark: Any, measure: Measure, **relations: Any):
    """One measure (and those it reads) run by Spark SQL over DataFrames: a DataFrame.  On a classic session
    its temporary views are dropped at once (the DataFrame holds the plan they named); Spark Connect resolves
    a DataFrame each time it runs, so there they stay for as long as the session (:class:`SparkMeasures`
    drops them when its answers are no longer needed)."""
    return run_spark_measures(spark, (measure,), **relations)[0]
