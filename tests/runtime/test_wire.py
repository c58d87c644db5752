"""AsyncioWire details a round trip would not show: order under write_now, and early chunks
copied out of the receive buffer the loop reuses."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from rocketmq_actors.runtime.wire import AsyncioWire, _WireProtocol


class _Transport:
    """Records writes; enough of asyncio.Transport for the wire."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def _wire() -> tuple[AsyncioWire, _Transport, _WireProtocol]:
    transport, protocol = _Transport(), _WireProtocol()
    return AsyncioWire(cast(asyncio.Transport, transport), protocol), transport, protocol


async def test_write_now_leaves_at_once_and_never_overtakes_queued_frames() -> None:
    wire, transport, _ = _wire()
    wire.write_now(b"alone")
    assert transport.written == [b"alone"]  # before the loop turn ends
    wire.write(b"a")
    wire.write_now(b"b")  # the outbox is not empty: b must wait behind a
    assert transport.written == [b"alone"]
    await asyncio.sleep(0)  # the flush callback runs
    assert transport.written == [b"alone", b"ab"]
    assert wire.writes == 2
    assert wire.bytes_written == len(b"alone") + 2


async def test_chunks_received_before_bind_are_copied_out_of_the_reused_buffer() -> None:
    transport, protocol = _Transport(), _WireProtocol()

    def receive(data: bytes) -> None:
        buffer = protocol.get_buffer(len(data))
        buffer[: len(data)] = data
        protocol.buffer_updated(len(data))

    receive(b"first")  # no wire yet: kept aside
    wire = AsyncioWire(cast(asyncio.Transport, transport), protocol)
    receive(b"XXXXXsecond")  # wire built but not bound: kept aside too, buffer overwritten
    seen: list[bytes] = []
    wire.bind(lambda chunk: seen.append(bytes(chunk)))
    receive(b"third")
    assert seen == [b"first", b"XXXXXsecond", b"third"]


async def test_a_flush_queued_after_woken_tasks_takes_their_writes_in_the_same_turn() -> None:
    # _on_data completes requests (their tasks' steps join the loop's ready queue), then asks
    # for a flush behind them: what the tasks write leaves before anything they queue runs.
    wire, transport, _ = _wire()
    loop = asyncio.get_running_loop()
    seen: list[list[bytes]] = []
    done = asyncio.Event()

    def next_turn() -> None:
        seen.append(list(transport.written))
        done.set()

    def woken_task() -> None:
        loop.call_soon(next_turn)  # queued before the write: runs in the next loop turn
        wire.write(b"a")
        wire.write(b"b")

    loop.call_soon(woken_task)
    wire.flush_after_woken()
    await done.wait()
    assert seen == [[b"ab"]]  # one write, in the tasks' own turn
    wire.write(b"c")  # with no flush queued, a write queues one
    await asyncio.sleep(0)
    assert transport.written == [b"ab", b"c"]
