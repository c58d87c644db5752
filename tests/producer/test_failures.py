"""How sends fail, against a fake broker (faults on demand; the real broker cannot be told
to answer SYSTEM_BUSY or to stall)."""

from __future__ import annotations

import json

import anyio
import pytest

from rocketmq_actors.errors import BrokerError, RequestTimeout, SendFailed
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer


class FakeCluster:
    """Answers as NameServer (route of any topic: one broker, itself) and as that broker."""

    def __init__(self, send_answer: str) -> None:
        self.send_answer = send_answer
        self.sends = 0
        self.addr = ""

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            broker = {"brokerName": "fake", "cluster": "C", "brokerAddrs": {"0": self.addr}}
            queues = {"brokerName": "fake", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}
            body = {"brokerDatas": [broker], "queueDatas": [queues]}
            await peer.reply(cmd, body=json.dumps(body).encode())
        elif cmd.code == RequestCode.SEND_MESSAGE_V2:
            self.sends += 1
            if self.send_answer == "busy":
                await peer.reply(cmd, ResponseCode.SYSTEM_BUSY, remark="busy")
            elif self.send_answer == "illegal":
                await peer.reply(cmd, ResponseCode.MESSAGE_ILLEGAL, remark="no")
            else:  # stall
                await anyio.sleep_forever()
        else:
            await peer.reply(cmd)


async def _send(answer: str, **producer: float) -> tuple[SendFailed, FakeCluster]:
    fake = FakeCluster(answer)
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(namesrv=server.addr, group="G", **producer) as p:  # type: ignore[arg-type]
            with pytest.raises(SendFailed) as info:
                await p.send(Message(topic="T", body=b"x"))
    return info.value, fake


async def test_busy_broker_is_retried_then_not_stored() -> None:
    failed, fake = await _send("busy")
    assert fake.sends == 3 and len(failed.attempts) == 3  # 1 + retry_times
    assert all(isinstance(a, BrokerError) for a in failed.attempts)
    assert not failed.outcome_unknown and failed.retriable


async def test_refusal_is_not_retried() -> None:
    failed, fake = await _send("illegal")
    assert fake.sends == 1 and not failed.retriable and not failed.outcome_unknown


async def test_stalled_broker_means_outcome_unknown_within_the_timeout() -> None:
    with anyio.fail_after(5):
        failed, _ = await _send("stall", send_timeout=0.5)
    assert failed.outcome_unknown
    assert isinstance(failed.__cause__, RequestTimeout)


async def test_send_nowait_applies_backpressure() -> None:
    fake = FakeCluster("stall")
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(namesrv=server.addr, group="G", max_pending=2, send_timeout=0.3) as p:
            first = await p.send_nowait(Message(topic="T", body=b"1"))
            second = await p.send_nowait(Message(topic="T", body=b"2"))
            admitted = anyio.Event()

            async def third() -> None:
                await p.send_nowait(Message(topic="T", body=b"3"))
                admitted.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(third)
                await anyio.wait_all_tasks_blocked()
                assert not admitted.is_set()  # two in flight: the third waits, no error
                with pytest.raises(SendFailed):
                    await first
                await admitted.wait()
            with pytest.raises(SendFailed):
                await second


def test_refused_identity_is_access_denied_in_both_dialects() -> None:
    from rocketmq_actors.errors import AccessDenied, BrokerError, broker_error

    v5 = broker_error("b:1", 16, "check signature failed.")
    v4 = broker_error("b:1", 1, "org.apache.rocketmq.acl.common.AclException: No accessKey ...")
    assert isinstance(v5, AccessDenied) and isinstance(v4, AccessDenied)
    assert not v5.retriable and not v4.retriable
    perm = broker_error("b:1", 16, "the broker[broker-a] sending message is forbidden")
    assert type(perm) is BrokerError and perm.retriable  # a permission, not an identity
