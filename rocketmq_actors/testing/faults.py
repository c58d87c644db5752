"""Fault injection and delivery checkers for chaos tests.

:class:`FaultProxy` is a TCP proxy to put between the client and a broker or NameServer (give
the client ``namesrv=proxy.addr``, or ``ClientInstance(address_map={broker: proxy.addr})``).
While it runs, a test can cut every connection, stall forwarding, add delay (with jitter),
drop bytes, or refuse new connections - the faults a real broker cannot produce on demand.

The checkers follow the OpenMessaging chaos suite: record every send outcome and every receipt,
then check. :class:`QueueChecker`: an acknowledged send never received is lost; a message
received twice is a duplicate. :class:`OrderChecker`: per sharding key, the acknowledged sends
must appear in the received stream in send order - redelivery (receiving an earlier message
again) is allowed, gaps and reordering are not.
"""

from __future__ import annotations

import enum
import itertools
import random
from collections import Counter, defaultdict
from collections.abc import Hashable
from types import TracebackType
from typing import Self

import anyio
import anyio.abc
import attrs

from rocketmq_actors.runtime.connection import split_addr

__all__ = ["FaultProxy", "OrderChecker", "OrderResult", "Outcome", "QueueChecker", "QueueResult"]


#: chunks a direction of one connection may hold in its delay line before the proxy stops
#: reading from the sender (TCP's flow control then slows the sender down)
DELAY_LINE_CHUNKS = 1024


class FaultProxy:
    """``async with FaultProxy("127.0.0.1:10911") as proxy``: listens on ``proxy.addr``.

    Each direction of each connection is forwarded chunk by chunk (what one read returns)
    through a delay line: :meth:`set_delay` holds every chunk for ``seconds``, or, with
    ``jitter``, for a time drawn uniformly from ``seconds - jitter`` to ``seconds + jitter``
    (at least 0), but never releases a chunk before the one read before it: the bytes of a
    connection are never reordered, so a chunk may wait past its own draw for an earlier,
    longer-held one (as a TCP receiver delivers in order behind a late segment). A delay
    is latency, not a bandwidth limit: chunks read while others are held are held side by
    side. A new delay applies to the chunks read from then on. ``seed`` makes the jitter's
    draws repeatable."""

    def __init__(self, upstream: str, *, seed: int | None = None) -> None:
        self.upstream = upstream
        self._host, self._port = split_addr(upstream)
        self._listener: anyio.abc.Listener[anyio.abc.SocketStream] | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._pairs: set[anyio.CancelScope] = set()
        self._flowing = anyio.Event()
        self._flowing.set()
        self.delay = 0.0
        self.jitter = 0.0
        self._random = random.Random(seed)
        self.dropping = False
        self.refusing = False
        self.accepted = 0
        self.bytes_forwarded = 0

    @property
    def addr(self) -> str:
        assert self._listener is not None, "use 'async with'"
        port = self._listener.extra(anyio.abc.SocketAttribute.local_port)
        return f"127.0.0.1:{port}"

    @property
    def connections(self) -> int:
        return len(self._pairs)

    async def __aenter__(self) -> Self:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self._listener = listener
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(listener.serve, self._handle)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None and self._listener is not None
        self._flowing.set()
        self._tg.cancel_scope.cancel()
        result = await self._tg.__aexit__(exc_type, exc, tb)
        await self._listener.aclose()
        return result

    # ---- faults ----------------------------------------------------------------------------

    def cut(self) -> int:
        """Close every connection through the proxy now (both sides see a reset/EOF)."""
        pairs = list(self._pairs)
        for scope in pairs:
            scope.cancel()
        return len(pairs)

    def stall(self) -> None:
        """Stop forwarding (connections stay open; bytes wait in the proxy)."""
        if self._flowing.is_set():
            self._flowing = anyio.Event()

    def resume(self) -> None:
        self._flowing.set()

    def set_delay(self, seconds: float, *, jitter: float = 0.0) -> None:
        """Hold every chunk ``seconds`` (``seconds ± jitter``, uniformly) before forwarding
        it, each direction, never releasing one before the chunk read before it (see the
        class); ``set_delay(0)`` ends the delay for the chunks read from then on."""
        if seconds < 0 or jitter < 0:
            raise ValueError(f"delay {seconds} s, jitter {jitter} s: neither may be negative")
        self.delay = seconds
        self.jitter = jitter

    def _hold(self) -> float:
        """How long to hold the chunk just read."""
        if not self.jitter:
            return self.delay
        return max(0.0, self._random.uniform(self.delay - self.jitter, self.delay + self.jitter))

    def drop(self, on: bool = True) -> None:
        """Discard bytes in both directions (a black hole) instead of forwarding them."""
        self.dropping = on

    def refuse(self, on: bool = True) -> None:
        """Close new connections at once (the peer looks down); existing ones are untouched."""
        self.refusing = on

    # ---- forwarding ------------------------------------------------------------------------

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        self.accepted += 1
        async with client:
            if self.refusing:
                return
            try:
                upstream = await anyio.connect_tcp(self._host, self._port)
            except OSError:
                return
            async with upstream, anyio.create_task_group() as tg:
                self._pairs.add(tg.cancel_scope)
                try:
                    tg.start_soon(self._pump, client, upstream, tg.cancel_scope)
                    await self._pump(upstream, client, tg.cancel_scope)
                finally:
                    self._pairs.discard(tg.cancel_scope)

    async def _pump(
        self,
        source: anyio.abc.SocketStream,
        sink: anyio.abc.SocketStream,
        pair: anyio.CancelScope,
    ) -> None:
        """One direction: read chunks into the delay line, each stamped with when it is due
        (never before the one ahead of it); :meth:`_release` forwards them in order. When
        the source ends what is held still goes out, then the pair closes."""
        line_in, line_out = anyio.create_memory_object_stream[tuple[float, bytes]](
            DELAY_LINE_CHUNKS
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._release, line_out, sink, pair)
                async with line_in:
                    due = 0.0
                    try:
                        async for chunk in source:
                            due = max(due, anyio.current_time() + self._hold())
                            await line_in.send((due, chunk))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        pass
        finally:
            pair.cancel()  # one side ended: the pair's streams close on the way out

    async def _release(
        self,
        line: anyio.abc.ObjectReceiveStream[tuple[float, bytes]],
        sink: anyio.abc.SocketStream,
        pair: anyio.CancelScope,
    ) -> None:
        async with line:
            try:
                async for due, chunk in line:
                    await anyio.sleep_until(due)
                    await self._flowing.wait()
                    if self.dropping:
                        continue
                    await sink.send(chunk)
                    self.bytes_forwarded += len(chunk)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pair.cancel()


# ---- checkers --------------------------------------------------------------------------------


class Outcome(enum.Enum):
    OK = "ok"  # the broker acknowledged it: it must be received
    FAILED = "failed"  # refused, certainly not stored
    UNKNOWN = "unknown"  # a timeout or a cut connection: it may or may not have been stored


@attrs.frozen
class QueueResult:
    sent: dict[str, int]
    received: int
    unique_received: int
    lost: tuple[Hashable, ...]
    duplicates: int
    unexpected: tuple[Hashable, ...]  # received but never sent (ok or unknown): a bug

    @property
    def ok(self) -> bool:
        return not self.lost and not self.unexpected


class QueueChecker:
    """``record_send(key, outcome)`` for every send, ``record_receive(key)`` for every
    delivery (duplicates included), then :meth:`check`."""

    def __init__(self) -> None:
        self.outcomes: dict[Hashable, Outcome] = {}
        self.receipts: Counter[Hashable] = Counter()
        self._awaited: set[Hashable] = set()  # acknowledged, not received yet

    def record_send(self, key: Hashable, outcome: Outcome) -> None:
        self.outcomes[key] = outcome
        if outcome is Outcome.OK and not self.receipts[key]:
            self._awaited.add(key)

    def record_receive(self, key: Hashable) -> None:
        self.receipts[key] += 1
        self._awaited.discard(key)

    @property
    def unreceived(self) -> int:
        """Acknowledged sends not received yet, in O(1): what a wait loop should test after
        each receipt (:meth:`check` walks every key)."""
        return len(self._awaited)

    def check(self) -> QueueResult:
        counts = Counter(o.value for o in self.outcomes.values())
        lost = tuple(
            k for k, o in self.outcomes.items() if o is Outcome.OK and not self.receipts[k]
        )
        unexpected = tuple(
            k for k in self.receipts if self.outcomes.get(k) not in (Outcome.OK, Outcome.UNKNOWN)
        )
        total = sum(self.receipts.values())
        return QueueResult(
            sent={o.value: counts.get(o.value, 0) for o in Outcome},
            received=total,
            unique_received=len(self.receipts),
            lost=lost,
            duplicates=total - len(self.receipts),
            unexpected=unexpected,
        )


@attrs.frozen
class OrderResult:
    keys: int
    violations: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.violations


class OrderChecker:
    """Per sharding key: ``record_send(key, seq, outcome)`` in send order (``seq`` increasing),
    ``record_receive(key, seq)`` in delivery order, then :meth:`check`."""

    def __init__(self) -> None:
        self._sent: dict[Hashable, list[tuple[int, Outcome]]] = defaultdict(list)
        self._received: dict[Hashable, list[int]] = defaultdict(list)

    def record_send(self, key: Hashable, seq: int, outcome: Outcome) -> None:
        self._sent[key].append((seq, outcome))

    def record_receive(self, key: Hashable, seq: int) -> None:
        self._received[key].append(seq)

    def check(self) -> OrderResult:
        violations: list[str] = []
        for key, sent in self._sent.items():
            acked = [seq for seq, outcome in sent if outcome is Outcome.OK]
            firsts: list[int] = []
            seen: set[int] = set()
            for seq in self._received.get(key, []):
                if seq not in seen:  # a repeat of an earlier one is a redelivery: allowed
                    seen.add(seq)
                    firsts.append(seq)
            for before, after in itertools.pairwise(firsts):
                if after < before:
                    violations.append(f"{key!r}: {after} first received after {before}")
                    break
            highest = max(firsts, default=-1)
            gaps = [seq for seq in acked if seq < highest and seq not in seen]
            if gaps:
                violations.append(f"{key!r}: acknowledged {gaps[:5]} skipped (gap)")
        return OrderResult(keys=len(self._sent), violations=tuple(violations))
