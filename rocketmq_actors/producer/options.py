"""What a producer has beside the shared :class:`~rocketmq_actors.cluster.options.ClientOptions`:
:class:`ProducerOptions`, a frozen value checked when it is built.

    options = ProducerOptions(send_timeout=5.0, compress_type="zstd", max_pending=256)
    async with Producer(group="orders", options=options) as producer: ...

A wrong value is a :class:`~rocketmq_actors.errors.ConfigError` naming the option, raised by
``ProducerOptions(...)`` itself, before any producer exists.
"""

from __future__ import annotations

from typing import Any

import attrs

from rocketmq_actors.cluster.options import count, instance_of, maybe_seconds, seconds
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.command import MAX_FRAME_SIZE
from rocketmq_actors.protocol.compression import CompressionType
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE
from rocketmq_actors.runtime.checks import check_int

__all__ = ["MAX_BODY_SIZE", "ProducerOptions"]

#: the largest ``max_message_size``: a send's frame is at most MAX_FRAME_SIZE, and its header
#: (properties of up to 32,767 bytes, each control character escaped to six) needs the rest
MAX_BODY_SIZE = MAX_FRAME_SIZE - 256 * 1024
#: the longest ``batch_max_delay`` (Java's ``batchMaxDelayMs`` bound)
MAX_BATCH_DELAY = 30.0


def _compress_type(kind: Any) -> Any:
    """``compress_type`` as given: an enum member or its name, any case (a value that is
    neither is left for the check, which names it)."""
    try:
        return CompressionType(kind.lower() if isinstance(kind, str) else kind)
    except (ValueError, TypeError):
        return kind


def _check_compress_type(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, CompressionType):
        names = ", ".join(repr(k.value) for k in CompressionType)
        raise ConfigError(f"compress_type must be one of {names}, got {value!r}")


@attrs.frozen(kw_only=True)
class ProducerOptions:
    """What a :class:`~rocketmq_actors.producer.Producer` (and a ``TransactionProducer``)
    takes beside its group, topics and serializer; times in seconds, sizes in bytes.

    * ``send_timeout`` (3.0): the budget of one send, retries included.
    * ``attempt_timeout`` (None): the bound of one attempt within ``send_timeout`` (None: what
      is left of it, as Java); an attempt on a silent broker is given up and the send retried
      on another broker, so the message may be stored twice. At most ``send_timeout``.
    * ``retry_times`` (2): extra attempts of a failed send (on another broker when possible).
    * ``retry_another_broker_when_not_store_ok`` (False): Java's option of that name: a send
      the broker stored but answered FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT or
      SLAVE_NOT_AVAILABLE is sent again on another broker (a possible duplicate).
    * ``compress_threshold`` (4096): bodies of this size or larger are compressed (0: never).
    * ``compress_level`` (5): zlib level (0-9), zstd level (0-22); LZ4 ignores it.
    * ``compress_type`` (``CompressionType.ZLIB``): a ``CompressionType`` or its name, any
      case (``"zlib"``, ``"lz4"``, ``"zstd"``); it is kept as the enum member.
    * ``max_message_size`` (4 MiB, the broker's default): larger bodies (and batches) are
      refused before I/O; at most :data:`MAX_BODY_SIZE` (a frame holds 16 MiB, its header
      included).
    * ``max_pending`` (1024): sends admitted by ``submit`` / ``send_nowait`` and not answered
      yet; past that ``submit`` waits and ``send_nowait`` raises ``ProducerBusy``.
    * ``max_pending_bytes`` (64 MiB): the same bound, in bytes.
    * ``latency_fault_tolerance`` (False): avoid brokers that were slow or failing lately
      (Java's ``sendLatencyFaultEnable``).
    * ``auto_batch`` (False): single sends (``send``, ``submit``, ``send_nowait`` without a key
      or selector) to one topic are joined into SEND_BATCH_MESSAGE frames, each message
      still with its own future and :class:`SendResult` (Java's ``autoBatch``). Not joined:
      ordered, delayed, timer, compressed and ``wait_store=False`` messages. A batch fails or
      succeeds whole. A ``send`` is then admitted as a ``submit`` is (``max_pending``).
    * ``batch_max_delay`` (0.01, as Java's ``batchMaxDelayMs`` default): how long a batch waits
      for more messages after its first (less once it is full); at most 30 s. 0 (which Java
      refuses): a batch leaves as soon as a sender task is free, with what joined it by then -
      no delay added, and under load the batches grow by themselves.
    * ``batch_max_bytes`` (32 KiB, Java's ``batchMaxBytes``): a batch leaves once its body
      reaches this size (and never grows past ``max_message_size``); at most 2 MiB, as Java.
    * ``total_batch_max_bytes`` (32 MiB, Java's ``totalBatchMaxBytes``): while the batches not
      yet answered hold this many bytes, further messages are sent alone.
    """

    send_timeout: float = attrs.field(default=3.0, validator=seconds())
    attempt_timeout: float | None = attrs.field(default=None, validator=maybe_seconds())
    retry_times: int = attrs.field(default=2, validator=count(minimum=0))
    retry_another_broker_when_not_store_ok: bool = attrs.field(
        default=False, validator=instance_of(bool)
    )
    compress_threshold: int = attrs.field(default=4096, validator=count(minimum=0))
    compress_level: int = attrs.field(default=5)
    compress_type: CompressionType = attrs.field(
        default=CompressionType.ZLIB, converter=_compress_type, validator=_check_compress_type
    )
    max_message_size: int = attrs.field(
        default=MAX_MESSAGE_SIZE, validator=count(maximum=MAX_BODY_SIZE)
    )
    max_pending: int = attrs.field(default=1024, validator=count())
    max_pending_bytes: int = attrs.field(default=64 * 1024 * 1024, validator=count())
    latency_fault_tolerance: bool = attrs.field(default=False, validator=instance_of(bool))
    auto_batch: bool = attrs.field(default=False, validator=instance_of(bool))
    batch_max_delay: float = attrs.field(default=0.01, validator=seconds(allow_zero=True))
    batch_max_bytes: int = attrs.field(default=32 * 1024, validator=count(maximum=2 * 1024 * 1024))
    total_batch_max_bytes: int = attrs.field(default=32 * 1024 * 1024, validator=count())

    def __attrs_post_init__(self) -> None:
        if self.attempt_timeout is not None and self.attempt_timeout > self.send_timeout:
            raise ConfigError(
                f"attempt_timeout ({self.attempt_timeout}) must not exceed send_timeout "
                f"({self.send_timeout}): it bounds one attempt of a send"
            )
        if self.batch_max_delay > MAX_BATCH_DELAY:
            raise ConfigError(
                f"batch_max_delay must be at most {MAX_BATCH_DELAY} s, got {self.batch_max_delay}"
            )
        # the level is checked against the type it is used with: zlib 0-9, zstd 0-22 (0 is
        # zstd's default); LZ4 ignores it
        maximum = 22 if self.compress_type is CompressionType.ZSTD else 9
        check_int("compress_level", self.compress_level, minimum=0, maximum=maximum)

    def evolve(self, **changes: Any) -> ProducerOptions:
        """A copy with ``changes`` (checked as the constructor checks them)."""
        return attrs.evolve(self, **changes)
