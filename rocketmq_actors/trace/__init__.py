"""Message trace the RocketMQ way: the Java client's trace records (Pub, SubBefore, SubAfter,
EndTransaction) written to ``RMQ_SYS_TRACE_TOPIC`` (or a topic of one's own), where
``mqadmin queryMsgTraceById`` and the dashboard read them. Turned on with ``trace=True`` or
``trace_topic=...`` in a client's ``ClientOptions``. The records' layout is
:mod:`rocketmq_actors.protocol.trace`; the sending actor :mod:`.dispatcher` (given the
client's send function: this package imports no producer); the hooks :mod:`.hooks`.
(OpenTelemetry spans are :mod:`rocketmq_actors.tracing`, independent of this.)
"""

from __future__ import annotations

from .dispatcher import Send, SendFactory, TraceDispatcher
from .hooks import ConsumeTrace, SendTrace, trace_topic

__all__ = ["ConsumeTrace", "Send", "SendFactory", "SendTrace", "TraceDispatcher", "trace_topic"]
