"""The rocketmq source's options, checked without Spark or a broker."""

from __future__ import annotations

import pytest

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.spark.options import OptionError
from rocketmq_actors.spark.source_options import EARLIEST, LATEST, SourceOptions

BASE = {"namesrv": "127.0.0.1:9876", "topic": "orders"}


def test_defaults_differ_for_a_stream_and_a_batch() -> None:
    stream = SourceOptions.parse(BASE, streaming=True)
    batch = SourceOptions.parse(BASE, streaming=False)
    assert (stream.start.kind, batch.start.kind) == ("latest", "earliest")
    assert stream.end.kind == "latest" and stream.fail_on_data_loss
    assert (stream.expression, stream.expression_type) == ("*", "TAG")
    assert stream.max_offsets_per_trigger is None and stream.min_partitions is None


def test_topics_pattern_and_offsets_json() -> None:
    options = SourceOptions.parse(
        {"namesrv": "127.0.0.1:9876", "topics": "a, b,,c", "sql": "price > 10",
         "startingOffsets": '{"a": {"broker-a:0": 42, "broker-b:3": -2}}',
         "maxOffsetsPerTrigger": "500", "minPartitions": "8", "failOnDataLoss": "false"},
        streaming=True,
    )  # fmt: skip
    assert options.topics == ("a", "b", "c") and options.pattern is None
    assert options.start.kind == "offsets"
    assert options.start.offsets == {"a": {"broker-a:0": 42, "broker-b:3": EARLIEST}}
    assert (options.expression, options.expression_type) == ("price > 10", "SQL92")
    assert (options.max_offsets_per_trigger, options.min_partitions) == (500, 8)
    assert not options.fail_on_data_loss
    pattern = SourceOptions.parse({"namesrv": "h:1", "topicPattern": "orders-.*"}, streaming=True)
    assert pattern.pattern is not None and pattern.pattern.fullmatch("orders-eu")
    end = SourceOptions.parse({**BASE, "endingOffsets": '{"orders": {"b:1": -1}}'}, streaming=False)
    assert (end.end.kind, end.end.offsets) == ("offsets", {"orders": {"b:1": LATEST}})


def test_timestamps() -> None:
    one = SourceOptions.parse({**BASE, "startingTimestamp": "1700000000000"}, streaming=True)
    assert (one.start.kind, one.start.timestamp) == ("timestamp", 1700000000000)
    each = SourceOptions.parse(
        {**BASE, "startingOffsetsByTimestamp": '{"orders": {"broker-a:1": 5}}'}, streaming=True
    )
    assert (each.start.kind, each.start.offsets) == ("timestamps", {"orders": {"broker-a:1": 5}})
    until = SourceOptions.parse({**BASE, "endingTimestamp": "1700000000000"}, streaming=False)
    assert (until.end.kind, until.end.timestamp) == ("timestamp", 1700000000000)
    by_queue = SourceOptions.parse(
        {**BASE, "endingOffsetsByTimestamp": '{"orders": {"broker-a:1": 7}}'}, streaming=False
    )
    assert by_queue.end.kind == "timestamps"
    assert by_queue.end.offsets == {"orders": {"broker-a:1": 7}}


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({**BASE, "startingOffset": "earliest"}, True, "unknown option(s) ['startingoffset']"),
        ({**BASE, "failOnDataloss ": "x"}, True, "unknown option"),
        ({**BASE, "endingOffsets": "latest"}, True, "do not apply to a streaming read"),
        ({**BASE, "endingTimestamp": "5"}, True, "do not apply to a streaming read"),
        ({**BASE, "endingTimestamp": "5", "endingOffsets": "latest"}, False, "at most one of"),
        ({**BASE, "endingTimestamp": "-5"}, False, "endingTimestamp"),
        ({**BASE, "maxOffsetsPerTrigger": "5"}, False, "do not apply to a batch read"),
        ({"namesrv": "h:1"}, True, "exactly one of the options 'topic', 'topics'"),
        ({**BASE, "topics": "a"}, True, "exactly one of"),
        ({"namesrv": "h:1", "topicPattern": "("}, True, "not a regular expression"),
        ({"namesrv": "h:1", "topics": " , "}, True, "names no topic"),
        ({"namesrv": "h:1", "topic": "bad topic!"}, True, "topic"),
        ({"topic": "t"}, True, "'namesrv' is required"),
        ({**BASE, "startingOffsets": "first"}, True, "must be earliest, latest or JSON"),
        ({**BASE, "startingOffsets": '{"orders": {"broker-a": 1}}'}, True, "broker-name:queue-id"),
        ({**BASE, "startingOffsets": '{"orders": {"b:0": -3}}'}, True, "has the value -3"),
        ({**BASE, "startingOffsets": '{"orders": {"b:0": "1"}}'}, True, "has the value '1'"),
        ({**BASE, "startingOffsets": '{"orders": [1]}'}, True, "must be an object"),
        ({**BASE, "endingOffsets": '{"orders": {"b:0": -2}}'}, False, "has the value -2"),
        ({**BASE, "startingOffsets": "earliest", "startingTimestamp": "1"}, True, "at most one"),
        ({**BASE, "startingTimestamp": "yesterday"}, True, "must be a number"),
        ({**BASE, "tags": "a", "sql": "b"}, True, "'tags' and 'sql'"),
        ({**BASE, "maxOffsetsPerTrigger": "0"}, True, "at least 1"),
        ({**BASE, "failOnDataLoss": "maybe"}, True, "true or false"),
        ({**BASE, "accessKey": "ak"}, True, "both"),
        ({**BASE, "group": "bad group!"}, True, "group"),
    ],
)
def test_bad_options_are_refused_before_any_io(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(OptionError) as caught:
        SourceOptions.parse(options, streaming=streaming)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_option_errors_are_the_clients_config_errors() -> None:
    # OptionError joins the client's hierarchy on the writer's branch; either way a ValueError
    with pytest.raises((OptionError, ConfigError)):
        SourceOptions.parse({"namesrv": "nohostport", "topic": "t"}, streaming=True)


def test_min_offsets_per_partition_is_a_count_and_zero_turns_packing_off() -> None:
    assert SourceOptions.parse(BASE, streaming=True).min_offsets_per_partition == 300_000
    given = SourceOptions.parse({**BASE, "MINOFFSETSPERPARTITION": "0"}, streaming=False)
    assert given.min_offsets_per_partition == 0
    for bad in ("-1", "lots", "1.5"):
        with pytest.raises(OptionError, match="minOffsetsPerPartition"):
            SourceOptions.parse({**BASE, "minOffsetsPerPartition": bad}, streaming=False)


def test_assign_names_the_queues_read_and_include_headers_is_taken() -> None:
    """Kafka's ``assign`` (``{"topic": [0, 1]}``) with queues named by broker too; Kafka's
    ``includeHeaders`` is taken (a boolean), the properties column being always there."""
    options = SourceOptions.parse(
        {"namesrv": "h:1", "assign": '{"a": ["broker-a:0", "broker-b:3"], "b": ["x:1"]}',
         "includeHeaders": "true"},
        streaming=True,
    )  # fmt: skip
    assert options.topics == ("a", "b")
    assert options.assigned == {
        "a": frozenset({"broker-a:0", "broker-b:3"}),
        "b": frozenset({"x:1"}),
    }
    for bad in ('{"a": [0]}', '{"a": []}', '["a"]', "a", '{"a": ["b:x"]}'):
        with pytest.raises(OptionError, match="assign"):
            SourceOptions.parse({"namesrv": "h:1", "assign": bad}, streaming=True)
    with pytest.raises(OptionError, match="exactly one"):
        SourceOptions.parse({**BASE, "assign": '{"a": ["b:0"]}'}, streaming=True)
    with pytest.raises(OptionError, match=r"(?i)includeHeaders"):
        SourceOptions.parse({**BASE, "includeHeaders": "perhaps"}, streaming=True)
