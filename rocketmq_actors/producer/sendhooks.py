"""A producer's send hooks (:mod:`rocketmq_actors.hooks`): their context made before a send
and completed after it, whichever way the send was asked for."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio

from rocketmq_actors.hooks import SendContext, SendHook, SendMode, send_hooks, with_inner
from rocketmq_actors.protocol.messages import Message

from .future import SendFuture

Call = Callable[[SendFuture], object]

__all__ = ["SendHooks"]

T = TypeVar("T")


class SendHooks:
    def __init__(self, group: str, hooks: Sequence[SendHook]) -> None:
        self.group = group
        self._hooks = send_hooks(hooks)

    def __bool__(self) -> bool:
        return self._hooks is not None

    def add_inner(self, inner: Sequence[object]) -> None:
        """The client's own hooks (spans, message trace), inside the application's."""
        self._hooks = with_inner(self._hooks, inner, "producer.hook_failed")

    def before(
        self,
        message: Message,
        mode: SendMode,
        sharding_key: str | None = None,
        selector: object = None,
        *,
        messages: Sequence[Message] | None = None,
    ) -> SendContext | None:
        """The send's context, after every ``before_send`` (None without hooks)."""
        if self._hooks is None:
            return None
        hooked = SendContext(self.group, message, mode, messages=messages,
                             ordered=sharding_key is not None or selector is not None,
                             sharding_key=sharding_key)  # fmt: skip
        self._hooks.before("before_send", hooked)
        return hooked

    def after(self, hooked: SendContext | None, result: Any, error: BaseException | None) -> None:
        if hooked is not None and self._hooks is not None:
            hooked.result, hooked.error = result, error
            hooked.elapsed = time.monotonic() - hooked.began
            self._hooks.after("after_send", hooked)

    async def around(self, hooked: SendContext | None, send: Awaitable[T]) -> T:
        """``await send``, then ``after_send`` with its result or its error."""
        try:
            result = await send
        except BaseException as exc:
            self.after(hooked, None, exc)
            raise
        self.after(hooked, result, None)
        return result

    @staticmethod
    def message(hooked: SendContext | None, message: Message) -> Message:
        """The message to send: as ``before_send`` left it."""
        return message if hooked is None else hooked.message

    @staticmethod
    def batch(hooked: SendContext | None, messages: Sequence[Message]) -> Sequence[Message]:
        """A batch's messages as ``before_send`` left them (``messages``: a batch's hooks
        replace those; ``message`` is only its first, to read)."""
        if hooked is None or hooked.messages is None:
            return messages
        return hooked.messages

    def ending(self, hooked: SendContext | None, callback: Call | None) -> Call | None:
        """An admitted send's callback that calls ``after_send`` first: the senders call it
        once the send has ended (sent, failed, or failed by a stop), even when a caller
        cancelled the future it awaited meanwhile (then its error is the cancellation)."""
        if hooked is None or (callback is not None and not callable(callback)):
            return callback  # (a callback that cannot be called: the senders refuse it)

        def ended(future: SendFuture) -> object:
            if future.cancelled():
                self.after(hooked, None, anyio.get_cancelled_exc_class()())
            else:
                error = future.exception()
                self.after(hooked, None if error else future.result(), error)
            return None if callback is None else callback(future)

        # (a failing callback is logged under its own name: SendEnds follows __wrapped__)
        ended.__wrapped__ = callback  # type: ignore[attr-defined]
        return ended
