"""The producer: an actor on a ClientInstance that sends messages.

    async with Producer(namesrv="127.0.0.1:9876", group="orders") as producer:
        result = await producer.send(Message(topic="orders", body=b"...", tags="paid"))
        pending = await producer.send_nowait(msg)   # backpressure first, then a future
        await producer.send_oneway(msg)
        results = await producer.send_batch(msgs)   # cut at the size limit
        answer = await producer.request(msg, timeout=3.0)  # RPC: the reply (.requestreply)
        await producer.recall(topic, result.recall_handle)  # a timer message (.recall)
        await producer.send(msg, sharding_key="user-42")  # same key -> same queue, in order

Sync sends try up to ``1 + retry_times`` queues within ``send_timeout``, each attempt within
``attempt_timeout`` when set (:mod:`.sendloop`); ``send_nowait`` hands the message to the
senders actor (:mod:`.senders`).
The producer is a supervisor of two actors, ``mailbox`` (the broker's requests for the group:
transaction checks) and ``senders``, on a :class:`~rocketmq_actors.cluster.ClientInstance`.

``send_nowait`` admits at most ``max_pending`` sends (1024 by default; measured: 10,000 in
flight from one process made a broker on the same two cores answer SYSTEM_BUSY
"[TIMEOUT_CLEAN_QUEUE]" once its send queue waited past 1 s).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from typing import Any, cast

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import MEMBER_POLICY, GroupMember
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.cluster.requests import Handler, RequestServer
from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import validate_group, wrap
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.compression import CompressionType
from rocketmq_actors.protocol.events import BrokerRequest, ReplyMessage, ReplyPushed
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE, Message, UniqueIdGenerator
from rocketmq_actors.protocol.sendframe import SendFrameEncoder
from rocketmq_actors.runtime.checks import check_int, check_timeout
from rocketmq_actors.runtime.netinfo import local_ipv4
from rocketmq_actors.runtime.router import Inbound
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.trace import hooks as rmq_trace
from rocketmq_actors.tracing import Tracing

from . import recall as recalls
from . import requestreply
from .future import FlushResult, SendFuture
from .prepare import Prepared, check_batch, check_message, prepare, prepare_batch
from .result import BatchResults, SendResult
from .selector import LatencyFaultTolerance, QueueSelector
from .senders import Senders
from .sendloop import ROUND_ROBIN, TEMPLATE_TOPIC, Routing, SendLoop
from .serialize import serialize, serialize_all
from .tracesend import trace_sender

__all__ = ["Producer"]

log = get_logger("rocketmq_actors.producer")

_Routing = Routing  # (what TransactionProducer and older callers name it)
_ROUND_ROBIN = ROUND_ROBIN


def _compression(kind: CompressionType | str, level: int) -> CompressionType:
    """``compress_type`` as given (an enum member or its name, any case), checked with the level
    it will be used at: zlib takes 0-9, zstd 0-22 (0 is zstd's default), LZ4 ignores it."""
    try:
        kind = CompressionType(kind.lower() if isinstance(kind, str) else kind)
    except (ValueError, AttributeError):
        names = ", ".join(repr(k.value) for k in CompressionType)
        raise ConfigError(f"compress_type must be one of {names}, got {kind!r}") from None
    check_int("compress_level", level, minimum=0, maximum=22 if kind is CompressionType.ZSTD else 9)
    return kind


class Producer(GroupMember):
    ready_needs_brokers = True

    def __init__(
        self,
        *,
        namesrv: str | Sequence[str] | None = None,
        group: str = "DEFAULT_PRODUCER",
        instance: ClientInstance | None = None,
        namespace: str | None = None,
        send_timeout: float = 3.0,
        attempt_timeout: float | None = None,
        retry_times: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        compress_threshold: int = 4096,
        compress_level: int = 5,
        compress_type: CompressionType | str = CompressionType.ZLIB,
        max_message_size: int = MAX_MESSAGE_SIZE,
        max_pending: int = 1024,
        max_pending_bytes: int = 64 * 1024 * 1024,
        latency_fault_tolerance: bool = False,
        topics: Sequence[str] = (),
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
        tracing: bool = False,
        trace: bool = False,
        trace_topic: str | None = None,
        shutdown_timeout: float = 10.0,
        on_error: Callable[[BaseException], object] | None = None,
        value_serializer: Callable[[Any], bytes] | None = None,
    ) -> None:
        validate_group(group)
        if value_serializer is not None and not callable(value_serializer):
            raise ConfigError(
                f"value_serializer must be callable (value -> bytes), not "
                f"{type(value_serializer).__name__}"
            )
        super().__init__(
            kind="producer", group=wrap(namespace, group), namesrv=namesrv, instance=instance,
            client=ClientOptions(ssl_context=ssl_context, credentials=credentials,
                                 shutdown_timeout=shutdown_timeout, on_error=on_error),
        )  # fmt: skip
        send_timeout = check_timeout("send_timeout", send_timeout)
        if attempt_timeout is not None:
            attempt_timeout = check_timeout("attempt_timeout", attempt_timeout)
            if attempt_timeout > send_timeout:
                raise ConfigError(
                    f"attempt_timeout ({attempt_timeout}) must not exceed send_timeout "
                    f"({send_timeout}): it bounds one attempt of a send"
                )
        check_int("retry_times", retry_times, minimum=0)
        check_int("max_pending", max_pending)
        check_int("max_pending_bytes", max_pending_bytes)
        self.compress_type = _compression(compress_type, compress_level)
        check_int("compress_threshold", compress_threshold, minimum=0)
        check_int("max_message_size", max_message_size)
        if isinstance(topics, str):
            raise ConfigError("topics must be a list of topic names, not a string")
        self.namespace = namespace
        self.value_serializer = value_serializer
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.compress_threshold = compress_threshold
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self._topics = [wrap(namespace, t) for t in topics]
        self._ids = UniqueIdGenerator(ip=bytes(int(p) for p in local_ipv4().split(".")))
        self.faults = LatencyFaultTolerance(enabled=latency_fault_tolerance)
        self._tracing = (
            Tracing(self.group, namespace=namespace, client_id=self._instance.client_id)
            if tracing
            else None
        )
        self.loop = SendLoop(
            self._instance,
            SendFrameEncoder(self.group, credentials=self._instance.pool.credentials),
            send_timeout=send_timeout, attempt_timeout=attempt_timeout,
            retry_times=retry_times, faults=self.faults,
            retry_not_stored_ok=retry_another_broker_when_not_store_ok,
        )  # fmt: skip
        # message trace (RMQ_SYS_TRACE_TOPIC records, as the Java client's): rocketmq_actors.trace
        self.trace = rmq_trace.for_producer(
            self._instance, self.group, namespace, trace, trace_topic, sender=trace_sender
        )
        self.senders = Senders(
            self.loop, name=self._describe(), max_pending=max_pending,
            max_pending_bytes=max_pending_bytes, tracing=self._tracing,
        )  # fmt: skip
        self._supervisor = DynamicSupervisor(
            f"producer:{self.group}", MEMBER_POLICY, shutdown_timeout=shutdown_timeout
        )
        self.check_concurrency = 1  # broker requests served at once (TransactionProducer: more)
        self.replies = requestreply.ReplyTable(self._instance.router, self.mailbox)

    # ---- lifecycle ----------------------------------------------------------------------

    async def _open(self, stack: AsyncExitStack) -> None:
        await self._join(
            stack,
            lambda: self._instance.register_producer(self.group, self.mailbox),
            self._instance.unregister_producer,
        )
        stack.callback(self.senders.fail_unsent)  # after the sender tasks are gone
        supervisor = await stack.enter_async_context(self._supervisor)
        server = RequestServer(
            self.group, self.mailbox, self._broker_handlers(), concurrency=self.check_concurrency,
            inline={ReplyPushed: self._resolve_reply},  # (never behind a slow check)
        )  # fmt: skip
        await supervisor.start_child(  # (transient: it ends when the stop closes the mailbox)
            ChildSpec("mailbox", server.run, Restart.TRANSIENT, kind="mailbox")
        )
        await supervisor.start_child(
            ChildSpec("senders", self.senders.run, Restart.PERMANENT, kind="senders")
        )
        await supervisor.start_child(
            ChildSpec("replies", self.replies.run, Restart.PERMANENT, kind="reply-table")
        )
        if self.trace is not None:
            await supervisor.start_child(self.trace.dispatcher.child_spec())
        for topic in self._topics:  # know the brokers now: heartbeats can reach them
            await self._instance.routes.get(topic, template=TEMPLATE_TOPIC)
        if self._topics:
            await self._instance.heartbeat.beat()
        log.info("producer.started", group=self.group, client_id=self._instance.client_id)

    async def _closing(self) -> None:
        """Refuse new sends, then let the sends already admitted (and sync sends in flight)
        finish, within most of the stop deadline: what is still unanswered then is failed
        when the senders are cancelled."""
        senders, loop = self.senders, self.loop
        if self.trace is not None:  # the trace records so far (while the mailbox still runs)
            await self.trace.dispatcher.flush(self._time_left() * 0.4)
        self.replies.close()  # (before the mailbox: no reply is routed to a closed one)
        self.mailbox.close()
        loop.on_done = senders.changed  # the drain below hears of every send that ends
        senders.changed()  # admissions waiting for room: they see the state now
        log.info("producer.stopping", group=self.group, pending=senders.pending,
                 in_flight=loop.in_flight)  # fmt: skip
        with anyio.move_on_after(self._time_left() * 0.8):
            while senders.pending or loop.in_flight:
                await senders.wait_change()
        if self.trace is not None:  # the drained sends' records (if any: no wait otherwise)
            await self.trace.dispatcher.flush(self._time_left() * 0.8)

    def describe(self) -> Node:
        children = (*self._supervisor.describe().children, self._instance.describe())
        return Node(name=self._describe(), kind=self.kind, state=self.state.value,
                    last_error=repr(self.error) if self.error else None,
                    children=children)  # fmt: skip

    def _resolve_reply(self, inbound: Inbound) -> None:
        assert isinstance(inbound.event, ReplyPushed)
        self.replies.resolve(inbound.event.message)
        inbound.reply(ResponseCode.SUCCESS)  # the broker waits for it (Broker2Client)

    def _broker_handlers(self) -> dict[type[BrokerRequest], Handler]:
        """The broker's requests this producer serves besides replies (TransactionProducer:
        transaction checks)."""
        return {}

    # ---- sending ------------------------------------------------------------------------

    def _prepare(
        self, message: Message, extra: dict[str, str] | None = None, sys_flag: int = 0
    ) -> Prepared:
        if self.value_serializer is not None:
            message = serialize(check_message(message), self.value_serializer)
        return prepare(
            message,
            ids=self._ids,
            namespace=self.namespace,
            max_size=self.max_message_size,
            compress_threshold=self.compress_threshold,
            compress_level=self.compress_level,
            compress_type=self.compress_type,
            extra=extra,
            sys_flag=sys_flag,
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
        if self._tracing is None and self.trace is None:
            return await self._send_now(message, sharding_key, selector, arg, timeout)
        started = rmq_trace.now_ms()
        if self._tracing is not None:
            span, message = self._start_span(message, sharding_key, selector)
            try:
                result = await self._send_now(message, sharding_key, selector, arg, timeout)
            except BaseException as exc:
                self._tracing.end_send(span, None, exc)
                raise
            self._tracing.end_send(span, result, None)
        else:
            result = await self._send_now(message, sharding_key, selector, arg, timeout)
        if self.trace is not None:  # a Pub record (message trace), after the answer
            self.trace.pub(message, result, started)
        return result

    def _send_now(
        self,
        message: Message,
        sharding_key: str | None,
        selector: QueueSelector | None,
        arg: object,
        timeout: float | None,
    ) -> Coroutine[Any, Any, SendResult]:
        """The send loop's own coroutine for ``message`` (checked first): awaited by
        :meth:`send` with no frame of this method between them, on a path that runs once per
        message (benchmarks/abtest.py)."""
        prepared = self._prepare(message)
        self._check_running()
        routing = (
            _ROUND_ROBIN
            if sharding_key is None and selector is None
            else _Routing(message, sharding_key, selector, arg)
        )
        return self.loop.send(prepared, routing, timeout)

    async def send_nowait(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
        timeout: float | None = None,
        callback: Callable[[SendFuture], object] | None = None,
    ) -> SendFuture:
        """Admit the message (waiting while ``max_pending`` sends or ``max_pending_bytes`` are
        in flight), then return a future of its :class:`SendResult` without waiting for the
        broker: ``await`` it, or check ``done()`` and ``result()``; :meth:`flush` waits for
        all of them. ``callback(future)``, as the Java client's ``SendCallback``: called once,
        on the event loop soon after the send ends (sent, failed, failed by a stop, or - its
        future cancelled by a caller that gave up awaiting it - when the send ends anyway); not
        for a send refused at admission (that raises here). One that raises is logged; one that
        cannot be called is a :class:`ConfigError`."""
        span = None
        if self._tracing is not None:
            span, message = self._start_span(message, sharding_key, selector)
        try:
            prepared = self._prepare(message)
            self._check_running()
            if timeout is not None:  # (before admission: a typed error, nothing admitted)
                timeout = check_timeout("timeout", timeout)
            routing = (
                _ROUND_ROBIN
                if sharding_key is None and selector is None
                else Routing(message, sharding_key, selector, arg)
            )
            trace = self.trace
            started = 0 if trace is None else rmq_trace.now_ms()
            future = self.senders.admit_now(prepared, routing, timeout, span, callback)
            if future is None:  # (it must wait for room, or for its ordered lane)
                future = await self.senders.admit(
                    prepared, routing, timeout, span, self._check_running, callback=callback
                )
            if trace is not None:  # a Pub record when it is answered (message trace)
                trace.watch(future, message, started)
            return cast(SendFuture, future)
        except BaseException as exc:
            if span is not None and self._tracing is not None:
                self._tracing.end_send(span, None, exc)
            raise

    async def flush(self, timeout: float | None = None) -> FlushResult:
        """Wait until every ``send_nowait`` admitted before this call is resolved (sent, failed,
        or its future cancelled by a caller that gave up awaiting it), at most ``timeout``
        seconds (None: no limit), and count them. Sends admitted meanwhile are not waited for.
        Cancelling a flush cancels no send. It does not wait for the sends' callbacks."""
        if timeout is not None:
            timeout = check_timeout("timeout", timeout)
        return await self.senders.flush(timeout)

    def _start_span(
        self, message: Message, sharding_key: str | None, selector: QueueSelector | None
    ) -> tuple[Any, Message]:
        assert self._tracing is not None
        ordered = sharding_key is not None or selector is not None
        return self._tracing.start_send(
            check_message(message), ordered=ordered, message_group=sharding_key
        )

    async def send_oneway(self, message: Message, *, sharding_key: str | None = None) -> None:
        """Send without waiting for any answer (at most once: no retry, no result). It takes
        at most ``send_timeout``: a broker that stops reading makes it fail with
        :class:`~rocketmq_actors.errors.WriteTimeout` (inside :class:`SendFailed`)."""
        prepared = self._prepare(message)
        self._check_running()
        await self.loop.oneway(prepared, Routing(message, sharding_key))

    async def send_batch(
        self, messages: Sequence[Message], *, timeout: float | None = None
    ) -> BatchResults:
        """Send ``messages`` (one topic) as SEND_BATCH_MESSAGE requests, cut so that each body
        stays within the maximum message size. Returns one result per message (a sequence
        that builds them when first read)."""
        if self.value_serializer is not None:
            messages = serialize_all(messages, self.value_serializer)
        if self._tracing is not None:  # one span for the batch: tracing.py
            span, traced = self._tracing.start_batch(check_batch(messages))
            try:
                results = await self._send_batch(traced, timeout)
            except BaseException as exc:
                self._tracing.end_send(span, None, exc, batch=True)
                raise
            self._tracing.end_send(span, results[0] if results else None, None, batch=True)
            return results
        return await self._send_batch(messages, timeout)

    async def _send_batch(self, messages: Sequence[Message], timeout: float | None) -> BatchResults:
        chunks = prepare_batch(
            messages, ids=self._ids, namespace=self.namespace, max_size=self.max_message_size
        )
        self._check_running()
        results = BatchResults()
        for chunk in chunks:
            results.add_chunk(await self._send(chunk, _ROUND_ROBIN, timeout), chunk.batch_ids)
        return results

    # ---- request-reply (:mod:`.requestreply`) -------------------------------------------

    async def request(self, message: Message, timeout: float = 3.0) -> ReplyMessage:
        """Send ``message`` as a request and wait for its reply, ``timeout`` seconds in all
        (:class:`~rocketmq_actors.errors.ReplyTimeout` after that)."""
        return await requestreply.request(self, message, timeout)

    async def request_nowait(
        self, message: Message, timeout: float = 3.0
    ) -> requestreply.ReplyFuture:
        """Send ``message`` as a request (waiting for the broker to store it, as
        :meth:`send`), then return the future of its reply."""
        return await requestreply.request_nowait(self, message, timeout)

    async def reply(self, request: Any, body: bytes, *, timeout: float | None = None) -> None:
        """Send ``body`` as the reply to ``request``, a message a consumer received
        (:func:`.requestreply.reply`)."""
        self._check_running()
        await requestreply.reply(self, request, body, timeout=timeout)

    # ---- recall (:mod:`.recall`) -------------------------------------------------------

    async def recall(
        self, topic: str, handle: str, *, timeout: float | None = None
    ) -> recalls.RecallResult:
        """Recall a timer message before its delivery time with its ``SendResult.recall_handle``
        (RECALL_MESSAGE, a 5.3.2+ broker with ``recallMessageEnable=true``), within ``timeout``
        (``send_timeout`` if None). Typed errors: :mod:`.recall`."""
        if timeout is not None:
            timeout = check_timeout("timeout", timeout)
        recalls.decode_handle(topic, handle, self.namespace)  # (before the state: bad input)
        self._check_running()
        return await recalls.recall(
            self._instance, self.loop, self.group, topic, handle, namespace=self.namespace,
            timeout=self.send_timeout if timeout is None else timeout,
        )  # fmt: skip

    # ---- the send loop (:mod:`.sendloop`) ----------------------------------------------

    async def _send(
        self, prepared: Prepared, routing: Routing, timeout: float | None
    ) -> SendResult:
        return await self.loop.send(prepared, routing, timeout)

    async def _route(self, topic: str) -> TopicRoute:
        return await self.loop.route(topic)

    def _master(self, route: TopicRoute, queue: MessageQueue) -> str:
        return self.loop.master(route, queue)
