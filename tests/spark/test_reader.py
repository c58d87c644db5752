"""The batch and streaming readers' executor entry point, without Spark or a broker."""

from __future__ import annotations

import pytest
from pyspark import cloudpickle
from pyspark.sql.datasource import InputPartition

from rocketmq_actors.errors import InternalError
from rocketmq_actors.spark.datasource import RocketMQDataSource
from rocketmq_actors.spark.pulling import READ_SCHEMA
from rocketmq_actors.spark.reader import RocketMQReader, RocketMQStreamReader

OPTIONS = {"namesrv": "127.0.0.1:9876", "topic": "t"}


@pytest.mark.parametrize("reader", [RocketMQReader, RocketMQStreamReader])
def test_spark_s_placeholder_for_an_empty_plan_reads_no_rows(reader: type) -> None:
    """A plan without ranges is read as one ``InputPartition(None)`` (pyspark's
    plan_data_source_read): no rows, and no client is started for it."""
    assert list(reader(OPTIONS).read(InputPartition(None))) == []
    with pytest.raises(InternalError, match="did not plan"):
        reader(OPTIONS).read(InputPartition(3))


def test_a_session_s_source_class_hands_its_cores_to_both_readers() -> None:
    """register(spark) registers ``for_session(defaultParallelism)``: the figure must reach
    the readers (it decides the packing), also through the pickling Spark does of the class
    (the planner runs in a Python process of its own)."""
    made = RocketMQDataSource.for_session(4)
    assert made.name() == "rocketmq" and RocketMQDataSource.cores is None
    pickled = cloudpickle.loads(cloudpickle.dumps(made))  # type: ignore[no-untyped-call]
    for source_class in (made, pickled):
        source = source_class(OPTIONS)
        reader, stream = source.reader(READ_SCHEMA), source.streamReader(READ_SCHEMA)
        assert isinstance(reader, RocketMQReader) and isinstance(stream, RocketMQStreamReader)
        assert (reader.cores, stream.cores) == (4, 4)
    plain = RocketMQDataSource(OPTIONS).reader(READ_SCHEMA)
    assert isinstance(plain, RocketMQReader) and plain.cores is None
