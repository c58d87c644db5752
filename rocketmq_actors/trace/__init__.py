"""Message trace the RocketMQ way: the Java client's trace records (Pub, SubBefore, SubAfter,
EndTransaction) written to ``RMQ_SYS_TRACE_TOPIC`` (or a topic of one's own), where
``mqadmin queryMsgTraceById`` and the dashboard read them. Turned on with ``trace=True`` or
``trace_topic=...`` on Producer, TransactionProducer and PullConsumer (a PushConsumer's
``ClientOptions``). The
records' layout is :mod:`rocketmq_actors.protocol.trace`; the sending actor
:mod:`.dispatcher`; the hooks :mod:`.hooks`. (OpenTelemetry spans are
:mod:`rocketmq_actors.tracing`, independent of this.)
"""

from __future__ import annotations

from .dispatcher import TraceDispatcher, instance_sender
from .hooks import ConsumeTrace, SendTrace, trace_topic

__all__ = ["ConsumeTrace", "SendTrace", "TraceDispatcher", "instance_sender", "trace_topic"]
