"""SendResult and BatchResults: the send paths' results, built as drafts that become
SendResults, and the per-message results of a batch, built when first read."""

from __future__ import annotations

import pickle
import weakref

import attrs
import pytest

from rocketmq_actors.producer.result import (
    BatchResults,
    SendResult,
    SendStatus,
    new_send_result,
)
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
    _assert_a_plain_send_result(member)


def _assert_a_plain_send_result(result: SendResult) -> None:
    """What a user can do with a SendResult holds for one the send paths built."""
    assert type(result) is SendResult
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        result.queue_offset = 5  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del result.msg_id
    for field in attrs.fields(SendResult):  # every slot is set (a new field must be added)
        getattr(result, field.name)
    assert pickle.loads(pickle.dumps(result)) == result
    assert weakref.ref(result)() is result
    assert attrs.evolve(result, queue_offset=1).queue_offset == 1


def test_new_send_result_equals_the_constructor() -> None:
    queue = MessageQueue(topic="T", broker_name="broker-a", queue_id=0)
    built = new_send_result(SendStatus.SEND_OK, "A", "X", queue, 7, "tx", None)
    assert built == SendResult(status=SendStatus.SEND_OK, msg_id="A", offset_msg_id="X",
                               queue=queue, queue_offset=7, transaction_id="tx")  # fmt: skip
    timer = new_send_result(SendStatus.SEND_OK, "A", "X", queue, 7, None, "R", "aGFuZGxl")
    assert timer == SendResult(status=SendStatus.SEND_OK, msg_id="A", offset_msg_id="X",
                               queue=queue, queue_offset=7, region_id="R",
                               recall_handle="aGFuZGxl")  # fmt: skip
    assert built.recall_handle is None
    _assert_a_plain_send_result(built)
    _assert_a_plain_send_result(timer)


def _chunk(queue: MessageQueue, offset_ids: str, queue_offset: int) -> SendResult:
    return SendResult(status=SendStatus.SEND_OK, msg_id="", offset_msg_id=offset_ids,
                      queue=queue, queue_offset=queue_offset)  # fmt: skip


def test_batch_results_are_every_chunks_members_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[int] = []
    members = SendResult.members

    def counting(self: SendResult, msg_ids: list[str], offset_ids: list[str]) -> list[SendResult]:
        built.append(len(msg_ids))
        return members(self, msg_ids, offset_ids)

    monkeypatch.setattr(SendResult, "members", counting)
    q1 = MessageQueue(topic="T", broker_name="broker-a", queue_id=1)
    q2 = MessageQueue(topic="T", broker_name="broker-b", queue_id=0)
    results = BatchResults()
    results.add_chunk(_chunk(q1, "X1,X2", 10), ["A1", "A2"])
    results.add_chunk(_chunk(q2, "Y1", 4), ["B1", "B2"])  # fewer offset ids than messages
    assert len(results) == 4
    assert built == []  # nothing built until read
    expected = [
        SendResult(status=SendStatus.SEND_OK, msg_id="A1", offset_msg_id="X1", queue=q1,
                   queue_offset=10),
        SendResult(status=SendStatus.SEND_OK, msg_id="A2", offset_msg_id="X2", queue=q1,
                   queue_offset=11),
        SendResult(status=SendStatus.SEND_OK, msg_id="B1", offset_msg_id="Y1", queue=q2,
                   queue_offset=4),
        SendResult(status=SendStatus.SEND_OK, msg_id="B2", offset_msg_id="", queue=q2,
                   queue_offset=5),
    ]  # fmt: skip
    assert results[2] == expected[2]
    assert built == [2, 2]  # every chunk, once
    assert results == expected and list(results) == expected
    assert results[1:3] == expected[1:3] and results[-1] == expected[-1]
    assert [r.msg_id for r in results] == ["A1", "A2", "B1", "B2"]
    assert expected[3] in results and results.index(expected[1]) == 1
    assert built == [2, 2]  # read many times, built once
    assert repr(results) == f"BatchResults({expected!r})"
    assert results != expected[:3] and results != "ABCD"
    with pytest.raises(TypeError):
        hash(results)
    with pytest.raises(IndexError):
        results[4]


def test_empty_batch_results() -> None:
    results = BatchResults()
    assert len(results) == 0 and list(results) == [] and results == []
