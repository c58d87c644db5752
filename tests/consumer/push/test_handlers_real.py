"""A failing handler is visible: WARNING with the traceback and the message's coordinates."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anyio
import pytest
import structlog

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def warnings() -> Iterator[_Collect]:
    structlog.reset_defaults()  # the application uses plain logging
    handler = _Collect()
    logger = logging.getLogger("rocketmq_actors.consumer")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


async def test_handler_failures_log_a_warning_with_the_traceback_once_per_interval(
    warnings: _Collect, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_handlers_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for i in range(5):
            await producer.send(Message(topic=unique_topic, body=b"bad%d" % i))
    failed = anyio.Event()
    calls = 0

    async def handle(message: MessageExt) -> None:
        nonlocal calls
        calls += 1
        if calls >= 5:
            failed.set()
        raise LookupError(f"no such order {message.body!r}")

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, retry_delay_level=18),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            await failed.wait()
        assert consumer.failed >= 5
    lines = [r for r in warnings.records if r.getMessage().startswith("consumer.handler_failed")]
    assert len(lines) == 1  # five failures on one queue within 10 s: one line
    (line,) = lines
    assert line.levelno == logging.WARNING
    assert line.exc_info is not None and line.exc_info[0] is LookupError
    assert "no such order" in logging.Formatter().format(line)  # the traceback, formatted
    fields = line.fields  # type: ignore[attr-defined]
    assert fields["topic"] == unique_topic and fields["queue"] == "broker-a:0"
    assert fields["queue_offset"] == 0 and fields["reconsume_times"] == 0
    assert fields["msg_id"] and fields["suppressed"] == 0
