"""PopConsumer: a consumer group member to which the brokers assign messages (POP, 5.x).

    async def handle(message: ReceivedMessage[bytes]) -> None:
        ...                          # raising means "consume later" (retry)

    async with PopConsumer(namesrv="127.0.0.1:9876", group="billing",
                           subscriptions={"orders": "paid || refunded"}, handler=handle,
                           options=PopOptions(invisible_time=120.0)):
        await anyio.sleep_forever()

or ``async for message in consumer`` as with :class:`~.push.PushConsumer`, with the same
handlers, settlement (``message.ack()``, ``message.nack(delay=...)``) and options where they
mean the same.

Where a push consumer owns queues (a client-side rebalance gives each member some; a group
has no use for more members than queues), a POP consumer asks every broker of each subscribed
topic for messages of any of its queues (POP_MESSAGE with queue id -1, long polling up to
``poll_time`` as Java's ``popAsync``): the broker hands each message to one member and hides
it from the others for ``invisible_time``. No rebalance, no offsets on the client: a message
acked is consumed; one not acked within its invisible time is delivered again, to any member
(a member that stops or dies leaves its unacked messages to the others that way). A failure
makes the message visible again after a delay, through the broker's pop retry topic
(``%RETRY%<group>_<topic>`` or ``+<topic>``), its reconsume count one more; see
:mod:`.service`. Acks are batched (:mod:`.acks`).

``PopOptions(orderly=True)`` pops with ``order=true``: the broker hands a queue's next
messages out only once the previous ones are acked (or invisible again), so each queue is
consumed in order, by one member at a time.

The actors doing the work (mailbox, brokers, poppers, consume, acks) are those of its group,
:class:`~.group.PopGroup`. POP needs 5.x brokers: starting against a 4.x broker raises
:class:`~rocketmq_actors.errors.UnsupportedByBroker`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, cast

from rocketmq_actors.cluster.client import Client
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.dispatch import BatchHandler, Handler, async_handlers
from rocketmq_actors.consumer.core.message import ReceivedMessage, T
from rocketmq_actors.consumer.core.settlement import Delay
from rocketmq_actors.consumer.core.subscriptions import MessageSelector
from rocketmq_actors.consumer.pop.group import NO_ITERATION, PopGroup
from rocketmq_actors.consumer.pop.options import PopOptions, check_pop_arguments
from rocketmq_actors.hooks import ConsumeHook, consume_hooks
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["PopConsumer"]


class PopConsumer(Client[PopGroup], Generic[T]):
    """A member of consumer ``group`` to which the brokers hand out messages of the
    ``subscriptions`` (``{topic: "tag || tag"``, ``"*"`` or a ``MessageSelector``}), consumed by
    ``handler(message)`` or ``batch_handler(messages)`` (with ``consume_batch_size``), a plain
    ``def`` with ``sync_handler=True``; without either, ``async for message in consumer``.
    ``value_deserializer`` turns each body into ``message.value``. ``namesrv`` is
    ``ClientOptions(namesrv=...)`` in short; ``options`` what POP tunes (:class:`PopOptions`),
    ``client`` what every client shares, ``instance`` a shared ``ClientInstance``; ``hooks``:
    :class:`~rocketmq_actors.hooks.ConsumeHook` objects, called around every handler call."""

    def __init__(
        self,
        *,
        group: str,
        subscriptions: Mapping[str, str | MessageSelector],
        handler: Handler | None = None,
        batch_handler: BatchHandler | None = None,
        sync_handler: bool = False,
        value_deserializer: Callable[[bytes], T] | None = None,
        namesrv: str | Sequence[str] | None = None,
        options: PopOptions = PopOptions(),
        client: ClientOptions = ClientOptions(),
        instance: ClientInstance | None = None,
        hooks: Sequence[ConsumeHook] = (),
    ) -> None:
        checked_hooks = consume_hooks(hooks)  # (a bad one: ConfigError, before anything else)
        check_pop_arguments(
            group=group, subscriptions=subscriptions, handler=handler,
            batch_handler=batch_handler, sync_handler=sync_handler,
            value_deserializer=value_deserializer, options=options, client=client,
        )  # fmt: skip
        handler, batch_handler = async_handlers(handler, batch_handler, sync=sync_handler,
                                                concurrency=options.concurrency)  # fmt: skip
        self._group = PopGroup(
            group=group, subscriptions=subscriptions, handler=handler,
            batch_handler=batch_handler, value_deserializer=value_deserializer,
            namesrv=namesrv, options=options, client=client, instance=instance,
            hooks=checked_hooks,
        )  # fmt: skip

    def __aiter__(self) -> PopConsumer[T]:
        """``async for message in consumer`` (a consumer created without a handler): each
        message counts as consumed when the loop asks for the next, unless settled before
        (``message.ack()``, ``message.nack(delay=...)``)."""
        self._group.deliveries(NO_ITERATION)
        return self

    async def __anext__(self) -> ReceivedMessage[T]:
        """The next message; the previous one counts as consumed now (unless settled)."""
        return cast("ReceivedMessage[T]", await self._group.next_delivery())

    def reconsume_later(self, message: MessageExt, delay: Delay | None = None) -> None:
        """``message.nack(delay)`` for the message ``async for`` is on: delivered again after
        ``delay`` (a duration), else after ``retry_delay`` or the pop retry delays."""
        refusal = "reconsume_later is for async for (a handler raises, or nacks)"
        self._group.deliveries(refusal).reconsume_later(message, delay)

    def statistics(self) -> dict[str, Any]:
        """What it did so far: ``consumed`` and ``failed`` handler outcomes, ``cached``
        (popped, not settled), ``acked`` and ``ack_refused`` acks, ``retried`` (made visible
        again), ``dead`` (sent to the DLQ), ``expired`` (their invisible time ran out before a
        worker took them), ``pops`` and ``pop_errors`` (POP requests), and the ``brokers``
        (``topic@broker``) it pops from."""
        return self._group.statistics()
