"""Blocking facade: the async client from synchronous code (scripts, Spark tasks, notebooks).

    with BlockingProducer(group="jobs", namesrv="127.0.0.1:9876") as producer:
        producer.send(Message(topic="orders", body=b"..."))
        summary = producer.send_many((Message(topic="orders", body=b), None) for b in bodies)

The producer and its connections live in an event loop on a portal thread of its own (anyio's
blocking portal), so this works where the calling thread already runs an event loop (Jupyter)
- but not from inside that portal's loop. ``close()`` (or leaving ``with``) stops it; producers
still open when the interpreter exits are closed by an ``atexit`` hook.

``send_many`` streams messages with bounded memory: the calling thread cuts them into chunks of
``chunk_size``; at most ``max_chunks`` chunks are in flight in the loop (each sends its messages
concurrently), and results come back in order. Failures are counted, never raised.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from functools import partial
from types import TracebackType
from typing import Any, Self

import anyio
import attrs
from anyio.from_thread import BlockingPortal, start_blocking_portal

from rocketmq_actors.cluster.health import Health
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import ClientClosed, RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.producer import Message, Producer, ProducerOptions
from rocketmq_actors.producer.result import BatchResults, SendResult
from rocketmq_actors.producer.selector import QueueSelector

__all__ = ["BlockingProducer", "SendSummary"]

log = get_logger("rocketmq_actors.blocking")

Item = tuple[Message, str | QueueSelector | None]  # a message and its sharding key or selector
Outcome = SendResult | Exception


@attrs.define
class SendSummary:
    """What :meth:`BlockingProducer.send_many` did. ``errors`` keeps the first
    ``max_errors`` failures as ``"<keys>: <error>"``."""

    sent: int = 0
    failed: int = 0
    errors: list[str] = attrs.field(factory=list)
    seconds: float = 0.0
    max_errors: int = 100

    def fail(self, what: str, error: BaseException | str) -> None:
        self.failed += 1
        if len(self.errors) < self.max_errors:
            self.errors.append(f"{what}: {error}")

    def merge(self, other: SendSummary) -> None:
        self.sent += other.sent
        self.failed += other.failed
        self.errors.extend(other.errors[: max(0, self.max_errors - len(self.errors))])

    @property
    def messages_per_second(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0


_open: weakref.WeakSet[BlockingProducer] = weakref.WeakSet()
_open_lock = threading.Lock()


@atexit.register
def _close_all() -> None:
    with _open_lock:
        still_open = list(_open)
    for producer in still_open:
        producer.close()


def _routing(key: str | QueueSelector | None) -> dict[str, Any]:
    return {"sharding_key": key} if key is None or isinstance(key, str) else {"selector": key}


class BlockingProducer:
    """A :class:`~rocketmq_actors.producer.Producer` for synchronous code, started when built:
    ``with BlockingProducer(...) as producer:`` or ``close()``. It takes the producer's
    arguments but ``instance`` (its client instance lives in its own loop thread)."""

    def __init__(
        self,
        *,
        group: str = "DEFAULT_PRODUCER",
        namesrv: str | Sequence[str] | None = None,
        topics: Sequence[str] = (),
        value_serializer: Callable[[Any], bytes] | None = None,
        options: ProducerOptions = ProducerOptions(),
        client: ClientOptions = ClientOptions(),
    ) -> None:
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal("asyncio")
        self._portal = self._portal_cm.__enter__()
        try:
            # built in the loop thread: its anyio primitives belong to that loop
            self.producer: Producer = self._portal.call(
                partial(Producer, group=group, namesrv=namesrv, topics=topics,
                        value_serializer=value_serializer, options=options, client=client)
            )  # fmt: skip
            self._running = self._portal.wrap_async_context_manager(self.producer)
            self._running.__enter__()
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise
        self._closed = False
        with _open_lock:
            _open.add(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Wait for the sends in flight, stop the producer and its loop thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        with _open_lock:
            _open.discard(self)
        try:
            self._running.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def _check(self) -> None:
        if self._closed:
            raise ClientClosed("this BlockingProducer is closed")

    def send(self, message: Message, *, sharding_key: str | None = None) -> SendResult:
        """The producer's ``send``: the broker's answer, or its error."""
        self._check()
        return self._portal.call(partial(self.producer.send, message, sharding_key=sharding_key))

    def send_batch(self, messages: list[Message]) -> BatchResults:
        """The producer's ``send_batch``: one result per message."""
        self._check()
        return self._portal.call(self.producer.send_batch, messages)

    def health(self) -> Health:
        """The producer's :meth:`~rocketmq_actors.producer.Producer.health` (read in its loop
        thread)."""
        if self._closed:
            return self.producer.health()  # (the loop thread is gone; the state is final)
        return self._portal.call(self.producer.health)

    @property
    def ready(self) -> bool:
        """The producer's ``ready``."""
        return self.health().ready

    def send_oneway(self, message: Message) -> None:
        """The producer's ``send_oneway``: no answer, no retry."""
        self._check()
        self._portal.call(self.producer.send_oneway, message)

    async def _send_chunk(self, items: list[Item], batch_size: int) -> list[Outcome]:
        """Send one chunk: runs of up to ``batch_size`` un-keyed messages of one topic as
        SEND_BATCH_MESSAGE requests (all at once), keyed messages one by one through
        submit (in order per queue)."""
        outcomes: list[Any] = [None] * len(items)

        async def batch(start: int, messages: list[Message]) -> None:
            try:
                results: Sequence[Any] = await self.producer.send_batch(messages)
            except ValueError:  # a message the broker would refuse: find it, send the rest
                results = [await self._one(m, None) for m in messages]
            except RocketMQError as exc:
                results = [exc] * len(messages)
            outcomes[start : start + len(messages)] = results

        futures: list[tuple[int, Any]] = []
        async with anyio.create_task_group() as tg:
            run: list[Message] = []
            run_start = 0
            for index, (message, key) in enumerate(items):
                if run and (key is not None or message.topic != run[0].topic
                            or len(run) >= batch_size):  # fmt: skip
                    tg.start_soon(batch, run_start, run)
                    run = []
                if key is None and batch_size > 1 and self._batchable(message):
                    if not run:
                        run_start = index
                    run.append(message)
                    continue
                try:
                    futures.append((index, await self.producer.submit(message, **_routing(key))))
                except (RocketMQError, ValueError) as exc:  # ValueError: InvalidMessage
                    outcomes[index] = exc
            if run:
                tg.start_soon(batch, run_start, run)
            for index, future in futures:
                try:
                    outcomes[index] = await future
                except RocketMQError as exc:
                    outcomes[index] = exc
        return outcomes

    def _batchable(self, message: Message) -> bool:
        """A delayed message cannot go in a batch, and a batch is not compressed (Java's
        ``MessageBatch`` neither): such a message goes alone."""
        threshold, body = self.producer.options.compress_threshold, message.body
        return not (
            message.delay_level
            or message.deliver_at_ms is not None
            or message.delay_ms is not None
            or (threshold and isinstance(body, bytes | bytearray) and len(body) >= threshold)
        )

    async def _one(self, message: Message, key: str | None) -> Outcome:
        try:
            return await self.producer.send(message, sharding_key=key)
        except (RocketMQError, ValueError) as exc:
            return exc

    def send_many(
        self,
        items: Iterable[Item],
        *,
        chunk_size: int = 128,
        max_chunks: int = 4,
        batch_size: int = 32,
        progress: Callable[[SendSummary], None] | None = None,
        progress_every: int = 10_000,
    ) -> SendSummary:
        """Send ``(message, sharding_key)`` pairs (or ``(message, queue selector)``), at most
        ``chunk_size * max_chunks`` in flight; un-keyed messages go in batches of up to
        ``batch_size`` (1: one by one; delayed and compressed ones alone). ``progress`` is
        called about every ``progress_every`` messages, and at the end."""
        self._check()
        if chunk_size < 1 or max_chunks < 1 or batch_size < 1:
            raise ValueError("chunk_size, max_chunks and batch_size must be >= 1")
        summary = SendSummary()
        began = time.perf_counter()
        in_flight: deque[tuple[list[Item], Future[list[Outcome]]]] = deque()
        next_report = progress_every

        def settle_oldest() -> None:
            nonlocal next_report
            chunk, future = in_flight.popleft()
            for (message, _), outcome in zip(chunk, future.result(), strict=True):
                if isinstance(outcome, Exception):
                    summary.fail(",".join(message.keys) or message.topic, repr(outcome))
                else:
                    summary.sent += 1
            if progress is not None and summary.sent + summary.failed >= next_report:
                next_report += progress_every
                progress(summary)

        start = self._portal.start_task_soon
        chunk: list[Item] = []
        for item in items:
            chunk.append(item)
            if len(chunk) >= chunk_size:
                if len(in_flight) >= max_chunks:
                    settle_oldest()
                in_flight.append((chunk, start(self._send_chunk, chunk, batch_size)))
                chunk = []
        if chunk:
            in_flight.append((chunk, start(self._send_chunk, chunk, batch_size)))
        while in_flight:
            settle_oldest()
        summary.seconds = time.perf_counter() - began
        if progress is not None:
            progress(summary)  # and once at the end
        log.info("blocking.send_many_done", sent=summary.sent, failed=summary.failed,
                 seconds=round(summary.seconds, 3))  # fmt: skip
        return summary
