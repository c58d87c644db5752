"""The launcher's one-shot requests against an in-process fake broker."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.testing import probe
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer


async def test_register_broker_now_sets_the_broker_permission_to_its_value() -> None:
    """UPDATE_BROKER_CONFIG with brokerPermission is what makes a 5.x broker call
    registerBrokerAll (AdminBrokerProcessor.updateBrokerConfig)."""
    seen: list[RemotingCommand] = []

    async def broker(peer: FakePeer, cmd: RemotingCommand) -> None:
        seen.append(cmd)
        await peer.reply(cmd, ResponseCode.SUCCESS)

    async with FakeServer(broker) as server:
        await anyio.to_thread.run_sync(probe.register_broker_now, server.addr, "6")
    assert [(c.code, c.body) for c in seen] == [(25, b"brokerPermission=6\n")]


async def test_a_refusal_is_a_probe_error_with_its_code() -> None:
    async def acl_broker(peer: FakePeer, cmd: RemotingCommand) -> None:
        await peer.reply(cmd, ResponseCode.NO_PERMISSION)

    async with FakeServer(acl_broker) as server:
        with pytest.raises(probe.ProbeError) as caught:
            await anyio.to_thread.run_sync(probe.register_broker_now, server.addr, "6")
    assert caught.value.code == ResponseCode.NO_PERMISSION
