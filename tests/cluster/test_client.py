"""cluster.client.Client: a public client's lifecycle and state are its actor group's."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio

from rocketmq_actors.cluster.client import Client
from rocketmq_actors.cluster.member import GroupMember
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.runtime.lifecycle import State


class _Group(GroupMember):
    async def _open(self, stack: AsyncExitStack) -> None:  # (no instance: nothing to join)
        self.opened = True


class _Thin(Client[_Group]):
    def __init__(self) -> None:
        self._group = _Group(
            kind="thin", group="G", namesrv="127.0.0.1:1", instance=None, client=ClientOptions()
        )


async def test_async_with_start_stop_and_state_are_the_groups() -> None:
    thin = _Thin()
    assert thin.state is State.NEW and not thin.running and thin.group == "G"
    async with thin as entered:
        assert entered is thin and thin.running and thin._group.opened
        assert thin.tree().name == thin._group.tree().name
    assert thin.state is State.STOPPED and thin.error is None
    other = _Thin()
    await other.start()
    async with anyio.create_task_group() as tg:  # stopped from another task
        tg.start_soon(other.stop)
    await other.wait_closed()
    assert other.state is State.STOPPED
