"""The producer: a client that sends messages.

    async with Producer(group="orders", namesrv="127.0.0.1:9876") as producer:
        result = await producer.send(Message(topic="orders", body=b"...", tags="paid"))
        future = await producer.submit(msg)         # backpressure first, then a future
        future = producer.send_nowait(msg)          # admitted now, or ProducerBusy
        await producer.send_oneway(msg)
        results = await producer.send_batch(msgs)   # cut at the size limit
        answer = await producer.request(msg, timeout=3.0)  # RPC: the reply (.requestreply)
        await producer.recall(topic, result.recall_handle)  # a timer message (.recall)
        await producer.send(msg, sharding_key="user-42")  # same key -> same queue, in order

What it takes beside its group and topics is a :class:`ProducerOptions` (send timeouts,
retries, compression, backpressure) and a :class:`~rocketmq_actors.cluster.options.ClientOptions`
(namespace, TLS, credentials, tracing, shutdown). The work is done by its actor group
(:mod:`.group`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rocketmq_actors.cluster.client import Client
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.hooks import SendHook
from rocketmq_actors.protocol.events import ReplyMessage
from rocketmq_actors.protocol.messages import Message

from . import requestreply
from .future import FlushResult, SendFuture
from .group import Admission, ProducerGroup
from .options import ProducerOptions
from .recall import RecallResult
from .result import BatchResults, SendResult
from .selector import QueueSelector
from .sendloop import Routing

__all__ = ["Producer"]


class Producer(Client[ProducerGroup]):
    """Sends messages to a RocketMQ cluster (``async with``, or ``start()`` / ``stop()``).

    ``group``: the producer group; ``namesrv``: the NameServer (the same as
    ``ClientOptions(namesrv=...)``; without either, ``$NAMESRV_ADDR``); ``topics``: resolved
    at start (brokers heartbeated at once: transaction checks can reach it);
    ``value_serializer``: ``value -> bytes`` for a ``Message(value=...)``; ``options``: a
    :class:`ProducerOptions`; ``client``: a ``ClientOptions``; ``instance``: a shared
    ``ClientInstance``; ``hooks``: :class:`~rocketmq_actors.hooks.SendHook` objects, called
    around every send (Java's ``SendMessageHook``). A bad value is a ``ConfigError`` here,
    before any I/O.
    """

    def __init__(
        self,
        *,
        group: str = "DEFAULT_PRODUCER",
        namesrv: str | Sequence[str] | None = None,
        topics: Sequence[str] = (),
        value_serializer: Callable[[Any], bytes] | None = None,
        options: ProducerOptions = ProducerOptions(),
        client: ClientOptions = ClientOptions(),
        instance: ClientInstance | None = None,
        hooks: Sequence[SendHook] = (),
    ) -> None:
        self._group = ProducerGroup(group=group, namesrv=namesrv, topics=topics,
                                    value_serializer=value_serializer, options=options,
                                    client=client, instance=instance, hooks=hooks)  # fmt: skip

    @property
    def options(self) -> ProducerOptions:
        """The :class:`ProducerOptions` it was built with."""
        return self._group.options

    async def send(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send and wait for the broker's answer: its :class:`SendResult`. With
        ``sharding_key`` (or ``selector`` and ``arg``) the queue is chosen by the key: same
        key, same queue, in order. Up to ``1 + retry_times`` attempts within ``timeout``
        (``send_timeout`` if None); :class:`~rocketmq_actors.errors.SendFailed` after them."""
        group = self._group
        if group.hooking:
            return await group.send_traced(message, sharding_key, selector, arg, timeout)
        if group.auto_batch and sharding_key is None and selector is None:  # (joins a batch)
            admitted = group.admit(message, None, None, None, timeout, None)
            if isinstance(admitted, Admission):  # (no room now)
                admitted = await group.admit_waiting(admitted)
            return await admitted  # (awaited here: a coroutine less a message)
        return await group.send_now(message, sharding_key, selector, arg, timeout)

    async def submit(
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
        cannot be called is a :class:`~rocketmq_actors.errors.ConfigError`."""
        admitted = self._group.admit(message, sharding_key, selector, arg, timeout, callback)
        if isinstance(admitted, Admission):  # (no room now, or an ordered send's route)
            return await self._group.admit_waiting(admitted)
        return admitted

    def send_nowait(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
        timeout: float | None = None,
        callback: Callable[[SendFuture], object] | None = None,
    ) -> SendFuture:
        """:meth:`submit` without waiting (a plain function): the message is admitted now and
        its future returned, or :class:`~rocketmq_actors.errors.ProducerBusy` (retriable,
        nothing sent) is raised when it cannot be: ``max_pending`` sends or
        ``max_pending_bytes`` in flight, or an ordered send whose queue is not known yet (its
        topic's route was never looked up: give ``topics=``)."""
        admitted = self._group.admit(message, sharding_key, selector, arg, timeout, callback)
        if isinstance(admitted, Admission):
            raise self._group.busy(admitted)
        return admitted

    async def flush(self, timeout: float | None = None) -> FlushResult:
        """Wait until every send :meth:`submit` or :meth:`send_nowait` admitted before this
        call is resolved (sent, failed, or its future cancelled by a caller that gave up
        awaiting it), at most ``timeout`` seconds (None: no limit), and count them. Sends
        admitted meanwhile are not waited for. Cancelling a flush cancels no send. It does not
        wait for the sends' callbacks."""
        return await self._group.flush(timeout)

    async def send_oneway(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
    ) -> None:
        """Send without waiting for any answer (at most once: no retry, no result), to the
        queue ``sharding_key`` or ``selector`` picks, as :meth:`send`. It takes at most
        ``send_timeout``: a broker that stops reading makes it fail with
        :class:`~rocketmq_actors.errors.WriteTimeout` (inside ``SendFailed``)."""
        await self._group.send_oneway(message, Routing(message, sharding_key, selector, arg))

    async def send_batch(
        self,
        messages: Sequence[Message],
        *,
        timeout: float | None = None,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
    ) -> BatchResults:
        """Send ``messages`` (one topic) as SEND_BATCH_MESSAGE requests, cut so that each body
        stays within ``max_message_size``; to the queue ``sharding_key`` or ``selector`` picks
        (given the first message), as :meth:`send` (Java's ``send(Collection, MessageQueue)``:
        a selector that returns its ``arg``), else round robin. Returns one result per
        message (a sequence that builds them when first read)."""
        first = messages[0] if isinstance(messages, list | tuple) and messages else None
        routing = _routing(first, sharding_key, selector, arg)  # (bad input: checked below)
        return await self._group.send_batch(messages, timeout, routing)

    async def request(
        self,
        message: Message,
        timeout: float = 3.0,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
    ) -> ReplyMessage:
        """Send ``message`` as a request (to the queue ``sharding_key`` or ``selector``
        picks, as :meth:`send`) and wait for its reply, ``timeout`` seconds in all
        (:class:`~rocketmq_actors.errors.ReplyTimeout` after that): RPC over RocketMQ."""
        routing = _routing(message, sharding_key, selector, arg)
        return await requestreply.request(self._group, message, timeout, routing)

    async def submit_request(
        self,
        message: Message,
        timeout: float = 3.0,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
    ) -> requestreply.ReplyFuture:
        """Send ``message`` as a request (waiting for the broker to store it, as :meth:`send`;
        ``sharding_key`` or ``selector`` as there), then return the future of its reply
        (``ReplyTimeout`` ``timeout`` seconds after the call)."""
        routing = _routing(message, sharding_key, selector, arg)
        return await requestreply.submit_request(self._group, message, timeout, routing)

    async def reply(self, request: Any, body: bytes, *, timeout: float | None = None) -> None:
        """Send ``body`` as the reply to ``request``, a message a consumer received
        (:func:`.requestreply.reply`)."""
        self._group.check_running()
        await requestreply.reply(self._group, request, body, timeout=timeout)

    async def recall(
        self, topic: str, handle: str, *, timeout: float | None = None
    ) -> RecallResult:
        """Recall a timer message before its delivery time with its ``SendResult.recall_handle``
        (RECALL_MESSAGE, a 5.3.2+ broker with ``recallMessageEnable=true``), within ``timeout``
        (``send_timeout`` if None). Typed errors: :mod:`.recall`."""
        return await self._group.recall(topic, handle, timeout)


def _routing(
    message: Message | None, sharding_key: str | None, selector: QueueSelector | None, arg: object
) -> Routing | None:
    """The routing of a key or a selector; None (round robin) without either."""
    if sharding_key is None and selector is None:
        return None
    return Routing(message, sharding_key, selector, arg)
