"""Hooks an application registers around sends and handler calls: the Java client's
``SendMessageHook`` and ``ConsumeMessageHook``.

A send hook is any object with ``before_send(context)`` and ``after_send(context)``; a consume
hook one with ``before_consume(context)`` and ``after_consume(context)``. Give them to the
client: ``Producer(hooks=[...])``, ``PushConsumer(hooks=[...])``, ``PopConsumer(hooks=[...])``.

- ``before_send`` runs before the message is encoded, so it may add properties
  (``context.message.properties``); ``after_send`` once the send has ended, with its
  ``result`` or its ``error``. Both run on the event loop: keep them short.
- ``before_consume`` runs before the handler is called with ``context.messages``;
  ``after_consume`` after it returned or raised, with ``success``, ``status`` (Java's
  ``ConsumeReturnType``: ``SUCCESS``, ``FAILED`` when a message was nacked, ``EXCEPTION``,
  ``TIME_OUT``) and the ``error`` it raised.
- ``after_send`` and ``after_consume`` have ``elapsed``: the seconds since ``before_*``.
- ``context.props`` is the hook's own scratch space, carried from before to after (a start
  time, a span).
- A hook that raises is logged (``producer.hook_failed``, ``consumer.hook_failed``) and never
  fails the send or the handler, as in the Java client.

The client's own tracing is built on the same hooks: OpenTelemetry spans
(``ClientOptions(tracing=True)``, :mod:`rocketmq_actors.tracing`) and message trace records
(``trace=True``, :mod:`rocketmq_actors.trace`). They run before the application's
``before_*`` and after its ``after_*``, so the application's hooks run inside the span.

Where ours differs from Java's: a send hook runs once per send, not once per attempt (the
result names the queue that stored it); ``send_oneway`` calls ``after_send`` once the request
is written, its result the message id (a ``str``); a ``TransactionProducer``'s half messages
and request-reply (``request``, ``submit_request``, ``reply``) are not hooked yet. An admitted
send's ``after_send`` comes when the send has ended, as its ``callback`` does: if a caller
cancelled the future it awaited meanwhile, its ``error`` is that cancellation.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.logs import FailureLog, get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import Message
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["ConsumeContext", "ConsumeHook", "SendContext", "SendHook"]

#: how a send was asked for (:attr:`SendContext.mode`)
SendMode = Literal["sync", "async", "batch", "oneway"]

log = get_logger("rocketmq_actors.hooks")


@attrs.define(slots=True, eq=False)
class SendContext:
    """One send, as its hooks see it."""

    #: the producer group
    group: str
    #: the message (``before_send`` may change its properties)
    message: Message
    #: ``sync`` (``send``), ``async`` (``submit``, ``send_nowait``, and a ``send`` that
    #: auto-batching joins), ``batch`` (one call per ``send_batch``: ``message`` is its first
    #: message), ``oneway``
    mode: SendMode
    #: the result, once stored (``after_send``)
    result: Any = None
    #: why the send failed (``after_send``)
    error: BaseException | None = None
    #: the hook's own values, from before to after
    props: dict[str, Any] = attrs.field(factory=dict)
    #: ``batch``: every message of the batch (``before_send`` may replace them: for a batch,
    #: these are sent, and ``message`` is only the first as it was given, to read)
    messages: Sequence[Message] | None = None
    #: an ordered send (by sharding key or selector), and its sharding key
    ordered: bool = False
    sharding_key: str | None = None
    #: seconds from ``before_send`` to the send's end (``after_send``)
    elapsed: float | None = None
    #: (when ``before_send`` was called: what ``elapsed`` counts from)
    began: float = attrs.field(factory=time.monotonic, repr=False)


@attrs.define(slots=True, eq=False)
class ConsumeContext:
    """One handler call, as its hooks see it."""

    #: the consumer group
    group: str
    #: the messages given to the handler
    messages: Sequence[MessageExt]
    #: the queue they came from
    queue: MessageQueue | None
    #: did the handler consume them all (``after_consume``; None before)
    success: bool | None = None
    #: the hook's own values, from before to after
    props: dict[str, Any] = attrs.field(factory=dict)
    #: ``SUCCESS``, ``FAILED`` (a message nacked), ``EXCEPTION`` or ``TIME_OUT``
    #: (``after_consume``)
    status: str | None = None
    #: what the handler raised (``after_consume``)
    error: BaseException | None = None
    #: seconds from ``before_consume`` to the handler's end (``after_consume``)
    elapsed: float | None = None


@runtime_checkable
class SendHook(Protocol):
    """What ``Producer(hooks=...)`` takes."""

    def before_send(self, context: SendContext) -> None:
        """Before the send is encoded (it may replace ``context.message``, or a batch's
        ``context.messages``); on the event loop, so keep it short."""

    def after_send(self, context: SendContext) -> None:
        """Once the send has ended: ``context.result`` or ``context.error``, and ``elapsed``."""


@runtime_checkable
class ConsumeHook(Protocol):
    """What ``PushConsumer(hooks=...)`` and ``PopConsumer(hooks=...)`` take."""

    def before_consume(self, context: ConsumeContext) -> None:
        """Before the handler is called with ``context.messages``; on the event loop."""

    def after_consume(self, context: ConsumeContext) -> None:
        """After the handler call: ``success``, ``status``, ``error`` and ``elapsed``."""


def checked_hooks(hooks: Sequence[Any], kind: type[Any], client: str) -> tuple[Any, ...]:
    """``hooks`` as a tuple, each one a ``kind``: a :class:`ConfigError` otherwise."""
    if isinstance(hooks, str | bytes) or not isinstance(hooks, Sequence):
        raise ConfigError(f"{client} hooks must be a list of {kind.__name__} objects")
    for hook in hooks:
        if not isinstance(hook, kind):
            methods = " and ".join(
                name for name in vars(kind) if name.startswith(("before_", "after_"))
            )  # fmt: skip
            raise ConfigError(
                f"a {client} hook needs the methods {methods}: {type(hook).__name__} lacks them"
            )
    return tuple(hooks)


class Hooks:
    """Calls a client's hooks, each failure logged (a line per hook and event per interval):
    ``inner`` ones (the client's own tracing) before the application's ``before_*`` and
    after its ``after_*``."""

    def __init__(self, hooks: Sequence[Any], event: str, inner: Sequence[Any] = ()) -> None:
        self.hooks = tuple(hooks)
        self._before = (*inner, *self.hooks)
        self._after = (*self.hooks, *reversed(inner))
        self._event = event
        self._failures = FailureLog()

    def before(self, method: str, context: object) -> None:
        for hook in self._before:
            try:
                getattr(hook, method)(context)
            except Exception as exc:
                self._failed(hook, method, exc)

    def after(self, method: str, context: object) -> None:
        """Every hook's ``after_*``: one that raises an ``Exception`` is logged; a
        ``KeyboardInterrupt`` or ``SystemExit`` is raised once every other hook has run (the
        client's own end their spans)."""
        interrupt: BaseException | None = None
        for hook in self._after:
            try:
                getattr(hook, method)(context)
            except Exception as exc:
                self._failed(hook, method, exc)
            except BaseException as exc:
                interrupt = interrupt or exc
        if interrupt is not None:
            raise interrupt

    def _failed(self, hook: object, method: str, exc: Exception) -> None:
        name = f"{type(hook).__qualname__}.{method}"
        suppressed = self._failures.admit(name)
        if suppressed is not None:
            log.error(self._event, hook=name, error=type(exc).__name__,
                      suppressed=suppressed, exc_info=exc)  # fmt: skip


def send_hooks(hooks: Sequence[Any]) -> Hooks | None:
    checked = checked_hooks(hooks, SendHook, "producer")
    return Hooks(checked, "producer.hook_failed") if checked else None


def consume_hooks(hooks: Sequence[Any]) -> Hooks | None:
    checked = checked_hooks(hooks, ConsumeHook, "consumer")
    return Hooks(checked, "consumer.hook_failed") if checked else None


def with_inner(hooks: Hooks | None, inner: Sequence[Any], event: str) -> Hooks | None:
    """``hooks`` (None: none) with the client's own ``inner`` ones; None when neither."""
    if not inner:
        return hooks
    return Hooks(hooks.hooks if hooks is not None else (), event, inner)
