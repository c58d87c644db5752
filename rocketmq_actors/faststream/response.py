"""What a FastStream publish carries to RocketMQ: the command, and a handler's response."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from faststream.response.publish_type import PublishType
from faststream.response.response import PublishCommand, Response

from rocketmq_actors.consumer.core.settlement import Delay

if TYPE_CHECKING:
    from faststream._internal.basic_types import SendableMessage

__all__ = ["RocketMQPublishCommand", "RocketMQResponse", "as_keys"]


def as_keys(keys: str | Sequence[str] | None) -> tuple[str, ...]:
    if keys is None:
        return ()
    return (keys,) if isinstance(keys, str) else tuple(keys)


class RocketMQResponse(Response):
    """A handler's return value with RocketMQ fields (keys, tags, delay, sharding key) for the
    message its publishers send."""

    def __init__(
        self,
        body: SendableMessage,
        *,
        headers: dict[str, str] | None = None,
        correlation_id: str | None = None,
        keys: str | Sequence[str] | None = None,
        tags: str | None = None,
        delay: Delay | None = None,
        sharding_key: str | None = None,
    ) -> None:
        super().__init__(body=body, headers=headers, correlation_id=correlation_id)
        self.keys, self.tags, self.delay = as_keys(keys), tags, delay
        self.sharding_key = sharding_key

    def as_publish_command(self) -> RocketMQPublishCommand:
        return RocketMQPublishCommand(
            self.body,
            headers=self.headers,
            correlation_id=self.correlation_id,
            keys=self.keys,
            tags=self.tags,
            delay=self.delay,
            sharding_key=self.sharding_key,
            _publish_type=PublishType.PUBLISH,
        )


class RocketMQPublishCommand(PublishCommand):
    """One message to send: FastStream's command plus the RocketMQ fields. ``answers``: the
    received request this command replies to (its reply goes by RocketMQ's request-reply
    protocol, not to a topic)."""

    def __init__(
        self,
        message: SendableMessage,
        *,
        topic: str = "",
        keys: str | Sequence[str] | None = None,
        tags: str | None = None,
        delay: Delay | None = None,
        sharding_key: str | None = None,
        headers: dict[str, str] | None = None,
        correlation_id: str | None = None,
        reply_to: str = "",
        timeout: float | None = None,
        _publish_type: PublishType,
    ) -> None:
        super().__init__(
            body=message,
            destination=topic,
            correlation_id=correlation_id,
            headers=headers,
            reply_to=reply_to,
            _publish_type=_publish_type,
        )
        self.keys, self.tags, self.delay = as_keys(keys), tags, delay
        self.sharding_key, self.timeout = sharding_key, timeout
        self.answers: Any = None

    @classmethod
    def from_cmd(cls, cmd: PublishCommand) -> RocketMQPublishCommand:
        if isinstance(cmd, RocketMQPublishCommand):
            return cmd
        extra: dict[str, Any] = {}
        for name in ("keys", "tags", "delay", "sharding_key", "timeout"):
            if (value := getattr(cmd, name, None)) is not None:
                extra[name] = value
        return cls(
            cmd.body,
            topic=cmd.destination,
            headers=cmd.headers,
            correlation_id=cmd.correlation_id,
            reply_to=cmd.reply_to,
            _publish_type=cmd.publish_type,
            **extra,
        )
