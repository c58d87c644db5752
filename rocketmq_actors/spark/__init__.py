"""PySpark integration: :func:`publish_dataframe` (driver-side) and the ``rocketmq`` data
source (executor-side writes and reads, batch and streaming). Needs the ``spark`` extra
(``pip install 'rocketmq-actors[spark]'``: PySpark 4 with pyarrow)."""

from __future__ import annotations

from typing import Any

from rocketmq_actors.extras import require

require("pyspark", purpose="rocketmq_actors.spark")  # its modules import it: name the extra
require("pyarrow", extra="spark", purpose="rocketmq_actors.spark")

from .columns import ColumnError  # noqa: E402
from .datasource import RocketMQDataSource, SinkError  # noqa: E402
from .options import OptionError  # noqa: E402
from .progress import backlog  # noqa: E402
from .publisher import publish_dataframe  # noqa: E402
from .python import SparkSetupError, choose_worker_python  # noqa: E402

__all__ = [
    "ColumnError",
    "OptionError",
    "RocketMQDataSource",
    "SinkError",
    "SparkSetupError",
    "backlog",
    "publish_dataframe",
    "register",
]


def register(spark: Any) -> None:
    """Make ``format("rocketmq")`` available on this SparkSession, with Spark's Python
    workers running an interpreter that has this package (:func:`choose_worker_python`:
    this one on a local master unless ``PYSPARK_PYTHON`` says otherwise). Reads pack small
    queue ranges for the session's default parallelism as it is now (docs/spark.md)."""
    choose_worker_python(spark)  # before register: the registered source carries it
    cores = spark.sparkContext.defaultParallelism
    spark.dataSource.register(RocketMQDataSource.for_session(cores))
