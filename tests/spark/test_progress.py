"""The backlog of a streaming query, from its progress (rocketmq_actors.spark.progress)."""

from __future__ import annotations

import json

from rocketmq_actors.spark.progress import backlog


def test_the_backlog_is_latest_less_end_per_queue_summed_per_topic() -> None:
    end = {"orders": {"broker-a:0": 40, "broker-b:0": 10}, "audit": {"broker-a:0": 5}}
    latest = {"orders": {"broker-a:0": 100, "broker-b:0": 10}, "audit": {"broker-a:0": 7}}
    progress = {"sources": [
        {"description": "PythonMicroBatchStream", "endOffset": json.dumps(end),
         "latestOffset": json.dumps(latest)},
        {"description": "KafkaV2", "endOffset": '{"t": {"0": 5}}',
         "latestOffset": '{"t": {"0": 9}}'},
        {"description": "rate", "endOffset": "7", "latestOffset": "9"},
    ]}  # fmt: skip
    assert backlog(progress) == {"orders": 60, "audit": 2}
    parsed = {"sources": [{"endOffset": end, "latestOffset": latest}]}  # (parsed offsets)
    assert backlog(parsed) == {"orders": 60, "audit": 2}
    assert backlog({"sources": []}) == {} and backlog({}) == {}
