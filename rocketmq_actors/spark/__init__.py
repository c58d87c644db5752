"""PySpark integration: :func:`publish_dataframe` (driver-side) and the ``rocketmq`` data
source (executor-side writes, batch and streaming; batch reads). Needs the ``spark`` extra
(``pip install 'rocketmq-actors[spark]'``: PySpark 4 with pyarrow)."""

from __future__ import annotations

from typing import Any

from .columns import ColumnError
from .datasource import RocketMQDataSource, SinkError
from .options import OptionError
from .publisher import publish_dataframe

__all__ = [
    "ColumnError",
    "OptionError",
    "RocketMQDataSource",
    "SinkError",
    "publish_dataframe",
    "register",
]


def register(spark: Any) -> None:
    """Make ``format("rocketmq")`` available on this SparkSession."""
    spark.dataSource.register(RocketMQDataSource)
