"""``message trace``: usage mistakes and the rows it shows (the real run:
tests/trace/test_trace_real.py)."""

from __future__ import annotations

import pytest

from rocketmq_actors.cli import main
from rocketmq_actors.cli.msgtrace import render_trace, trace_row
from rocketmq_actors.protocol.trace import (
    EndTransactionRecord,
    PubRecord,
    SubAfterRecord,
    SubBeforeRecord,
    TraceMessageType,
    TraceRecord,
)


@pytest.mark.parametrize(
    ("argv", "word"),
    [(["message", "trace"], "needs an ID"),
     (["message", "trace", "AB", "--trace-topic", "bad topic"], "bad topic")],
)  # fmt: skip
def test_usage_mistakes_exit_2_before_connecting(
    argv: list[str], word: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--namesrv", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and word in err, err


def test_rows_of_each_record_type() -> None:
    records: list[TraceRecord] = [
        PubRecord(timestamp=1, region_id="R", group="PG", topic="T", msg_id="M", tags=None,
                  keys=None, store_host="b:1", body_length=1, cost_ms=4,
                  msg_type=TraceMessageType.NORMAL, offset_msg_id="O", success=True),
        SubBeforeRecord(timestamp=2, region_id="R", group="CG", request_id="Q", msg_id="M",
                        retry_times=1, keys=None),
        SubAfterRecord(request_id="Q", msg_id="M", cost_ms=3, success=False, keys=None,
                       context_code=2, timestamp=3, group="CG"),
        EndTransactionRecord(timestamp=4, region_id="R", group="PG", topic="T", msg_id="M",
                             tags=None, keys=None, store_host="b:1", transaction_id="M",
                             transaction_state="COMMIT_MESSAGE", from_check=True),
    ]  # fmt: skip
    rows = [trace_row(r, "10.0.0.1:5") for r in records]
    assert [(r["type"], r["group"], r["cost_ms"], r["status"]) for r in rows] == [
        ("Pub", "PG", 4, "success"), ("SubBefore", "CG", None, None),
        ("SubAfter", "CG", 3, "failed"), ("EndTransaction", "PG", None, "COMMIT_MESSAGE"),
    ]  # fmt: skip
    shown = render_trace({"msg_id": "M", "records": rows, "failed_brokers": {}})
    assert shown.splitlines()[0].split() == [
        "type", "group", "time", "cost_ms", "status", "client_host", "detail"
    ]  # fmt: skip
    assert "from_check=true" in shown and "code=2" in shown
    assert render_trace({"msg_id": "M", "records": [], "failed_brokers": {}}) == "no trace of M"
