"""A handler call's hooks (rocketmq_actors.hooks): the outcome they are told, and the client's
own hooks (the OpenTelemetry ``process`` span) around the application's."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_actors.consumer.core.dispatch import Dispatcher
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.hooks import ConsumeContext, Hooks, consume_hooks
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.tracing import Tracing

from .test_process_queue import _msg


class Recorder:
    def __init__(self, name: str, calls: list[str] | None = None) -> None:
        self.name = name
        self.calls = calls if calls is not None else []
        self.ended: list[ConsumeContext] = []
        self.current_span: Any = None

    def before_consume(self, context: ConsumeContext) -> None:
        self.calls.append(f"{self.name}.before")
        from opentelemetry import trace

        self.current_span = trace.get_current_span()

    def after_consume(self, context: ConsumeContext) -> None:
        self.calls.append(f"{self.name}.after")
        self.ended.append(context)


def test_the_clients_own_hooks_wrap_the_applications() -> None:
    calls: list[str] = []
    user = [Recorder("u1", calls), Recorder("u2", calls)]
    inner = [Recorder("i1", calls), Recorder("i2", calls)]
    hooks = Hooks(user, "consumer.hook_failed", inner)
    hooks.before("before_consume", None)
    hooks.after("after_consume", None)
    assert calls == ["i1.before", "i2.before", "u1.before", "u2.before",
                     "u1.after", "u2.after", "i2.after", "i1.after"]  # fmt: skip


def _dispatcher(handler: Any, hook: Recorder, *, tracing: Tracing | None = None) -> Dispatcher:
    return Dispatcher("G", handler=handler, batch_handler=None, consume_timeout=None,
                      tracing=tracing, fail=lambda exc: None,
                      hooks=consume_hooks([hook]))  # fmt: skip


@pytest.mark.parametrize(
    ("how", "status", "error"),
    [("return", "SUCCESS", None), ("nack", "FAILED", None), ("raise", "EXCEPTION", KeyError)],
)
async def test_after_consume_tells_the_status_the_error_and_the_time(
    how: str, status: str, error: type[BaseException] | None
) -> None:
    async def handle(message: ReceivedMessage[bytes]) -> None:
        if how == "nack":
            message.nack()
        elif how == "raise":
            raise KeyError("boom")

    hook = Recorder("h")
    ok = await _dispatcher(handle, hook).invoke([_msg(7)])
    assert ok is (how == "return")
    (context,) = hook.ended
    assert context.status == status and context.success is (status == "SUCCESS")
    assert type(context.error) is error if error else context.error is None
    assert context.elapsed is not None and context.elapsed >= 0
    assert [m.queue_offset for m in context.messages] == [7]


async def test_an_applications_hook_runs_inside_the_process_span() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    seen: list[Any] = []

    async def handle(message: MessageExt) -> None:
        seen.append(trace.get_current_span())

    hook = Recorder("h")
    await _dispatcher(handle, hook, tracing=Tracing("G", model="clustering")).invoke([_msg(1)])
    assert seen[0].get_span_context().is_valid  # the handler runs in the process span
    assert hook.current_span is seen[0]  # and so does the application's before_consume
    assert not trace.get_current_span().get_span_context().is_valid  # restored after it


def test_an_interrupt_in_an_after_hook_lets_the_clients_own_end_first() -> None:
    calls: list[str] = []

    class Interrupting(Recorder):
        def after_consume(self, context: ConsumeContext) -> None:
            super().after_consume(context)
            raise KeyboardInterrupt

    hooks = Hooks([Interrupting("u", calls)], "consumer.hook_failed", [Recorder("span", calls)])
    with pytest.raises(KeyboardInterrupt):
        hooks.after("after_consume", None)
    assert calls == ["u.after", "span.after"]  # the span ended, then the interrupt
