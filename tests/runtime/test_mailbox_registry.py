from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.runtime.mailbox import Mailbox, MailboxClosed, MailboxFull
from rocketmq_actors.runtime.registry import Registry


async def test_mailbox_is_bounded_and_counts() -> None:
    box: Mailbox[int] = Mailbox("inbox", capacity=2)
    box.post_nowait(1)
    await box.post(2)
    with pytest.raises(MailboxFull):
        box.post_nowait(3)
    stats = box.statistics()
    assert (stats.queued, stats.delivered, stats.rejected, stats.capacity) == (2, 2, 1, 2)
    assert await box.receive() == 1
    box.post_nowait(3)
    box.close()
    assert [item async for item in box] == [2, 3]


async def test_mailbox_post_waits_for_room() -> None:
    box: Mailbox[int] = Mailbox("inbox", capacity=1)
    box.post_nowait(1)
    posted = anyio.Event()

    async def poster() -> None:
        await box.post(2)
        posted.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(poster)
        await anyio.wait_all_tasks_blocked()
        assert not posted.is_set()  # backpressure: waiting, not failing
        assert await box.receive() == 1
        await posted.wait()
    assert await box.receive() == 2


async def test_mailbox_sender_clones_keep_it_open() -> None:
    box: Mailbox[str] = Mailbox("inbox")
    sender = box.sender()
    assert box.statistics().senders == 2
    box.close()
    await sender.send("still open")
    sender.close()
    assert [item async for item in box] == ["still open"]


def test_mailbox_needs_capacity() -> None:
    with pytest.raises(ValueError):
        Mailbox("x", capacity=0)


async def test_registry_unique_keys_and_identity_unregister() -> None:
    reg: Registry[str, object] = Registry()
    a, b = object(), object()
    reg.register("k", a)
    with pytest.raises(KeyError):
        reg.register("k", b)
    reg.unregister("k", b)  # not the registered value: ignored
    assert reg.lookup("k") is a
    reg.unregister("k", a)
    assert reg.lookup("k") is None and len(reg) == 0


async def test_registry_lock_is_per_key() -> None:
    reg: Registry[str, object] = Registry()
    assert reg.lock("a") is reg.lock("a") and reg.lock("a") is not reg.lock("b")


async def test_posting_to_a_closed_mailbox_is_typed_and_dispose_closes_both_ends() -> None:
    box: Mailbox[int] = Mailbox("inbox")
    box.close()
    with pytest.raises(MailboxClosed):
        box.post_nowait(1)
    assert [item async for item in box] == []
    box.dispose()
    with pytest.raises(anyio.ClosedResourceError):
        await box.receive()
