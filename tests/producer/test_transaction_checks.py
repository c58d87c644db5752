"""Transaction checks the broker sends: decoded once, and a slow checker does not hold up the
checks behind it (a fake broker: the real one sends checks only on its own schedule)."""

from __future__ import annotations

import anyio

from rocketmq_actors.producer.transaction import LocalTransactionState, TransactionProducer
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body
from rocketmq_actors.testing.stored import encode_stored

from .test_deadlines import NameServer


class Broker:
    """Answers what the producer asks and records the END_TRANSACTIONs it gets."""

    def __init__(self) -> None:
        self.ended: list[RemotingCommand] = []
        self.changed = anyio.Event()

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.END_TRANSACTION:
            self.ended.append(cmd)
            self.changed.set()
            self.changed = anyio.Event()
        elif not cmd.is_oneway:
            await peer.reply(cmd)


async def _check(peer: FakePeer, key: str, offset: int) -> None:
    properties = {"PGROUP": "G", "TRAN_MSG": "true", "UNIQ_KEY": key}
    body = encode_stored(topic="T", body=key.encode(), properties=properties)
    cmd = RemotingCommand.request(
        RequestCode.CHECK_TRANSACTION_STATE,
        {"tranStateTableOffset": str(offset), "commitLogOffset": str(offset), "msgId": key},
        body, oneway=True,
    )  # fmt: skip
    cmd.opaque = 5000 + offset
    await peer.send(cmd)


async def test_a_slow_checker_does_not_hold_up_the_checks_behind_it() -> None:
    release = anyio.Event()
    checked: list[str] = []

    async def checker(message: MessageExt) -> LocalTransactionState:
        checked.append(message.body.decode())
        if message.body == b"slow":
            await release.wait()
        return LocalTransactionState.COMMIT

    broker = Broker()
    async with FakeServer(broker) as fake:
        routes = {"T": route_body(("broker-a", fake.addr))}
        async with (
            FakeServer(NameServer(routes)) as ns,
            TransactionProducer(namesrv=ns.addr, group="G", checker=checker, topics=["T"]) as p,
        ):
            peer = await fake.wait_peer()
            await _check(peer, "slow", 1)
            await _check(peer, "fast", 2)
            with anyio.fail_after(5):
                while not broker.ended:
                    await broker.changed.wait()
            # the fast one was answered while the slow one still runs
            assert [c.ext_fields["msgId"] for c in broker.ended] == ["fast"]
            assert checked == ["slow", "fast"] and p._group.checks == 2
            release.set()
            with anyio.fail_after(5):
                while len(broker.ended) < 2:
                    await broker.changed.wait()
    assert [c.ext_fields["commitOrRollback"] for c in broker.ended] == ["8", "8"]
