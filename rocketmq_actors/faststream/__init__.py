"""A FastStream broker for RocketMQ (the ``faststream`` extra): :class:`RocketMQBroker`,
:data:`RocketMQMessage` (the handler parameter annotation; the class is
:class:`.message.RocketMQMessage`),
:class:`RocketMQRouter`, the in-memory :class:`TestRocketMQBroker`,
:class:`RequestTimeoutError` (``broker.request`` got no reply), and (with FastAPI)
:mod:`rocketmq_actors.faststream.fastapi`; FastStream's middlewares for OpenTelemetry and
Prometheus are in :mod:`rocketmq_actors.faststream.opentelemetry` and
:mod:`rocketmq_actors.faststream.prometheus`. See docs/faststream.md."""

from __future__ import annotations

from rocketmq_actors.extras import require

require("faststream", purpose="rocketmq_actors.faststream")  # its modules import it

from .annotations import RocketMQMessage  # noqa: E402
from .broker import RocketMQBroker  # noqa: E402
from .message import RocketMQReplyMessage  # noqa: E402
from .response import RocketMQResponse  # noqa: E402
from .router import RocketMQRoute, RocketMQRoutePublisher, RocketMQRouter  # noqa: E402
from .rpc import RequestTimeoutError  # noqa: E402
from .testing import TestRocketMQBroker  # noqa: E402

__all__ = [
    "RequestTimeoutError",
    "RocketMQBroker",
    "RocketMQMessage",
    "RocketMQReplyMessage",
    "RocketMQResponse",
    "RocketMQRoute",
    "RocketMQRoutePublisher",
    "RocketMQRouter",
    "TestRocketMQBroker",
]
