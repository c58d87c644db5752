"""A scriptable loopback remoting server for what a real broker will not do on demand.

Garbage frames, half a frame then close, stalls, responses out of order, requests of its own
(transaction checks, unknown codes), floods. It is never a substitute for the real broker in
tests of normal behaviour - only a source of faults.

    async def handler(peer: FakePeer, cmd: RemotingCommand) -> None:
        await peer.reply(cmd, ResponseCode.SUCCESS)

    async with FakeServer(handler) as server:
        ... connect to server.addr ...
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
from anyio.abc import SocketStream

from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.framing import FrameDecoder

__all__ = ["FakePeer", "FakeServer", "Handler", "answer_success", "route_body"]


class FakePeer:
    """One accepted client connection, seen from the server."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.received: list[RemotingCommand] = []
        self.responses: list[RemotingCommand] = []  # responses the client sent us
        self._opaque = 1_000_000
        self._arrived = anyio.Event()
        self._write_lock = anyio.Lock()  # handlers run concurrently; a stream has one writer

    async def send(self, cmd: RemotingCommand) -> None:
        await self.send_raw(cmd.encode())

    async def send_raw(self, data: bytes) -> None:
        async with self._write_lock:
            await self.stream.send(data)

    async def reply(
        self, request: RemotingCommand, code: int = ResponseCode.SUCCESS, **kwargs: object
    ) -> None:
        await self.send(request.response(code, **kwargs))  # type: ignore[arg-type]

    async def push(self, code: int, *, oneway: bool = False, **ext: str) -> int:
        """Send a server-initiated request; return its opaque."""
        self._opaque += 1
        cmd = RemotingCommand.request(code, ext, oneway=oneway)
        cmd.opaque = self._opaque
        await self.send(cmd)
        return cmd.opaque

    async def close(self) -> None:
        await self.stream.aclose()

    def _note_arrival(self) -> None:
        self._arrived.set()
        self._arrived = anyio.Event()

    async def _wait(self, done: Callable[[], bool]) -> None:
        while not done():
            await self._arrived.wait()

    async def wait_received(self, count: int) -> list[RemotingCommand]:
        """Wait until this peer has received ``count`` requests from the client."""
        await self._wait(lambda: len(self.received) >= count)
        return self.received

    async def wait_responses(self, count: int) -> list[RemotingCommand]:
        """Wait until the client has answered ``count`` of our requests."""
        await self._wait(lambda: len(self.responses) >= count)
        return self.responses


Handler = Callable[[FakePeer, RemotingCommand], Coroutine[Any, Any, None]]


def route_body(*brokers: tuple[str, str], queues: int = 2) -> bytes:
    """A GET_ROUTEINFO_BY_TOPIC answer: each ``(broker name, master address)`` with ``queues``
    read and write queues."""
    datas = [{"brokerName": n, "cluster": "C", "brokerAddrs": {"0": a}} for n, a in brokers]
    qdatas = [{"brokerName": n, "readQueueNums": queues, "writeQueueNums": queues, "perm": 6}
              for n, _ in brokers]  # fmt: skip
    return json.dumps({"brokerDatas": datas, "queueDatas": qdatas}).encode()


async def answer_success(peer: FakePeer, cmd: RemotingCommand) -> None:
    await peer.reply(cmd, ResponseCode.SUCCESS)


class FakeServer:
    def __init__(self, handler: Handler = answer_success) -> None:
        self.handler = handler
        self.peers: list[FakePeer] = []
        self.accepted = anyio.Event()
        self._listener: anyio.abc.Listener[SocketStream] | None = None
        self._port = 0
        self._tg: anyio.abc.TaskGroup | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self._port}"

    async def wait_peer(self, index: int = 0) -> FakePeer:
        """The ``index``-th accepted connection, once it exists."""
        while len(self.peers) <= index:
            await self.accepted.wait()
        return self.peers[index]

    async def __aenter__(self) -> FakeServer:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self._port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self._listener = listener
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._listener.serve, self._serve_peer)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None and self._listener is not None
        self._tg.cancel_scope.cancel()
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        finally:  # only once every task has seen the cancellation
            with anyio.CancelScope(shield=True):
                await self._listener.aclose()
                for peer in self.peers:
                    await peer.stream.aclose()

    async def _serve_peer(self, stream: SocketStream) -> None:
        peer = FakePeer(stream)
        self.peers.append(peer)
        self.accepted.set()
        self.accepted = anyio.Event()
        decoder = FrameDecoder()
        try:
            async with anyio.create_task_group() as tg:
                async for chunk in stream:
                    for cmd in decoder.feed(chunk):
                        if cmd.is_response:
                            peer.responses.append(cmd)
                        else:
                            peer.received.append(cmd)
                            tg.start_soon(self.handler, peer, cmd)
                        peer._note_arrival()
        except* (anyio.BrokenResourceError, anyio.ClosedResourceError, ProtocolError):
            pass  # the peer went away, or a handler closed it on purpose
