"""ClientInstance on its own (no broker): what it does when a broker is connected to again."""

from __future__ import annotations

from typing import Any

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.protocol.events import ConsumerIdsChanged
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import CONSUMER_EVENTS, Inbound


class _OpenConnection:
    addr = "b:1"
    is_open = True

    def send_response(self, response: Any) -> None:
        raise AssertionError("a notice of our own is one-way: nothing answers it")


async def test_a_broker_that_has_the_groups_again_makes_each_consumer_rebalance() -> None:
    """Java's onChannelActive -> rebalanceImmediately: each consumer group of the instance
    gets the notice a broker sends when a group's members change."""
    instance = ClientInstance("127.0.0.1:9876")
    mailboxes = {group: Mailbox[Inbound](group) for group in ("C1", "C2")}
    for group, mailbox in mailboxes.items():
        instance.router.register(CONSUMER_EVENTS, group, mailbox)
        instance._consumer_groups.add(group)
    instance.pool.registry.register("b:1", _OpenConnection())  # type: ignore[arg-type]
    instance.heartbeat.on_registered("b:1")  # type: ignore[misc]
    for group, mailbox in mailboxes.items():
        assert mailbox.statistics().queued == 1  # one notice each
        with anyio.fail_after(5):
            inbound = await mailbox.receive()
        assert isinstance(inbound.event, ConsumerIdsChanged) and inbound.event.group == group


def test_a_connection_dialled_again_asks_the_heartbeat_actor_for_a_beat_now() -> None:
    instance = ClientInstance("127.0.0.1:9876")
    assert instance.pool._on_reconnect is not None
    instance.pool._on_reconnect("b:1")  # (what the pool calls as the new connection registers)
    assert instance.heartbeat._again == {"b:1"}


async def test_no_notice_goes_out_on_a_connection_closed_again_meanwhile() -> None:
    instance = ClientInstance("127.0.0.1:9876")
    mailbox = Mailbox[Inbound]("C1")
    instance.router.register(CONSUMER_EVENTS, "C1", mailbox)
    instance._consumer_groups.add("C1")
    closed = _OpenConnection()
    closed.is_open = False
    instance.pool.registry.register("b:1", closed)  # type: ignore[arg-type]
    instance.heartbeat.on_registered("b:1")  # type: ignore[misc]
    assert mailbox.statistics().queued == 0
