"""A batch's send hooks: what ``before_send`` leaves in ``messages`` is what is sent, the
client's own span hook (which injects the trace context) included."""

from __future__ import annotations

import attrs

from rocketmq_actors.hooks import SendContext
from rocketmq_actors.producer.sendhooks import SendHooks
from rocketmq_actors.protocol.messages import Message


class Upper:
    def before_send(self, context: SendContext) -> None:
        assert context.messages is not None
        context.messages = [attrs.evolve(m, body=m.body.upper()) for m in context.messages]

    def after_send(self, context: SendContext) -> None:
        pass


class Injecting:
    """As the span hook does: each message replaced by one carrying a property."""

    def before_send(self, context: SendContext) -> None:
        assert context.messages is not None
        context.messages = [attrs.evolve(m, properties={"traceparent": "t"})
                            for m in context.messages]  # fmt: skip

    def after_send(self, context: SendContext) -> None:
        pass


def test_a_batch_sends_the_messages_its_hooks_left() -> None:
    hooks = SendHooks("G", [Upper()])
    hooks.add_inner([Injecting()])
    batch = [Message(topic="T", body=b"a"), Message(topic="T", body=b"b")]
    hooked = hooks.before(batch[0], "batch", messages=batch)
    sent = hooks.batch(hooked, batch)
    assert [m.body for m in sent] == [b"A", b"B"]  # every one, the first too
    assert all(m.properties == {"traceparent": "t"} for m in sent)  # inside the span's
