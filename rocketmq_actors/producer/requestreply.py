"""Request-reply (RPC over RocketMQ), as the Java client's ``DefaultMQProducer.request``.

    # the requester
    reply = await producer.request(Message(topic="rpc", body=b"ping"), timeout=3.0)
    future = await producer.submit_request(message, timeout=3.0)   # sent; the reply later

    # the responder, in a consumer's handler (any started producer or consumer sends it)
    async def handle(message: ReceivedMessage) -> None:
        await reply(consumer, message, b"pong")

The requester sends an ordinary message carrying CORRELATION_ID (a fresh UUID),
REPLY_TO_CLIENT (its client id) and TTL (the timeout in ms) (Java
``DefaultMQProducerImpl.prepareSendRequest``); the broker adds CLUSTER. The responder sends
the reply with SEND_REPLY_MESSAGE_V2 (325) to ``<CLUSTER>_REPLY_TOPIC`` (a topic every broker
creates for its cluster: ``TopicConfigManager``) with MSG_TYPE=reply and the request's
CORRELATION_ID, REPLY_TO_CLIENT and TTL (``MessageUtil.createReplyMessage``). The broker
(``ReplyMessageProcessor``) pushes it to the requesting client - the channel that heartbeats
as REPLY_TO_CLIENT - with PUSH_REPLY_MESSAGE_TO_CLIENT (326).

A 326 is decoded into :class:`~rocketmq_actors.protocol.events.ReplyPushed` and routed, under
its correlation id, to the mailbox of the producer whose :class:`ReplyTable` registered it;
the producer's mailbox actor resolves the request's future. The table's expiry actor (a
supervised child of the producer) fails a request with no reply by its deadline with
:class:`~rocketmq_actors.errors.ReplyTimeout` and frees its entry; stopping the producer fails
the rest with :class:`~rocketmq_actors.errors.ClientClosed`. A reply that comes after its
entry was freed is answered SUCCESS by the router and dropped, as the Java client does: the
responder's send of it succeeds.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Generator, Mapping
from typing import Any, Protocol, cast

import anyio
import attrs
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import ClientClosed, InvalidMessage, ReplyTimeout, broker_error
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.events import ReplyMessage
from rocketmq_actors.protocol.headers import SendMessageRequestHeader
from rocketmq_actors.protocol.messages import (
    RESERVED_PROPERTIES,
    Message,
    Property,
    encode_properties,
)
from rocketmq_actors.runtime.checks import check_timeout
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import REPLY_EVENTS, Inbound, Router
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.runtime.waiters import Waiter, waiter_factory

from .prepare import Prepared
from .result import SendResult
from .sendloop import TEMPLATE_TOPIC, Routing

__all__ = [
    "REPLY_MESSAGE_FLAG",
    "ReplyFuture",
    "ReplyTable",
    "Requester",
    "reply",
    "reply_properties",
    "reply_topic",
    "request",
    "request_properties",
    "send_request",
    "submit_request",
]

log = get_logger("rocketmq_actors.producer")

#: MSG_TYPE of a reply (Java ``MixAll.REPLY_MESSAGE_FLAG``)
REPLY_MESSAGE_FLAG = "reply"


class ReplyFuture(Protocol):
    """The future ``submit_request`` returns: ``await`` it for the :class:`ReplyMessage` (or
    :class:`~rocketmq_actors.errors.ReplyTimeout`), or poll ``done()`` / ``result()``."""

    def done(self) -> bool: ...
    def cancelled(self) -> bool: ...
    def result(self) -> ReplyMessage: ...
    def exception(self) -> BaseException | None: ...
    def __await__(self) -> Generator[Any, None, ReplyMessage]: ...


def reply_topic(cluster: str) -> str:
    """Java ``MixAll.getReplyTopic``."""
    return f"{cluster}_REPLY_TOPIC"


def request_properties(correlation_id: str, client_id: str, timeout: float) -> dict[str, str]:
    """The properties a request carries (Java ``prepareSendRequest``)."""
    return {
        Property.CORRELATION_ID: correlation_id,
        Property.REPLY_TO_CLIENT: client_id,
        Property.MESSAGE_TTL: str(max(1, int(timeout * 1000))),
    }


#: what a stored request carries (Java ``MessageUtil.createReplyMessage`` needs all four)
REQUEST_PROPERTIES = (Property.CLUSTER, Property.CORRELATION_ID, Property.REPLY_TO_CLIENT,
                      Property.MESSAGE_TTL)  # fmt: skip


def is_request(properties: Mapping[str, str]) -> bool:
    """Whether a received message is a stored request someone waits to be answered."""
    return all(properties.get(name) for name in REQUEST_PROPERTIES)


def reply_properties(request: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The reply topic and properties for a request with these properties (Java
    ``MessageUtil.createReplyMessage``); :class:`InvalidMessage` if it is no request."""
    cluster = request.get(Property.CLUSTER)
    if not cluster:
        raise InvalidMessage("message: not a stored request (no CLUSTER property)")
    props = {Property.MESSAGE_TYPE: REPLY_MESSAGE_FLAG}
    for name in REQUEST_PROPERTIES[1:]:
        value = request.get(name)
        if not value:
            raise InvalidMessage(f"message: not a request (no {name} property)")
        props[name] = value
    return reply_topic(cluster), props


class _Member(Protocol):  # a started Producer or consumer
    @property
    def instance(self) -> ClientInstance: ...
    @property
    def group(self) -> str: ...


class _Request(Protocol):  # a MessageExt / ReceivedMessage (or a ReplyMessage)
    @property
    def properties(self) -> Mapping[str, str]: ...


async def reply(
    client: _Member,
    request: _Request,
    body: bytes,
    *,
    timeout: float | None = None,
    properties: Mapping[str, str] | None = None,
) -> None:
    """Send ``body`` as the reply to ``request`` (a message a consumer received), through
    ``client``'s connections: SEND_REPLY_MESSAGE_V2 to the reply topic of the request's
    cluster, on the broker that stored the request if it serves the reply topic. Raises
    :class:`~rocketmq_actors.errors.BrokerError` when the broker could not push the reply (the
    requester gave up, or is gone). ``properties``: the reply's own, beside the ones the reply
    protocol sets (none may be named like a client property: :class:`InvalidMessage`)."""
    if not isinstance(body, bytes):
        raise InvalidMessage(f"body must be bytes, not {type(body).__name__}")
    if timeout is not None:
        timeout = check_timeout("timeout", timeout)
    if not isinstance(getattr(request, "properties", None), Mapping):
        raise InvalidMessage(
            f"request must be a received message (with properties), not {type(request).__name__}"
        )
    topic, props = reply_properties(request.properties)
    if properties:
        if clash := sorted(set(properties) & RESERVED_PROPERTIES):
            raise InvalidMessage(f"headers may not be named like client properties: {clash}")
        props = {**properties, **props}
    instance = client.instance
    timeout = timeout or instance.request_timeout
    route = await instance.routes.get(topic)
    stored_on = getattr(request, "broker_name", "")
    queues = route.publish_queues
    queue = next((q for q in queues if q.broker_name == stored_on), queues[0] if queues else None)
    addr = route.master_addr(queue.broker_name) if queue is not None else None
    if queue is None or addr is None:
        raise InvalidMessage(f"message: no writable master serves the reply topic {topic!r}")
    header = SendMessageRequestHeader(
        producer_group=client.group, topic=topic, queue_id=queue.queue_id,
        born_timestamp=time.time_ns() // 1_000_000, properties=encode_properties(props),
        broker_name=queue.broker_name,
    )  # fmt: skip
    cmd = RemotingCommand.request(
        RequestCode.SEND_REPLY_MESSAGE_V2, header.to_ext(v2=True), body=body
    )
    answer = await instance.request(addr, cmd, timeout)
    if answer.code != ResponseCode.SUCCESS:
        raise broker_error(addr, answer.code, answer.remark)
    log.debug("producer.reply.sent", topic=topic, correlation_id=props[Property.CORRELATION_ID])


@attrs.define
class _Entry:
    waiter: Waiter
    deadline: float
    topic: str
    timeout: float


class ReplyTable:
    """The requests waiting for their reply, by correlation id: each is registered with the
    router (so its 326 reaches ``mailbox``) until it is resolved, expires or is dropped."""

    def __init__(self, router: Router, mailbox: Mailbox[Inbound]) -> None:
        self._router = router
        self._mailbox = mailbox
        self._pending: dict[str, _Entry] = {}
        self._next = math.inf
        self._wake: anyio.Event | None = None
        self.closed = False
        self.announced: set[str] = set()  # topics whose brokers heard a heartbeat from us
        self.replies = self.timeouts = self.late = 0

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, correlation_id: str) -> bool:
        return correlation_id in self._pending

    @staticmethod
    def new_id() -> str:
        return str(uuid.uuid4())  # Java CorrelationIdUtil.createCorrelationId

    def open(
        self, correlation_id: str, topic: str, timeout: float, deadline: float | None = None
    ) -> Waiter:
        """Register a request; it expires at ``deadline`` (anyio clock; default: ``timeout``
        from now)."""
        if self.closed:
            raise ClientClosed("the producer is stopping: no new requests")
        new_waiter, _ = waiter_factory()
        if deadline is None:
            deadline = anyio.current_time() + timeout
        self._pending[correlation_id] = _Entry(new_waiter(), deadline, topic, timeout)
        self._router.register(REPLY_EVENTS, correlation_id, self._mailbox)
        if deadline < self._next:
            self._next = deadline
            if self._wake is not None:
                self._wake.set()
        return self._pending[correlation_id].waiter

    def _pop(self, correlation_id: str) -> _Entry | None:
        entry = self._pending.pop(correlation_id, None)
        if entry is not None:
            self._router.unregister(REPLY_EVENTS, correlation_id)
        return entry

    def resolve(self, message: ReplyMessage) -> bool:
        """Hand the reply to its request; False if no request waits for it any more."""
        entry = self._pop(message.correlation_id)
        if entry is None or entry.waiter.done():
            self.late += 1
            return False
        self.replies += 1
        entry.waiter.set_result(message)
        return True

    def fail(self, correlation_id: str, exc: BaseException) -> None:
        entry = self._pop(correlation_id)
        if entry is not None and not entry.waiter.done():
            entry.waiter.set_exception(exc)

    def discard(self, correlation_id: str) -> None:
        """Free the entry without resolving it (its caller stopped waiting)."""
        self._pop(correlation_id)

    def close(self) -> None:
        """Refuse new requests and fail the pending ones (the producer is stopping)."""
        self.closed = True
        for correlation_id in list(self._pending):
            self.fail(correlation_id, ClientClosed("the producer stopped before the reply came"))

    def expire(self, now: float) -> float:
        """Fail the requests whose deadline has passed; the earliest deadline left."""
        earliest = math.inf
        for correlation_id, entry in list(self._pending.items()):
            if entry.deadline <= now:
                self.timeouts += 1
                self.fail(correlation_id, ReplyTimeout(entry.topic, correlation_id, entry.timeout))
            else:
                earliest = min(earliest, entry.deadline)
        return earliest

    async def run(self, *, task_status: TaskStatus[ReplyTable]) -> None:
        """The expiry actor: sleeps until the earliest deadline (or a new, earlier one)."""
        self._wake = anyio.Event()
        task_status.started(self)
        while True:
            self._next = self.expire(anyio.current_time())
            with anyio.move_on_after(max(self._next - anyio.current_time(), 0.0)):
                await self._wake.wait()
            self._wake = anyio.Event()

    def describe(self) -> Node:
        return Node(name="replies", kind="reply-table", info={
            "pending": len(self._pending), "replies": self.replies,
            "timeouts": self.timeouts, "late": self.late,
        })  # fmt: skip


class Requester(Protocol):
    """What a request needs of the producer that sends it (the producer's actor group)."""

    @property
    def instance(self) -> ClientInstance: ...
    @property
    def replies(self) -> ReplyTable: ...

    def prepare(
        self, message: Message, extra: dict[str, str] | None = None, sys_flag: int = 0
    ) -> Prepared: ...

    def check_running(self) -> None: ...

    async def send_prepared(
        self, prepared: Prepared, routing: Routing, timeout: float | None
    ) -> SendResult: ...


async def request(
    producer: Requester, message: Message, timeout: float, routing: Routing | None = None
) -> ReplyMessage:
    """``Producer.request``: the reply, or its error."""
    correlation_id, waiter = await send_request(producer, message, timeout, routing)
    try:
        return cast(ReplyMessage, await waiter)
    finally:  # (nothing to free once resolved; a cancelled caller's entry goes here)
        producer.replies.discard(correlation_id)


class _Callbacks(Protocol):  # a Waiter: an asyncio future, or _EventWaiter on other backends
    def add_done_callback(self, fn: Callable[[Any], object], /) -> None: ...


def _retrieve(future: ReplyFuture) -> None:
    if not future.cancelled():
        future.exception()


async def submit_request(
    producer: Requester, message: Message, timeout: float, routing: Routing | None = None
) -> ReplyFuture:
    """``Producer.submit_request``: the future of the reply, once the request is stored.

    Its error is marked retrieved as soon as it is set: a caller may drop the future (fire and
    forget, or it stopped caring), and asyncio would log "Future exception was never retrieved"
    when it is collected - noise from a silent library, about an outcome the caller chose not to
    see. ``await``, ``result()`` and ``exception()`` still give the error."""
    _, waiter = await send_request(producer, message, timeout, routing)
    cast(_Callbacks, waiter).add_done_callback(_retrieve)
    return cast(ReplyFuture, waiter)


async def send_request(
    producer: Requester, message: Message, timeout: float, routing: Routing | None = None
) -> tuple[str, Waiter]:
    """Send ``message`` as a request (to the queue ``routing`` picks: round robin by default);
    its correlation id and the future of its reply (the send's error, or
    :class:`~rocketmq_actors.errors.ReplyTimeout` after ``timeout`` in all). ``timeout`` is
    a deadline for everything: the first request to a topic spends part of it finding the
    topic's brokers and heartbeating, and one whose budget is gone by then is not sent
    (``ReplyTimeout`` with ``sent`` false)."""
    timeout = check_timeout("timeout", timeout)
    instance = producer.instance
    table = producer.replies
    correlation_id = table.new_id()
    prepared = producer.prepare(
        message, extra=request_properties(correlation_id, instance.client_id, timeout)
    )
    producer.check_running()
    started = anyio.current_time()
    deadline = started + timeout
    if prepared.topic not in table.announced:
        # the broker pushes the reply down the connection that heartbeats as REPLY_TO_CLIENT:
        # heartbeat to the topic's brokers before the first request (Java prepareSendRequest)
        with anyio.move_on_after(timeout):
            await instance.routes.get(prepared.topic, template=TEMPLATE_TOPIC)
            await instance.heartbeat.beat()
            table.announced.add(prepared.topic)
    left = deadline - anyio.current_time()
    if left <= 0:
        raise ReplyTimeout(prepared.user_topic, correlation_id, timeout, sent=False)
    waiter = table.open(correlation_id, prepared.topic, timeout, deadline)
    try:
        await producer.send_prepared(prepared, routing or Routing(message), left)
    except BaseException:
        # the expiry actor may have failed the waiter meanwhile: nobody will see it, the
        # send's error is what the caller gets
        _retrieve(cast(ReplyFuture, waiter))
        table.discard(correlation_id)
        raise
    return correlation_id, waiter
