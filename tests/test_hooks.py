"""Send and consume hooks (rocketmq_actors.hooks, Java's SendMessageHook and
ConsumeMessageHook): what each hook sees, on every send path and around handler calls, and a
hook that raises never failing what it watches."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import attrs
import pytest

from rocketmq_actors.consumer.pop import PopConsumer
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import ConfigError, InvalidMessage
from rocketmq_actors.hooks import ConsumeContext, SendContext, SendHook
from rocketmq_actors.producer import Message, Producer, ProducerOptions, create_topic
from rocketmq_actors.producer.result import SendResult
from rocketmq_actors.protocol.records import MessageExt


class Stamping:
    """Adds a property before each send, and keeps what it saw after it."""

    def __init__(self) -> None:
        self.ended: list[SendContext] = []

    def before_send(self, context: SendContext) -> None:
        context.props["begun"] = True

        def stamped(message: Message) -> Message:
            props = {**message.properties, "stamp": context.mode}
            return attrs.evolve(message, properties=props)

        if context.messages is not None:  # a batch: its messages
            context.messages = [stamped(m) for m in context.messages]
        else:
            context.message = stamped(context.message)

    def after_send(self, context: SendContext) -> None:
        assert context.props["begun"]
        self.ended.append(context)


class Broken:
    def before_send(self, context: SendContext) -> None:
        raise RuntimeError("a broken hook")

    def after_send(self, context: SendContext) -> None:
        raise RuntimeError("a broken hook")

    def before_consume(self, context: ConsumeContext) -> None:
        raise RuntimeError("a broken hook")

    def after_consume(self, context: ConsumeContext) -> None:
        raise RuntimeError("a broken hook")


class Watching:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], bool | None]] = []

    def before_consume(self, context: ConsumeContext) -> None:
        self.calls.append(("before", [m.keys[0] for m in context.messages], context.success))

    def after_consume(self, context: ConsumeContext) -> None:
        self.calls.append(("after", [m.keys[0] for m in context.messages], context.success))


@pytest.mark.parametrize("hooks", [[object()], ["not a hook"], "a string", [Stamping(), 3]])
def test_a_hook_without_the_methods_is_a_config_error_before_any_io(hooks: Any) -> None:
    with pytest.raises(ConfigError, match="hook"):
        Producer(namesrv="127.0.0.1:1", hooks=hooks)
    with pytest.raises(ConfigError, match="hook"):
        PushConsumer(group="G", subscriptions={"T": "*"}, namesrv="127.0.0.1:1", hooks=hooks)
    with pytest.raises(ConfigError, match="hook"):
        PopConsumer(group="G", subscriptions={"T": "*"}, namesrv="127.0.0.1:1", hooks=hooks)


@pytest.mark.integration
async def test_send_hooks_see_every_send_path_and_may_add_properties(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, caplog: pytest.LogCaptureFixture
) -> None:
    stamping = Stamping()
    hooks: list[SendHook] = [Broken(), stamping]  # (the broken one first: the next still runs)
    options = ProducerOptions(max_message_size=1024)
    async with Producer(namesrv=rocketmq_namesrv, options=options, hooks=hooks) as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        sent = await producer.send(Message(topic=unique_topic, body=b"1", keys=["sync"]))
        future = await producer.submit(Message(topic=unique_topic, body=b"2", keys=["async"]))
        await future
        batch = [Message(topic=unique_topic, body=b"3", keys=["batch"]),
                 Message(topic=unique_topic, body=b"4", keys=["batch2"])]  # fmt: skip
        await producer.send_batch(batch)
        await producer.send_oneway(Message(topic=unique_topic, body=b"5", keys=["oneway"]))
        with pytest.raises(InvalidMessage):  # (refused before I/O: after_send hears of it)
            await producer.send(Message(topic=unique_topic, body=bytes(2048), keys=["big"]))
    modes = [c.mode for c in stamping.ended]
    assert modes == ["sync", "async", "batch", "oneway", "sync"]
    batching = Stamping()
    options = ProducerOptions(auto_batch=True, batch_max_delay=1.0)  # (held: a slack of 1 s)
    async with Producer(namesrv=rocketmq_namesrv, options=options, hooks=[batching]) as producer:
        joined = [await producer.submit(Message(topic=unique_topic, body=b"j", keys=[f"j{i}"]))
                  for i in range(3)]  # fmt: skip
        assert batching.ended == []  # (in a batch, not sent yet: after_send is still to come)
        results = [await future for future in joined]
    assert [c.result for c in batching.ended] == results  # each its own, once the batch ended
    # (and one batch it was: one queue, consecutive offsets; round-robin singles would spread)
    assert len({r.queue for r in results}) == 1
    assert [r.queue_offset for r in results] == [results[0].queue_offset + i for i in range(3)]
    assert stamping.ended[0].result == sent and isinstance(stamping.ended[1].result, SendResult)
    assert stamping.ended[2].result is not None and len(stamping.ended[2].result) == 2
    oneway = stamping.ended[3]  # (its result: the message id, once the request is written)
    assert isinstance(oneway.result, str) and len(oneway.result) == 32 and oneway.error is None
    assert [len(c.messages or ()) for c in stamping.ended] == [0, 0, 2, 0, 0]  # a batch's all
    assert all(c.elapsed is not None and c.elapsed >= 0 for c in stamping.ended)
    assert isinstance(stamping.ended[4].error, InvalidMessage)
    assert stamping.ended[4].result is None
    assert "producer.hook_failed" in caplog.text  # logged, and every send went on
    consumed: dict[str, dict[str, str]] = {}
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        consumed[message.keys[0]] = dict(message.properties)
        if len(consumed) == 8:
            done.set()

    async with PushConsumer(
        group=unique_group, subscriptions={unique_topic: "*"}, handler=handle,
        namesrv=rocketmq_namesrv, options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    # the property before_send added went on the wire (a batch's: on each of its messages)
    assert {k: p.get("stamp") for k, p in consumed.items()} == {
        "sync": "sync", "async": "async", "batch": "batch", "batch2": "batch", "oneway": "oneway",
        "j0": "async", "j1": "async", "j2": "async",
    }  # fmt: skip


@pytest.mark.integration
async def test_consume_hooks_wrap_each_handler_call_with_its_outcome(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with Producer(namesrv=rocketmq_namesrv) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for key in ("ok", "fails-once"):
            await producer.send(Message(topic=unique_topic, body=b"x", keys=[key]))
    watching = Watching()
    failed = False
    handled: list[str] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        nonlocal failed
        if message.keys[0] == "fails-once" and not failed:
            failed = True
            raise RuntimeError("once")
        handled.append(message.keys[0])
        if len(handled) == 2:
            done.set()

    caplog.set_level(logging.ERROR)
    async with PushConsumer(
        group=unique_group, subscriptions={unique_topic: "*"}, handler=handle,
        namesrv=rocketmq_namesrv, hooks=[watching, Broken()],
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, orderly=True,
                            suspend_delay=0.1),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    assert watching.calls == [
        ("before", ["ok"], None), ("after", ["ok"], True),
        ("before", ["fails-once"], None), ("after", ["fails-once"], False),
        ("before", ["fails-once"], None), ("after", ["fails-once"], True),
    ]  # fmt: skip
    assert "consumer.hook_failed" in caplog.text


async def test_an_ordered_sends_context_names_its_sharding_key() -> None:
    seen = Stamping()
    options = ProducerOptions(max_message_size=1024)
    producer = Producer(namesrv="127.0.0.1:1", options=options, hooks=[seen])
    for send in (producer.send, producer.submit):  # (refused before any I/O)
        with pytest.raises(InvalidMessage):
            await send(Message(topic="T", body=bytes(2048)), sharding_key="k")
    with pytest.raises(InvalidMessage):
        await producer.send(Message(topic="T", body=bytes(2048)))
    assert [(c.ordered, c.sharding_key) for c in seen.ended] == [
        (True, "k"),
        (True, "k"),
        (False, None),
    ]
    assert all(isinstance(c.error, InvalidMessage) for c in seen.ended)
