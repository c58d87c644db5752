"""The producer: an actor on a ClientInstance that sends messages.

    async with Producer(namesrv="127.0.0.1:9876", group="orders") as producer:
        result = await producer.send(Message(topic="orders", body=b"...", tags="paid"))
        pending = await producer.send_nowait(msg)   # backpressure first, then a future
        await producer.send_oneway(msg)
        results = await producer.send_batch(msgs)   # cut at the size limit
        await producer.send(msg, sharding_key="user-42")  # same key -> same queue, in order

Sync sends try up to ``1 + retry_times`` queues, each on another broker than the last failure,
all within ``send_timeout``. Ordered sends (a sharding key or selector) never switch queue.
Every failure is a :class:`~rocketmq_actors.errors.SendFailed` that says whether the message was
definitely not stored or the outcome is unknown.

``send_nowait`` admits at most ``max_pending`` sends (1024 by default; measured: 10,000 in
flight from one process made a broker on the same two cores answer SYSTEM_BUSY
"[TIMEOUT_CLEAN_QUEUE]" once its send queue waited past 1 s).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
import attrs
from anyio.abc import TaskGroup

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import GroupMember
from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.errors import (
    BrokerError,
    ClientClosed,
    ConfigError,
    InternalError,
    RequestTimeout,
    RocketMQError,
    SendFailed,
    broker_error,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import METRICS, SeriesKeys
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE, Message, UniqueIdGenerator
from rocketmq_actors.protocol.sendframe import SendFrameEncoder
from rocketmq_actors.runtime.checks import check_int, check_timeout
from rocketmq_actors.runtime.netinfo import local_ipv4
from rocketmq_actors.runtime.router import Inbound
from rocketmq_actors.runtime.waiters import Waiter, wait_done, waiter_factory
from rocketmq_actors.runtime.workqueue import WorkQueue
from rocketmq_actors.tracing import Tracing

from .prepare import Prepared, prepare, prepare_batch, validate_group, wrap
from .result import BatchResults, SendResult, SendStatus, new_send_result
from .selector import LatencyFaultTolerance, QueueSelector, RoundRobin, select_by_key

__all__ = ["Producer"]

log = get_logger("rocketmq_actors.producer")

TEMPLATE_TOPIC = "TBW102"


SENDERS = 256  # sender tasks of send_nowait (fewer if max_pending is lower)


@attrs.define(slots=True)
class _Queued:
    future: Waiter
    prepared: Prepared
    routing: _Routing
    timeout: float | None
    lane: MessageQueue | None
    previous: Waiter | None
    span: Any = None  # tracing: the send span, ended when the send is


@attrs.frozen
class _Routing:
    """How to pick the queue: round robin (no key, no selector), by key, or by selector."""

    message: Message | None = None
    sharding_key: str | None = None
    selector: QueueSelector | None = None
    arg: object = None

    @property
    def ordered(self) -> bool:
        return self.sharding_key is not None or self.selector is not None


_ROUND_ROBIN = _Routing()
# answers meaning "this topic does not look like your (guessed) route says"
_STALE_GUESS = frozenset({ResponseCode.INVALID_PARAMETER, ResponseCode.TOPIC_NOT_EXIST})


class Producer(GroupMember):
    def __init__(
        self,
        *,
        namesrv: str | Sequence[str] | None = None,
        group: str = "DEFAULT_PRODUCER",
        instance: ClientInstance | None = None,
        namespace: str | None = None,
        send_timeout: float = 3.0,
        retry_times: int = 2,
        compress_threshold: int = 4096,
        compress_level: int = 5,
        max_message_size: int = MAX_MESSAGE_SIZE,
        max_pending: int = 1024,
        max_pending_bytes: int = 64 * 1024 * 1024,
        latency_fault_tolerance: bool = False,
        topics: Sequence[str] = (),
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
        tracing: bool = False,
        shutdown_timeout: float = 10.0,
    ) -> None:
        validate_group(group)
        super().__init__(
            kind="producer", group=wrap(namespace, group), namesrv=namesrv, instance=instance,
            ssl_context=ssl_context, credentials=credentials, shutdown_timeout=shutdown_timeout,
        )  # fmt: skip
        send_timeout = check_timeout("send_timeout", send_timeout)
        check_int("retry_times", retry_times, minimum=0)
        check_int("max_pending", max_pending)
        check_int("max_pending_bytes", max_pending_bytes)
        check_int("compress_level", compress_level, minimum=0, maximum=9)
        check_int("compress_threshold", compress_threshold, minimum=0)
        check_int("max_message_size", max_message_size)
        if isinstance(topics, str):
            raise ConfigError("topics must be a list of topic names, not a string")
        self.namespace = namespace
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.compress_threshold = compress_threshold
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self._topics = [wrap(namespace, t) for t in topics]
        self._ids = UniqueIdGenerator(ip=bytes(int(p) for p in local_ipv4().split(".")))
        self._encoder = SendFrameEncoder(self.group, credentials=self._instance.pool.credentials)
        self.faults = LatencyFaultTolerance(enabled=latency_fault_tolerance)
        self._round_robin = RoundRobin(self.faults)
        self._max_pending = max_pending
        self._max_pending_bytes = max_pending_bytes
        self._pending = 0
        self._pending_bytes = 0
        self._pending_changed = anyio.Event()
        self._sync_sends = 0  # send(), send_batch() and the senders' sends in flight
        self._stopping = False
        self._lanes: dict[MessageQueue, Waiter] = {}  # ordered sends: the last one per queue
        self._outbox: WorkQueue[_Queued] | None = None
        self._tg: TaskGroup | None = None
        self._tracing = Tracing(self.group) if tracing else None
        self._ok_series = SeriesKeys(  # topic -> (sends ok, send seconds)
            lambda topic: (
                METRICS.key("rocketmq_send_total", topic=topic, result="ok"),
                METRICS.key("rocketmq_send_seconds", topic=topic),
            )
        )

    # ---- lifecycle ----------------------------------------------------------------------

    async def _open(self, stack: AsyncExitStack) -> None:
        await self._join(
            stack,
            lambda: self._instance.register_producer(self.group, self.mailbox),
            self._instance.unregister_producer,
        )
        # send_nowait: a fixed pool of sender tasks (a task per message costs more than the
        # send itself); at most max_pending messages wait or fly
        self._outbox = outbox = WorkQueue[_Queued](self._max_pending)
        stack.callback(self._fail_unsent, outbox)  # after the senders are gone
        self._tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(self._tg.cancel_scope.cancel)
        self._tg.start_soon(self._serve_mailbox)
        for _ in range(min(self._max_pending, SENDERS)):
            self._tg.start_soon(self._sender, outbox)
        for topic in self._topics:  # know the brokers now: heartbeats can reach them
            await self._instance.routes.get(topic, template=TEMPLATE_TOPIC)
        if self._topics:
            await self._instance.heartbeat.beat()
        log.info("producer.started", group=self.group, client_id=self._instance.client_id)

    async def _closing(self) -> None:
        """Refuse new sends, then let the sends already admitted (and sync sends in flight)
        finish, within most of the stop deadline: what is still unanswered then is failed
        when the senders are cancelled."""
        self._stopping = True
        self.mailbox.close()
        self._pending_changed.set()  # admissions waiting for room: they see the state now
        log.info("producer.stopping", group=self.group, pending=self._pending,
                 in_flight=self._sync_sends)  # fmt: skip
        with anyio.move_on_after(self._time_left() * 0.8):
            while self._pending or self._sync_sends:
                await self._wait_pending_change()

    def _fail_unsent(self, outbox: WorkQueue[_Queued]) -> None:
        """Once the senders are gone: fail what they never took (it was never written)."""
        outbox.close()
        for item in outbox.take_all():
            self._release(item, written=False)

    def _release(self, item: _Queued, *, written: bool) -> None:
        """Release an item's admission; fail its future if it is not resolved yet (the
        producer stopped: ``written`` says whether the broker may have the message)."""
        if not item.future.done():
            error = ClientClosed(f"{self._describe()} stopped before the send completed")
            error.outcome_unknown = written
            item.future.set_exception(SendFailed(item.prepared.user_topic, [error]))
        self._pending -= 1
        self._pending_bytes -= item.prepared.size
        if item.lane is not None and self._lanes.get(item.lane) is item.future:
            del self._lanes[item.lane]
        if item.span is not None:
            self._end_span(item)

    async def _wait_pending_change(self) -> None:
        if self._pending_changed.is_set():
            self._pending_changed = anyio.Event()
        await self._pending_changed.wait()

    async def _serve_mailbox(self) -> None:
        async for inbound in self.mailbox:
            await self.on_broker_request(inbound)

    async def on_broker_request(self, inbound: Inbound) -> None:
        """Broker requests for this group (transaction checks); a plain producer has none to
        answer. :class:`TransactionProducer` overrides this."""
        log.warning("producer.unexpected_request", code=inbound.command.code, group=self.group)

    # ---- sending ------------------------------------------------------------------------

    def _prepare(self, message: Message, **kwargs: Any) -> Prepared:
        return prepare(
            message,
            ids=self._ids,
            namespace=self.namespace,
            max_size=self.max_message_size,
            compress_threshold=self.compress_threshold,
            compress_level=self.compress_level,
            **kwargs,
        )

    async def send(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send and wait for the broker's answer. With ``sharding_key`` (or ``selector`` and
        ``arg``) the queue is chosen by the key: same key, same queue, in order."""
        if self._tracing is not None:
            span, message = self._start_span(message, sharding_key, selector)
            try:
                result = await self._send_now(message, sharding_key, selector, arg, timeout)
            except BaseException as exc:
                self._tracing.end_send(span, None, exc)
                raise
            self._tracing.end_send(span, result.msg_id, None)
            return result
        return await self._send_now(message, sharding_key, selector, arg, timeout)

    async def _send_now(
        self,
        message: Message,
        sharding_key: str | None,
        selector: QueueSelector | None,
        arg: object,
        timeout: float | None,
    ) -> SendResult:
        prepared = self._prepare(message)
        self._check_running()
        routing = (
            _ROUND_ROBIN
            if sharding_key is None and selector is None
            else _Routing(message, sharding_key, selector, arg)
        )
        return await self._send(prepared, routing, timeout)

    async def send_nowait(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
        timeout: float | None = None,
    ) -> Waiter:
        """Admit the message (waiting while ``max_pending`` sends or ``max_pending_bytes`` are
        in flight), then return a future of its :class:`SendResult` without waiting for the
        broker: ``await`` it, or check ``done()`` and ``result()``."""
        span = None
        if self._tracing is not None:
            span, message = self._start_span(message, sharding_key, selector)
        try:
            return await self._admit(message, sharding_key=sharding_key, selector=selector,
                                     arg=arg, timeout=timeout, span=span)  # fmt: skip
        except BaseException as exc:
            if span is not None and self._tracing is not None:
                self._tracing.end_send(span, None, exc)
            raise

    async def _admit(
        self,
        message: Message,
        *,
        sharding_key: str | None,
        selector: QueueSelector | None,
        arg: object,
        timeout: float | None,
        span: Any,
    ) -> Waiter:
        prepared = self._prepare(message)
        self._check_running()
        while self._pending >= self._max_pending or (
            self._pending and self._pending_bytes + prepared.size > self._max_pending_bytes
        ):
            await self._wait_pending_change()
            self._check_running()  # stopped while it waited for room
        routing = _Routing(message, sharding_key, selector, arg)
        lane = await self._lane_of(prepared.topic, routing) if routing.ordered else None
        new_future, _ = waiter_factory()
        future = new_future()
        self._pending += 1
        self._pending_bytes += prepared.size
        previous = None
        if lane is not None:  # ordered: after the previous send to the same queue completed
            previous = self._lanes.get(lane)
            self._lanes[lane] = future
        assert self._outbox is not None
        await self._outbox.put(_Queued(future, prepared, routing, timeout, lane, previous, span))
        return future

    async def _lane_of(self, topic: str, routing: _Routing) -> MessageQueue | None:
        """The queue an ordered message goes to. A broker stores concurrent sends of one
        connection in any order (5.x runs several send threads), so ordered sends to one queue
        go one at a time - as the Java client's synchronous ordered send does."""
        try:
            route = self._instance.routes.cached(topic) or await self._route(topic)
            return self._choose(route, routing, None)
        except RocketMQError:
            return None  # the send itself reports it

    async def _sender(self, outbox: WorkQueue[_Queued]) -> None:
        """Sends what send_nowait queued. An ordered message waits for the one before it in
        its lane; that one was queued earlier, so another sender already holds it: no
        deadlock, whatever the number of senders. Whatever happens to one send (a failure, a
        bug, the producer stopping), its future is resolved and the sender goes on."""
        while True:
            try:
                item = await outbox.get()
            except anyio.EndOfStream:
                return
            try:
                if item.previous is not None:
                    await wait_done(item.previous)  # its own caller hears about a failure
                await self._send_into(item)
            except BaseException:  # cancelled: the producer is stopping
                self._release(item, written=True)
                raise
            self._release(item, written=True)  # (it is resolved: only its admission is released)

    def _start_span(
        self, message: Message, sharding_key: str | None, selector: QueueSelector | None
    ) -> tuple[Any, Message]:
        assert self._tracing is not None
        ordered = sharding_key is not None or selector is not None
        return self._tracing.start_send(message, ordered=ordered)

    def _end_span(self, item: _Queued) -> None:
        assert self._tracing is not None
        if not item.future.done():  # cancelled on the way: closing
            self._tracing.end_send(item.span, None, anyio.get_cancelled_exc_class()())
            return
        try:
            result = item.future.result()
        except Exception as exc:
            self._tracing.end_send(item.span, None, exc)
        else:
            self._tracing.end_send(item.span, result.msg_id, None)

    async def _send_into(self, item: _Queued) -> None:
        future, prepared = item.future, item.prepared
        try:
            future.set_result(await self._send(prepared, item.routing, item.timeout))
        except RocketMQError as exc:
            future.set_exception(exc)
        except Exception as exc:  # a bug: it fails this send, never the producer
            log.error("producer.send_internal_error", topic=prepared.user_topic,
                      exc_info=exc)  # fmt: skip
            internal = InternalError(f"unexpected error in send: {exc!r}")
            internal.__cause__ = exc
            future.set_exception(SendFailed(prepared.user_topic, [internal]))
        finally:
            self._pending_changed.set()

    async def send_oneway(self, message: Message, *, sharding_key: str | None = None) -> None:
        """Send without waiting for any answer (at most once: no retry, no result)."""
        prepared = self._prepare(message)
        self._check_running()
        route = await self._route(prepared.topic)
        queue = self._choose(route, _Routing(message, sharding_key), None)
        addr = self._master(route, queue)
        conn = await self._instance.pool.get(addr)
        born = time.time_ns() // 1_000_000

        def encode(opaque: int) -> bytes:
            return self._encoder.encode(
                opaque, prepared.topic, queue.queue_id, prepared.body, born,
                prepared.properties, queue.broker_name, sys_flag=prepared.sys_flag,
                flag=prepared.flag, oneway=True,
            )  # fmt: skip

        await conn.oneway_encoded(encode, prepared.size)

    async def send_batch(
        self, messages: Sequence[Message], *, timeout: float | None = None
    ) -> BatchResults:
        """Send ``messages`` (one topic) as SEND_BATCH_MESSAGE requests, cut so that each body
        stays within the maximum message size. Returns one result per message (a sequence
        that builds them when first read)."""
        chunks = prepare_batch(
            messages, ids=self._ids, namespace=self.namespace, max_size=self.max_message_size
        )
        self._check_running()
        results = BatchResults()
        for chunk in chunks:
            results.add_chunk(await self._send(chunk, _ROUND_ROBIN, timeout), chunk.batch_ids)
        return results

    # ---- the send loop ----------------------------------------------------------------

    async def _route(self, topic: str) -> TopicRoute:
        return await self._instance.routes.get(topic, template=TEMPLATE_TOPIC)

    def _choose(self, route: TopicRoute, routing: _Routing, avoid: str | None) -> MessageQueue:
        queues = route.publish_queues
        if not queues:
            raise SendFailed(route.topic, [BrokerError("-", 17, "no writable queue in route")])
        if routing.message is not None and routing.sharding_key is not None:
            return select_by_key(queues, routing.message, routing.sharding_key)
        if routing.message is not None and routing.selector is not None:
            return routing.selector(queues, routing.message, routing.arg)
        return self._round_robin.choose(queues, avoid)

    @staticmethod
    def _master(route: TopicRoute, queue: MessageQueue) -> str:
        addr = route.master_addr(queue.broker_name)
        if addr is None:
            raise SendFailed(
                route.topic, [BrokerError(queue.broker_name, 14, "the broker has no master")]
            )
        return addr

    async def _send(
        self, prepared: Prepared, routing: _Routing, timeout: float | None
    ) -> SendResult:
        self._sync_sends += 1
        try:
            timeout = timeout or self.send_timeout
            deadline = time.monotonic() + timeout
            ordered = routing.ordered
            attempts: list[RocketMQError] = []
            avoid: str | None = None
            batch = bool(prepared.batch_ids)
            code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
            for _ in range(1 if ordered else 1 + self.retry_times):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    # the hot path: a cached route without even a coroutine
                    route = self._instance.routes.cached(prepared.topic) or await self._route(
                        prepared.topic
                    )
                except RocketMQError as exc:
                    attempts.append(exc)
                    if not exc.retriable:
                        break
                    continue
                queue = self._choose(route, routing, avoid)
                broker = queue.broker_name
                born = time.time_ns() // 1_000_000
                started = time.monotonic()

                def encode(opaque: int, queue: MessageQueue = queue, born: int = born) -> bytes:
                    return self._encoder.encode(
                        opaque, prepared.topic, queue.queue_id, prepared.body, born,
                        prepared.properties, queue.broker_name, sys_flag=prepared.sys_flag,
                        flag=prepared.flag, batch=batch,
                    )  # fmt: skip

                try:
                    addr = self._master(route, queue)
                    conn = self._instance.pool.registry.lookup(addr)
                    if conn is None or not conn.is_open:
                        conn = await self._instance.pool.get(addr)
                    reply = await conn.request_encoded(code, encode, remaining, prepared.size)
                except SendFailed:
                    METRICS.inc("rocketmq_send_total", topic=prepared.user_topic, result="failed")
                    raise
                except RocketMQError as exc:
                    self.faults.record(broker, 0, failed=True)
                    attempts.append(exc)
                    avoid = broker
                    METRICS.inc("rocketmq_send_retries_total", topic=prepared.user_topic)
                    log.info("producer.send.retry", topic=prepared.topic, broker=broker,
                             error=str(exc))  # fmt: skip
                    continue
                status = SendStatus.from_code(reply.code)
                if status is None:
                    error = broker_error(addr, reply.code, reply.remark)
                    attempts.append(error)
                    if route.auto_created and reply.code in _STALE_GUESS:
                        # the route was a guess from the template topic, and the topic has since
                        # been created with other queues: look again and retry
                        await self._instance.routes.refresh(prepared.topic)
                        continue
                    self.faults.record(broker, 0, failed=True)
                    if not error.retriable:
                        break
                    avoid = broker
                    continue
                if self.faults.enabled:
                    self.faults.record(broker, (time.monotonic() - started) * 1000)
                ext = reply.ext_fields
                try:  # the hot path: read the four fields directly (SendMessageResponseHeader)
                    queue_id = int(ext["queueId"])
                    if queue.queue_id != queue_id or queue.topic != prepared.user_topic:
                        queue = MessageQueue(prepared.user_topic, broker, queue_id)
                    result = new_send_result(
                        status, prepared.msg_id, ext["msgId"], queue, int(ext["queueOffset"]),
                        ext.get("transactionId"), ext.get("MSG_REGION"),
                    )  # fmt: skip
                except (KeyError, ValueError) as exc:
                    METRICS.inc("rocketmq_send_total", topic=prepared.user_topic, result="failed")
                    raise SendFailed(
                        prepared.user_topic,
                        [BrokerError(addr, reply.code, f"malformed send response: {exc!r}")],
                    ) from None
                series = self._ok_series.get(prepared.user_topic) or self._ok_series.add(
                    prepared.user_topic
                )
                METRICS.count_and_observe(*series, time.monotonic() - started)
                return result
            if not attempts:  # the deadline passed before any attempt could start
                attempts.append(RequestTimeout("-", code, timeout))
            METRICS.inc("rocketmq_send_total", topic=prepared.user_topic, result="failed")
            raise SendFailed(prepared.user_topic, attempts) from attempts[-1]
        finally:
            self._sync_sends -= 1
            if self._stopping:
                self._pending_changed.set()  # a stop is waiting for sends in flight
