"""The library is silent unless the application configures logging, and then follows it."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog

from rocketmq_actors.logs import FailureLog, configure_logging, get_logger


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def collected() -> Iterator[_Collect]:
    """A stdlib handler on the library's root logger, at INFO; removed afterwards."""
    structlog.reset_defaults()
    handler = _Collect()
    root = logging.getLogger("rocketmq_actors")
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


def test_nothing_is_printed_when_no_logging_is_configured() -> None:
    """In a fresh interpreter (pytest installs logging handlers of its own): not even
    Python's last-resort handler prints our warnings and errors."""
    program = (
        "from rocketmq_actors.logs import get_logger\n"
        "log = get_logger('rocketmq_actors.test')\n"
        "log.info('test.info', a=1)\n"
        "log.warning('test.warning', b=2)\n"
        "log.error('test.error', c=3)\n"
        "try:\n"
        "    raise ValueError('boom')\n"
        "except ValueError:\n"
        "    log.exception('test.exception')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "" and done.stderr == ""


def test_stdlib_records_carry_the_event_and_fields(collected: _Collect) -> None:
    log = get_logger("rocketmq_actors.producer")
    log.debug("producer.debugging", x=1)  # below INFO: filtered
    log.info("producer.started", group="orders", client_id="1.2.3.4@1", note="two words")
    (record,) = collected.records
    assert record.name == "rocketmq_actors.producer" and record.levelno == logging.INFO
    assert record.getMessage() == (
        "producer.started group=orders client_id=1.2.3.4@1 note='two words'"
    )
    assert record.event == "producer.started"  # type: ignore[attr-defined]
    assert record.fields == {  # type: ignore[attr-defined]
        "group": "orders", "client_id": "1.2.3.4@1", "note": "two words"
    }  # fmt: skip
    assert record.funcName == "test_stdlib_records_carry_the_event_and_fields"  # the caller


def test_exc_info_gives_a_traceback_through_the_stdlib_formatter(collected: _Collect) -> None:
    log = get_logger("rocketmq_actors.consumer")
    try:
        raise RuntimeError("handler broke")
    except RuntimeError as exc:
        log.warning("consumer.handler_failed", msg_id="X", exc_info=exc)
    (record,) = collected.records
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    text = logging.Formatter().format(record)
    assert "Traceback (most recent call last)" in text and "handler broke" in text
    assert "exc_info" not in record.fields  # type: ignore[attr-defined]


def test_bound_fields_are_kept(collected: _Collect) -> None:
    get_logger("rocketmq_actors.x").bind(group="g").info("x.done", n=2)
    assert collected.records[0].fields == {"group": "g", "n": 2}  # type: ignore[attr-defined]


def test_an_application_that_configured_structlog_keeps_its_processors(
    collected: _Collect,
) -> None:
    seen: list[dict[str, Any]] = []

    def keep(_: object, method: str, event_dict: MutableMapping[str, Any]) -> str:
        seen.append({"method": method, **event_dict})
        return ""

    structlog.configure(processors=[keep], logger_factory=structlog.ReturnLoggerFactory())
    get_logger("rocketmq_actors.cluster").warning("route.removed", topic="T")
    assert seen == [{"method": "warning", "event": "route.removed", "topic": "T"}]
    assert collected.records == []  # not through stdlib as well


def test_configure_logging_writes_json_lines() -> None:
    buffer = io.StringIO()
    configure_logging(json=True, stream=buffer)
    get_logger("rocketmq_actors.cluster").info("instance.started", client_id="c")
    line = json.loads(buffer.getvalue().strip())
    assert line["event"] == "instance.started" and line["client_id"] == "c"
    assert line["level"] == "info"


@pytest.mark.integration
def test_a_producer_prints_nothing_without_logging_configured(
    rocketmq_namesrv: str, unique_topic: str
) -> None:
    """Start, send, stop in a fresh interpreter with no logging configured: no output at all
    (before: about ten INFO lines on stdout)."""
    program = (
        "import anyio\n"
        "from rocketmq_actors.producer import Message, Producer\n"
        "async def main() -> None:\n"
        f"    async with Producer(namesrv={rocketmq_namesrv!r}, group='G_silent') as p:\n"
        f"        await p.send(Message(topic={unique_topic!r}, body=b'quiet'))\n"
        "        future = await p.submit(Message(topic="
        f"{unique_topic!r}, body=b'quiet too'))\n"
        "        await future\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout == "" and done.stderr == ""


def test_failure_log_lets_one_line_per_key_through_per_interval() -> None:
    now = [0.0]
    log = FailureLog(10.0, clock=lambda: now[0])
    assert log.admit("q1") == 0
    assert log.admit("q1") is None and log.admit("q1") is None  # suppressed, counted
    assert log.admit("q2") == 0  # another queue has its own budget
    now[0] = 10.0
    assert log.admit("q1") == 2  # the next line says how many were left out
    assert log.admit("q1") is None
