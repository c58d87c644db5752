"""Options of the ``rocketmq`` Spark data source (and of :func:`publish_dataframe`), checked
on the driver before any task runs. Spark passes option values as strings.

| option | default | meaning |
|---|---|---|
| ``namesrv`` | required | ``host:port[;host:port]`` |
| ``topic`` | - | default topic (a ``topic`` column overrides it per row) |
| ``group`` | ``rocketmq_actors_spark`` | producer group |
| ``namespace`` | - | namespace wrapped around topic and group |
| ``sendTimeout`` | ``3`` | seconds per send, retries included |
| ``retryTimes`` | ``2`` | retries of a failed send on other brokers |
| ``chunkSize`` / ``maxChunks`` | ``128`` / ``4`` | in flight per task: their product |
| ``batchSize`` | ``32`` | rows without a sharding key go in batches of this many (1: one by one) |
| ``failOnError`` | ``true`` | a task whose sends failed fails (Spark retries it: at-least-once) |
| ``ignoreExtraColumns`` | ``false`` | drop columns that are not message fields |
| ``tls`` / ``tlsInsecure`` | ``false`` | TLS to NameServer and brokers; skip certificate checks |
| ``logLevel`` | ``WARNING`` | structlog level in executor workers (unless they configured it) |
| ``accessKey`` / ``secretKey`` | - | ACL credentials: every request is signed (give both) |
| ``compressType`` | ``ZLIB`` | ``ZLIB``, ``LZ4`` or ``ZSTD``: bodies over the threshold |
| ``compressLevel`` | ``5`` | zlib 0-9, zstd 0-22 (LZ4 ignores it) |
| ``compressThreshold`` | ``4096`` | bodies of this many bytes or more are compressed (0: none) |
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

import attrs

from rocketmq_actors.cluster.namesrv import parse_namesrv
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import validate_group
from rocketmq_actors.producer.options import ProducerOptions
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.compression import CompressionType

__all__ = ["OptionError", "SinkOptions"]

_KNOWN = {
    "namesrv", "topic", "group", "namespace", "sendtimeout", "retrytimes", "chunksize",
    "maxchunks", "batchsize", "failonerror", "ignoreextracolumns", "tls", "tlsinsecure",
    "accesskey", "secretkey", "loglevel", "compresstype", "compresslevel", "compressthreshold",
    "path", "checkpointlocation", "queryname",  # Spark's own, passed along to every source
}  # fmt: skip


class OptionError(ConfigError):
    """A ``rocketmq`` data source option is missing or wrong."""


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name)
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"option {name!r} must be true or false, not {raw!r}")
    return value == "true"


def _number(options: Mapping[str, str], name: str, default: float, *, minimum: float) -> Any:
    """Option ``name`` (looked up lower-cased) as an int, or a float when ``default`` is one;
    at least ``minimum``."""
    raw = options.get(name.lower())
    if raw is None:
        return default
    try:
        value = float(raw) if isinstance(default, float) else int(raw)
    except ValueError:
        raise OptionError(f"option {name!r} must be a number, not {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {name!r} must be at least {minimum}, not {raw!r}")
    return value


def _level(raw: str) -> str:
    if str(raw).upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise OptionError(f"option 'logLevel' must be DEBUG, INFO, WARNING or ERROR, not {raw!r}")
    return str(raw).upper()


def _compression(options: Mapping[str, str]) -> tuple[CompressionType, int, int]:
    """``compressType``, ``compressLevel`` and ``compressThreshold``, checked as the producer's
    ``compress_type`` / ``compress_level`` / ``compress_threshold`` (Java's defaults)."""
    raw = options.get("compresstype", "ZLIB")
    try:
        kind = CompressionType(str(raw).strip().lower())
    except ValueError:
        raise OptionError(f"option 'compressType' must be ZLIB, LZ4 or ZSTD, not {raw!r}") from None
    level = _number(options, "compressLevel", 5, minimum=0)
    most = 22 if kind is CompressionType.ZSTD else 9
    if level > most:
        raise OptionError(
            f"option 'compressLevel' must be at most {most} for {kind.name}, not {level}"
        )
    return kind, level, _number(options, "compressThreshold", 4096, minimum=0)


def tls_context(tls: bool, insecure: bool) -> ssl.SSLContext | None:
    """The ``tls`` / ``tlsInsecure`` options (the writer's and the reader's) as a context."""
    if not tls:
        return None
    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


@attrs.frozen
class SinkOptions:
    namesrv: str
    topic: str | None
    group: str
    namespace: str | None
    send_timeout: float
    retry_times: int
    chunk_size: int
    max_chunks: int
    batch_size: int
    fail_on_error: bool
    ignore_extra_columns: bool
    tls: bool
    tls_insecure: bool
    log_level: str = "WARNING"
    access_key: str | None = None
    secret_key: str | None = attrs.field(default=None, repr=False)  # never in logs or plans
    compress_type: CompressionType = CompressionType.ZLIB
    compress_level: int = 5
    compress_threshold: int = 4096

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        lowered = {str(k).lower(): v for k, v in options.items()}
        unknown = sorted(set(lowered) - _KNOWN)
        if unknown:
            raise OptionError(f"unknown option(s) {unknown} for the rocketmq data source")
        access_key = lowered.get("accesskey") or None
        secret_key = lowered.get("secretkey") or None
        if (access_key is None) != (secret_key is None):
            raise OptionError("ACL credentials need both options 'accessKey' and 'secretKey'")
        namesrv = lowered.get("namesrv")
        if not namesrv:
            raise OptionError("option 'namesrv' is required (host:port[;host:port...])")
        try:
            parse_namesrv(namesrv)
            group = lowered.get("group") or "rocketmq_actors_spark"
            validate_group(group)
        except ValueError as exc:
            raise OptionError(str(exc)) from exc
        compress_type, compress_level, compress_threshold = _compression(lowered)
        return cls(
            namesrv=namesrv,
            topic=lowered.get("topic") or None,
            group=group,
            namespace=lowered.get("namespace") or None,
            send_timeout=_number(lowered, "sendTimeout", 3.0, minimum=0.001),
            retry_times=_number(lowered, "retryTimes", 2, minimum=0),
            chunk_size=_number(lowered, "chunkSize", 128, minimum=1),
            max_chunks=_number(lowered, "maxChunks", 4, minimum=1),
            batch_size=_number(lowered, "batchSize", 32, minimum=1),
            fail_on_error=_bool(lowered, "failonerror", True),
            ignore_extra_columns=_bool(lowered, "ignoreextracolumns", False),
            tls=_bool(lowered, "tls", False),
            tls_insecure=_bool(lowered, "tlsinsecure", False),
            log_level=_level(lowered.get("loglevel", "WARNING")),
            access_key=access_key,
            secret_key=secret_key,
            compress_type=compress_type,
            compress_level=compress_level,
            compress_threshold=compress_threshold,
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        return tls_context(self.tls, self.tls_insecure)

    def producer_options(self) -> dict[str, Any]:
        """The ``BlockingProducer``'s arguments."""
        return {
            "namesrv": self.namesrv,
            "group": self.group,
            "options": ProducerOptions(
                send_timeout=self.send_timeout,
                retry_times=self.retry_times,
                max_pending=max(self.chunk_size * self.max_chunks, 1),
                compress_type=self.compress_type,
                compress_level=self.compress_level,
                compress_threshold=self.compress_threshold,
            ),
            "client": ClientOptions(
                namespace=self.namespace,
                ssl_context=self.ssl_context(),
                credentials=(
                    AclCredentials(self.access_key, self.secret_key)
                    if self.access_key and self.secret_key
                    else None
                ),
            ),
        }
