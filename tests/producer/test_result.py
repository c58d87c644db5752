"""SendResult: the per-message results of a batch, built through the slots."""

from __future__ import annotations

import attrs
import pytest

from rocketmq_actors.producer.result import SendResult, SendStatus, new_send_result
from rocketmq_actors.protocol.bodies import MessageQueue


def test_members_equal_the_constructor_and_stay_frozen() -> None:
    queue = MessageQueue(topic="T", broker_name="broker-a", queue_id=3)
    batch = SendResult(status=SendStatus.FLUSH_DISK_TIMEOUT, msg_id="A,B", offset_msg_id="X,Y",
                       queue=queue, queue_offset=100, transaction_id="tx",
                       region_id="DefaultRegion")  # fmt: skip
    first, member = batch.members(["A", "B"], ["X", "Y"])
    assert first == SendResult(status=SendStatus.FLUSH_DISK_TIMEOUT, msg_id="A",
                               offset_msg_id="X", queue=queue, queue_offset=100,
                               region_id="DefaultRegion")  # fmt: skip
    expected = SendResult(status=SendStatus.FLUSH_DISK_TIMEOUT, msg_id="B", offset_msg_id="Y",
                          queue=queue, queue_offset=101, region_id="DefaultRegion")  # fmt: skip
    assert member == expected
    assert hash(member) == hash(expected)
    assert repr(member) == repr(expected)
    assert attrs.asdict(member) == attrs.asdict(expected)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        member.queue_offset = 5  # type: ignore[misc]
    for field in attrs.fields(SendResult):  # every slot is set (a new field must be added)
        getattr(member, field.name)


def test_new_send_result_equals_the_constructor() -> None:
    queue = MessageQueue(topic="T", broker_name="broker-a", queue_id=0)
    built = new_send_result(SendStatus.SEND_OK, "A", "X", queue, 7, "tx", None)
    assert built == SendResult(status=SendStatus.SEND_OK, msg_id="A", offset_msg_id="X",
                               queue=queue, queue_offset=7, transaction_id="tx")  # fmt: skip
