"""PushConsumer: a consumer group member that pulls its share of queues and calls a handler.

    async def handle(message: ReceivedMessage[bytes]) -> None:
        ...                          # raising means "consume later" (retry)

    async with PushConsumer(group="billing", subscriptions={"orders": "paid || refunded"},
                            handler=handle, namesrv="127.0.0.1:9876"):
        await anyio.sleep_forever()

or, without a handler, iterate (a message counts as consumed when the loop asks for the next,
unless it was settled before with ``message.ack()`` / ``message.nack(delay=...)``, see
:mod:`..core.settlement`; ``value_deserializer`` makes ``message.value``, see
:mod:`..core.message`):

    async with PushConsumer(group="billing", subscriptions={"orders": "*"}, namesrv=...) as c:
        async for message in c:
            ...

How it consumes is a :class:`~.options.PushOptions` (``options=``), what every client shares a
:class:`~rocketmq_actors.cluster.options.ClientOptions` (``client=``). The work is done by its
actor group (:mod:`.group`); what a handler's outcome means: :mod:`..core.handlers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, cast

from rocketmq_actors.cluster.client import Client
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.dispatch import BatchHandler, Handler, async_handlers
from rocketmq_actors.consumer.core.message import ReceivedMessage, T
from rocketmq_actors.consumer.core.options import ConsumeFrom, MessageModel
from rocketmq_actors.consumer.core.settlement import Delay
from rocketmq_actors.consumer.core.subscriptions import MessageSelector, Subscription
from rocketmq_actors.consumer.push.group import PushGroup
from rocketmq_actors.consumer.push.options import PushOptions, check_arguments
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.hooks import ConsumeHook, consume_hooks
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["BatchHandler", "ConsumeFrom", "Handler", "MessageModel", "PushConsumer"]


class PushConsumer(Client[PushGroup], Generic[T]):
    """A member of consumer ``group``: it owns a share of the queues of ``subscriptions``
    (``{topic: "tag || tag"}``, ``"*"`` or a ``MessageSelector``) and hands their messages to
    ``handler`` (``batch_handler``: lists of up to ``consume_batch_size``; ``sync_handler``: a
    plain ``def``, run in a worker thread), or, with neither, to ``async for``.

    ``value_deserializer`` turns a body into ``message.value``; ``on_rebalance(queues)`` is
    called with the queues owned after each rebalance. ``namesrv`` is short for
    ``ClientOptions(namesrv=...)``; ``instance`` is a shared ``ClientInstance``; ``hooks``:
    :class:`~rocketmq_actors.hooks.ConsumeHook` objects, called around every handler call
    (Java's ``ConsumeMessageHook``).
    """

    def __init__(
        self,
        *,
        group: str,
        subscriptions: Mapping[str, str | MessageSelector],
        handler: Handler | None = None,
        batch_handler: BatchHandler | None = None,
        sync_handler: bool = False,
        value_deserializer: Callable[[bytes], T] | None = None,
        on_rebalance: Callable[[list[MessageQueue]], None] | None = None,
        namesrv: str | Sequence[str] | None = None,
        options: PushOptions = PushOptions(),
        client: ClientOptions = ClientOptions(),
        instance: ClientInstance | None = None,
        hooks: Sequence[ConsumeHook] = (),
    ) -> None:
        checked_hooks = consume_hooks(hooks)  # (a bad one: ConfigError, before anything else)
        check_arguments(group=group, subscriptions=subscriptions, handler=handler,
                        batch_handler=batch_handler, sync_handler=sync_handler,
                        value_deserializer=value_deserializer, on_rebalance=on_rebalance,
                        options=options, client=client)  # fmt: skip
        handler, batch_handler = async_handlers(handler, batch_handler, sync=sync_handler,
                                                concurrency=options.concurrency)  # fmt: skip
        self._group = PushGroup(
            group=group, subscriptions=subscriptions, handler=handler, batch_handler=batch_handler,
            value_deserializer=value_deserializer, on_rebalance=on_rebalance, namesrv=namesrv,
            options=options, client=client, instance=instance, hooks=checked_hooks,
        )  # fmt: skip

    # ---- async for --------------------------------------------------------------------------

    def __aiter__(self) -> PushConsumer[T]:
        """``async for message in consumer`` (a consumer built without a handler)."""
        if self._group.dispatcher.deliveries is None:
            raise TypeError("this consumer has a handler (iterate a consumer created without one)")
        return self

    async def __anext__(self) -> ReceivedMessage[T]:
        """The next message; the previous one counts as consumed now (unless it was settled:
        ``ack``, ``nack``, :meth:`reconsume_later`)."""
        group = self._group
        group._check_running()
        assert group.dispatcher.deliveries is not None
        return cast("ReceivedMessage[T]", await group.dispatcher.deliveries.next())

    def reconsume_later(self, message: MessageExt, delay: Delay | None = None) -> None:
        """Hand the message ``async for`` is on back: ``message.nack(delay)`` (see
        :mod:`..core.settlement` for ``delay``; None: ``retry_delay_level``)."""
        deliveries = self._group.dispatcher.deliveries
        if deliveries is None:
            raise ConfigError("reconsume_later is for async for (a handler raises, or nacks)")
        deliveries.reconsume_later(message, delay)

    def rebalance_now(self) -> None:
        """Compute this member's share of the queues now, rather than at the next
        ``rebalance_interval`` (the broker also asks for one when the group changes)."""
        self._group.rebalance_now()

    # ---- changing what it consumes while it runs ------------------------------------------

    async def subscribe(self, topic: str, selector: str | MessageSelector = "*") -> None:
        """Consume ``topic`` too, with ``selector`` (a tag expression or a
        ``MessageSelector``; subscribing a topic again replaces its expression), as Java's
        ``subscribe`` on a started consumer: the brokers are told at once and, before it
        returns, a rebalance takes this member's share of the topic's queues. A bad topic or
        expression is a :class:`~rocketmq_actors.errors.ConfigError` before any I/O; an SQL92
        expression a broker refuses, :class:`~rocketmq_actors.errors.InvalidSubscription`."""
        await self._group.subscribe(topic, selector)

    async def unsubscribe(self, topic: str) -> None:
        """Consume ``topic`` no more (Java's ``unsubscribe``): its queues stop pulling at
        once and, before it returns, are released with their offsets committed; what they had
        cached and not consumed is delivered again to whoever consumes the topic next."""
        await self._group.unsubscribe(topic)

    def suspend(self) -> None:
        """Start no more pulls (Java's ``suspend``); a pull in flight completes and what was
        pulled is still consumed. Rebalancing and heartbeats go on."""
        self._group.suspend()

    def resume(self) -> None:
        """Pull again after :meth:`suspend` (and rebalance now)."""
        self._group.resume()

    @property
    def suspended(self) -> bool:
        """Between :meth:`suspend` and :meth:`resume`."""
        return self._group.suspension.suspended

    # ---- what users watch -------------------------------------------------------------------

    @property
    def consumed(self) -> int:
        """Deliveries consumed since the start (acked: explicitly, or by a handler that
        returned)."""
        return self._group.consumed

    @property
    def failed(self) -> int:
        """Deliveries that failed since the start (nacked, or left unsettled by a handler that
        raised or timed out, or undecodable): each is delivered again, or dead-lettered."""
        return self._group.failed

    def assigned(self) -> list[MessageQueue]:
        """The queues this member consumes now (sorted)."""
        return self._group.assigned()

    def subscriptions(self) -> list[Subscription]:
        """What the group is subscribed to, as the broker knows it (namespaced topics, and in
        clustering mode the group's retry topic ``%RETRY%<group>``)."""
        return self._group.subscriptions()
