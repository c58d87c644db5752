"""A transaction check's EndTransaction record, and the flush when the producer stops (a fake
broker sends the check; the trace messages go to a send function of the test's)."""

from __future__ import annotations

import anyio

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.producer.transaction import LocalTransactionState, TransactionProducer
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.protocol.trace import EndTransactionRecord, decode_records
from rocketmq_actors.testing.fakeserver import FakeServer, route_body

from ..producer.test_deadlines import NameServer
from ..producer.test_transaction_checks import Broker, _check


async def test_a_check_writes_end_transaction_flushed_on_stop() -> None:
    async def checker(message: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.ROLLBACK

    sent: list[bytes] = []

    async def send(topic: str, body: bytes, keys: list[str]) -> None:
        sent.append(body)

    broker = Broker()
    async with FakeServer(broker) as fake:
        routes = {"T": route_body(("broker-a", fake.addr))}
        async with FakeServer(NameServer(routes)) as ns:
            producer = TransactionProducer(
                namesrv=ns.addr,
                group="G",
                checker=checker,
                topics=["T"],
                client=ClientOptions(trace=True),
            )
            assert producer._group.trace is not None
            dispatcher = producer._group.trace.dispatcher
            dispatcher._send, dispatcher.linger = send, 3600  # only the stop sends it
            async with producer:
                peer = await fake.wait_peer()
                await _check(peer, "K1", 1)
                with anyio.fail_after(5):
                    while not broker.ended:
                        await broker.changed.wait()
                assert not sent and dispatcher.queued == 1
    (record,) = [r for body in sent for r in decode_records(body)]
    assert isinstance(record, EndTransactionRecord)
    assert (record.msg_id, record.group, record.topic, record.store_host) == (
        "K1", "G", "T", fake.addr
    )  # fmt: skip
    assert (record.transaction_state, record.from_check) == ("ROLLBACK_MESSAGE", True)
