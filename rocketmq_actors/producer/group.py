"""The producer's actor group: what a :class:`~rocketmq_actors.producer.Producer` runs on.

A supervisor of three actors - ``mailbox`` (the broker's requests for the group: replies,
transaction checks), ``senders`` (what ``submit`` and ``send_nowait`` admit: :mod:`.senders`)
and ``replies`` (request-reply's expiry: :mod:`.requestreply`) - and, with message trace, the
trace dispatcher, on a :class:`~rocketmq_actors.cluster.ClientInstance`. Sync sends go through
the send loop (:mod:`.sendloop`): up to ``1 + retry_times`` queues within ``send_timeout``,
each attempt within ``attempt_timeout`` when set.

``max_pending`` bounds the sends admitted at once (1024 by default; measured: 10,000 in flight
from one process made a broker on the same two cores answer SYSTEM_BUSY
"[TIMEOUT_CLEAN_QUEUE]" once its send queue waited past 1 s).

The public client is thin; this group is what its collaborators are given (request-reply takes
it as its :class:`~.requestreply.Requester`).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
import attrs

from rocketmq_actors.clientmetrics import ClientMetrics
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import MEMBER_POLICY, GroupMember
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.cluster.requests import Handler, RequestServer
from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.errors import ConfigError, ProducerBusy
from rocketmq_actors.hooks import SendContext, SendHook
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import validate_group, validate_topic, wrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.events import BrokerRequest, ReplyPushed
from rocketmq_actors.protocol.messages import Message, UniqueIdGenerator
from rocketmq_actors.protocol.sendframe import SendFrameEncoder
from rocketmq_actors.runtime.checks import check_timeout
from rocketmq_actors.runtime.netinfo import local_ipv4
from rocketmq_actors.runtime.router import Inbound
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.trace import hooks as rmq_trace
from rocketmq_actors.tracing import SendSpans, Tracing

from . import recall as recalls
from .autobatch import Batcher
from .future import FlushResult, SendFuture
from .options import ProducerOptions
from .prepare import (
    RETRY_PREFIX,
    Prepared,
    check_batch,
    check_message,
    is_plain,
    prepare,
    prepare_batch,
)
from .requestreply import ReplyTable
from .result import BatchResults, SendResult
from .selector import LatencyFaultTolerance, QueueSelector
from .senders import Senders
from .sendhooks import SendHooks
from .sendloop import ROUND_ROBIN, TEMPLATE_TOPIC, Routing, SendLoop
from .serialize import serialize, serialize_all
from .tracesend import trace_sender

__all__ = ["Admission", "ProducerGroup"]

log = get_logger("rocketmq_actors.producer")

_ROUND_ROBIN = ROUND_ROBIN


@attrs.frozen
class Admission:
    """A send that admission must wait for (``submit``), or refuse (``send_nowait``)."""

    message: Message
    prepared: Prepared
    routing: Routing
    timeout: float | None
    callback: Callable[[SendFuture], object] | None
    hooked: SendContext | None = None  # (its hooks' context: after_send is still to come)


class ProducerGroup(GroupMember):
    ready_needs_brokers = True
    #: the public client's name: the root of the tree (``tree().render()``) and the error
    #: messages name the producer with it
    public_name = "Producer"

    def __init__(
        self,
        *,
        group: str,
        namesrv: str | Sequence[str] | None,
        topics: Sequence[str],
        value_serializer: Callable[[Any], bytes] | None,
        options: ProducerOptions,
        client: ClientOptions,
        instance: ClientInstance | None,
        hooks: Sequence[SendHook] = (),
    ) -> None:
        validate_group(group)
        self.hooks = SendHooks(group, hooks)  # (a bad one: ConfigError, before anything else)
        if not isinstance(options, ProducerOptions):
            raise ConfigError(f"options must be a ProducerOptions, not {type(options).__name__}")
        if not isinstance(client, ClientOptions):
            raise ConfigError(f"client must be a ClientOptions, not {type(client).__name__}")
        if value_serializer is not None and not callable(value_serializer):
            raise ConfigError(
                f"value_serializer must be callable (value -> bytes), not "
                f"{type(value_serializer).__name__}"
            )
        if isinstance(topics, str):
            raise ConfigError("topics must be a list of topic names, not a string")
        namespace = client.namespace
        super().__init__(kind="producer", group=group, namesrv=namesrv,
                         instance=instance, client=client)  # fmt: skip
        self.options = options
        self.namespace = namespace
        self.value_serializer = value_serializer
        self._topics = [wrap(namespace, t) for t in topics]
        self._ids = UniqueIdGenerator(ip=bytes(int(p) for p in local_ipv4().split(".")))
        self.faults = LatencyFaultTolerance(enabled=options.latency_fault_tolerance)
        self._tracing = (
            Tracing(self.group, namespace=namespace, client_id=self._instance.client_id)
            if client.tracing
            else None
        )
        self.loop = SendLoop(
            self._instance,
            SendFrameEncoder(self.group, credentials=self._instance.pool.credentials),
            send_timeout=options.send_timeout, attempt_timeout=options.attempt_timeout,
            retry_times=options.retry_times, faults=self.faults,
            retry_not_stored_ok=options.retry_another_broker_when_not_store_ok,
        )  # fmt: skip
        # message trace (RMQ_SYS_TRACE_TOPIC records, as the Java client's): rocketmq_actors.trace
        self.trace = rmq_trace.for_producer(self._instance, self.group, namespace, client.trace,
                                            client.trace_topic, sender=trace_sender)  # fmt: skip
        # both are send hooks, inside the application's: OpenTelemetry's span, then the record
        inner: list[Any] = [] if self._tracing is None else [SendSpans(self._tracing)]
        if self.trace is not None:
            inner.append(self.trace)
        if client.client_metrics:  # the RocketMQ 5.x clients' metrics
            inner.append(ClientMetrics(self._instance.client_id, namespace=namespace))
        self.hooks.add_inner(inner)
        #: a send has hooks (the application's, spans or message trace): the send path's test
        self.hooking = bool(self.hooks)
        #: single sends are admitted (and joined into batches: :mod:`.autobatch`)
        self.auto_batch = options.auto_batch
        #: a plain message joins a batch by a shorter path (:meth:`_join_plain`)
        self._plain_joins = (
            options.auto_batch and not self.hooking and self.value_serializer is None
        )
        batcher: Batcher | None = None
        if options.auto_batch:
            batcher = Batcher(max_bytes=options.batch_max_bytes, max_delay=options.batch_max_delay,
                              max_size=options.max_message_size,
                              max_held=options.total_batch_max_bytes, ids=self._ids)  # fmt: skip
        self.senders = Senders(
            self.loop, name=self._describe(), max_pending=options.max_pending,
            max_pending_bytes=options.max_pending_bytes, batcher=batcher,
        )  # fmt: skip
        self._supervisor = DynamicSupervisor(
            f"producer:{self.group}", MEMBER_POLICY, shutdown_timeout=client.shutdown_timeout
        )
        self.check_concurrency = 1  # broker requests served at once (transactions: more)
        self.replies = ReplyTable(self._instance.router, self.mailbox)

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
        senders.close_batches()
        log.info("producer.stopping", group=self.group, pending=senders.pending,
                 in_flight=loop.in_flight)  # fmt: skip
        with anyio.move_on_after(self._time_left() * 0.8):
            while senders.pending or loop.in_flight:
                await senders.wait_change()
        if self.trace is not None:  # the drained sends' records (if any: no wait otherwise)
            await self.trace.dispatcher.flush(self._time_left() * 0.8)

    def _describe(self) -> str:
        return f"{self.public_name}({self.group})"

    def describe(self) -> Node:
        children = (*self._supervisor.describe().children, self._instance.describe())
        return Node(name=self._describe(), kind=self.kind, state=self.state.value,
                    last_error=repr(self.error) if self.error else None,
                    children=children)  # fmt: skip

    def check_running(self) -> None:
        """:class:`~rocketmq_actors.errors.ClientStateError` unless running."""
        self._check_running()

    def _resolve_reply(self, inbound: Inbound) -> None:
        assert isinstance(inbound.event, ReplyPushed)
        self.replies.resolve(inbound.event.message)
        inbound.reply(ResponseCode.SUCCESS)  # the broker waits for it (Broker2Client)

    def _broker_handlers(self) -> dict[type[BrokerRequest], Handler]:
        """The broker's requests this producer serves besides replies (a transaction
        producer's: transaction checks)."""
        return {}

    # ---- sending ------------------------------------------------------------------------

    def prepare(
        self, message: Message, extra: dict[str, str] | None = None, sys_flag: int = 0
    ) -> Prepared:
        """``message`` checked, serialized and encoded as it goes on the wire."""
        if self.value_serializer is not None:
            message = serialize(check_message(message), self.value_serializer)
        options = self.options
        return prepare(
            message,
            ids=self._ids,
            namespace=self.namespace,
            max_size=options.max_message_size,
            compress_threshold=options.compress_threshold,
            compress_level=options.compress_level,
            compress_type=options.compress_type,
            extra=extra,
            sys_flag=sys_flag,
        )

    def send_now(
        self,
        message: Message,
        sharding_key: str | None,
        selector: QueueSelector | None,
        arg: object,
        timeout: float | None,
    ) -> Coroutine[Any, Any, SendResult]:
        """The send loop's own coroutine for ``message`` (checked first): awaited by
        ``Producer.send`` with no frame of ours between them, on a path that runs once per
        message (benchmarks/abtest.py)."""
        prepared = self.prepare(message)
        self._check_running()
        routing = (
            _ROUND_ROBIN
            if sharding_key is None and selector is None
            else Routing(message, sharding_key, selector, arg)
        )
        return self.loop.send(prepared, routing, timeout)

    async def send_traced(
        self,
        message: Message,
        sharding_key: str | None,
        selector: QueueSelector | None,
        arg: object,
        timeout: float | None,
    ) -> SendResult:
        """``Producer.send`` with its hooks (a span and a Pub trace record among them): a
        synchronous send to them, auto-batched or not, whose ``after_send`` has run when it
        returns."""
        hooked = self.hooks.before(message, "sync", sharding_key, selector)
        message = self.hooks.message(hooked, message)  # (before_send may have replaced it)
        try:  # (both refuse bad input before they return the send)
            if self.auto_batch and sharding_key is None and selector is None:
                admitted = self.admit(message, None, None, None, timeout, None, hooks=False)
                sent = self.batched(admitted)
            else:
                sent = self.send_now(message, sharding_key, selector, arg, timeout)
        except BaseException as exc:
            self.hooks.after(hooked, None, exc)
            raise
        return await self.hooks.around(hooked, sent)

    async def batched(self, admitted: SendFuture | Admission) -> SendResult:
        """The result of an auto-batched send :meth:`admit` took (or will, once there is
        room)."""
        if isinstance(admitted, Admission):
            admitted = await self.admit_waiting(admitted)
        return await admitted

    def admit(  # noqa: PLR0917 - positional: once per message
        self,
        message: Message,
        sharding_key: str | None,
        selector: QueueSelector | None,
        arg: object,
        timeout: float | None,
        callback: Callable[[SendFuture], object] | None,
        *,
        hooks: bool = True,
    ) -> SendFuture | Admission:
        """The message admitted now: its future. Or, when it cannot be without waiting (no
        room, or an ordered send's route to look up), nothing admitted yet: the
        :class:`Admission` that :meth:`admit_waiting` completes (``submit``) or that is
        refused with :meth:`busy` (``send_nowait``). Bad input raises first. Without
        ``hooks`` the caller runs the send hooks itself (:meth:`send_traced`)."""
        if self._plain_joins and sharding_key is None and selector is None:
            joined = self._join_plain(message, timeout, callback)
            if joined is not None:
                return joined
        hooked = None
        if self.hooking and hooks:  # (after_send: from the callback, once the send has ended)
            hooked = self.hooks.before(message, "async", sharding_key, selector)
            message, callback = (
                self.hooks.message(hooked, message),
                self.hooks.ending(hooked, callback),
            )
        try:
            prepared = self.prepare(message)
            self._check_running()
            if timeout is not None:
                timeout = check_timeout("timeout", timeout)
            routing = (
                _ROUND_ROBIN
                if sharding_key is None and selector is None
                else Routing(message, sharding_key, selector, arg)
            )
            future = self.senders.admit_now(prepared, routing, timeout, callback)
        except BaseException as exc:
            self.hooks.after(hooked, None, exc)
            raise
        if future is None:
            return Admission(message, prepared, routing, timeout, callback, hooked)
        return future

    def _join_plain(
        self,
        message: Message,
        timeout: float | None,
        callback: Callable[[SendFuture], object] | None,
    ) -> SendFuture | None:
        """A plain message's future, admitted into an auto-batch without a :class:`Prepared`
        (fewer objects a message in flight: its batch holds its future); None, with nothing
        done, when it is not plain or cannot be admitted so now (:meth:`admit` goes on)."""
        options = self.options
        try:
            if not is_plain(message, options.max_message_size, options.compress_threshold):
                return None
        except AttributeError:  # not a Message: prepare() says so
            return None
        topic = message.topic
        validate_topic(topic)
        if topic.startswith(RETRY_PREFIX):  # (never batched)
            return None
        self._check_running()
        if timeout is not None:
            timeout = check_timeout("timeout", timeout)
        namespace = self.namespace
        names = (topic if namespace is None else wrap(namespace, topic), topic)
        return self.senders.join_plain(names, message.body, message.flag, timeout, callback)

    async def admit_waiting(self, admission: Admission) -> SendFuture:
        """Wait for room (and an ordered send's lane), then admit: the send's future."""
        try:
            future = await self.senders.admit(
                admission.prepared, admission.routing, admission.timeout, self._check_running,
                callback=admission.callback,
            )  # fmt: skip
        except BaseException as exc:
            self.hooks.after(admission.hooked, None, exc)
            raise
        return future

    def busy(self, admission: Admission) -> ProducerBusy:
        """The error of a ``send_nowait`` that could not be admitted (its hooks told)."""
        error = ProducerBusy(self._why_not_now(admission.prepared))
        self.hooks.after(admission.hooked, None, error)
        return error

    def _why_not_now(self, prepared: Prepared) -> str:
        """Why the senders could not admit ``prepared`` without waiting."""
        senders = self.senders
        if senders.has_room(prepared.size):
            return (
                f"{senders.name}: the queue of an ordered send to {prepared.user_topic!r} is "
                f"not known yet (its route was never looked up): submit() waits for it"
            )
        return (
            f"{senders.name}: {senders.pending} sends ({senders.pending_bytes} bytes) admitted "
            f"and not answered, max_pending={senders.max_pending}, max_pending_bytes="
            f"{senders.max_pending_bytes}: submit() waits for room"
        )

    async def flush(self, timeout: float | None) -> FlushResult:
        if timeout is not None:
            timeout = check_timeout("timeout", timeout)
        return await self.senders.flush(timeout)

    async def send_oneway(self, message: Message, routing: Routing) -> None:
        if not self.hooking:
            await self._send_oneway(message, routing)
            return
        hooked = self.hooks.before(message, "oneway", routing.sharding_key, routing.selector)
        message = self.hooks.message(hooked, message)
        await self.hooks.around(hooked, self._send_oneway(message, routing))

    async def _send_oneway(self, message: Message, routing: Routing) -> str:
        """The request written: the message's id (what ``after_send`` gets)."""
        prepared = self.prepare(message)
        self._check_running()
        await self.loop.oneway(prepared, routing)
        return prepared.msg_id

    async def send_batch(
        self, messages: Sequence[Message], timeout: float | None, routing: Routing | None = None
    ) -> BatchResults:
        if not self.hooking:
            return await self._send_batch(messages, timeout, routing)
        checked = check_batch(messages)
        key, selector = (None, None) if routing is None else (routing.sharding_key,
                                                             routing.selector)  # fmt: skip
        hooked = self.hooks.before(checked[0], "batch", key, selector, messages=checked)
        messages = self.hooks.batch(hooked, checked)
        return await self.hooks.around(hooked, self._send_batch(messages, timeout, routing))

    async def _send_batch(
        self, messages: Sequence[Message], timeout: float | None, routing: Routing | None
    ) -> BatchResults:
        if self.value_serializer is not None:
            messages = serialize_all(messages, self.value_serializer)
        chunks = prepare_batch(messages, ids=self._ids, namespace=self.namespace,
                               max_size=self.options.max_message_size)  # fmt: skip
        self._check_running()
        results = BatchResults()
        for chunk in chunks:
            results.add_chunk(
                await self.send_prepared(chunk, routing or _ROUND_ROBIN, timeout),
                chunk.batch_ids,
            )
        return results

    async def recall(self, topic: str, handle: str, timeout: float | None) -> recalls.RecallResult:
        if timeout is not None:
            timeout = check_timeout("timeout", timeout)
        recalls.decode_handle(topic, handle, self.namespace)  # (before the state: bad input)
        self._check_running()
        return await recalls.recall(
            self._instance, self.loop, self.group, topic, handle, namespace=self.namespace,
            timeout=self.options.send_timeout if timeout is None else timeout,
        )  # fmt: skip

    # ---- the send loop (:mod:`.sendloop`), for request-reply and transactions ----------

    async def send_prepared(
        self, prepared: Prepared, routing: Routing, timeout: float | None
    ) -> SendResult:
        return await self.loop.send(prepared, routing, timeout)

    async def route(self, topic: str) -> TopicRoute:
        return await self.loop.route(topic)

    def master(self, route: TopicRoute, queue: MessageQueue) -> str:
        return self.loop.master(route, queue)
