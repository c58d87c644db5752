"""The batch and streaming readers' executor entry point, without Spark or a broker."""

from __future__ import annotations

import pytest
from pyspark.sql.datasource import InputPartition

from rocketmq_actors.errors import InternalError
from rocketmq_actors.spark.reader import RocketMQReader, RocketMQStreamReader

OPTIONS = {"namesrv": "127.0.0.1:9876", "topic": "t"}


@pytest.mark.parametrize("reader", [RocketMQReader, RocketMQStreamReader])
def test_spark_s_placeholder_for_an_empty_plan_reads_no_rows(reader: type) -> None:
    """A plan without ranges is read as one ``InputPartition(None)`` (pyspark's
    plan_data_source_read): no rows, and no client is started for it."""
    assert list(reader(OPTIONS).read(InputPartition(None))) == []
    with pytest.raises(InternalError, match="did not plan"):
        reader(OPTIONS).read(InputPartition(3))
