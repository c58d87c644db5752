"""What every client shares: :class:`ClientOptions`, a frozen value checked when it is built.

    options = ClientOptions(namesrv="127.0.0.1:9876", namespace="shop", shutdown_timeout=5.0)
    async with Producer(group="orders", client=options) as producer: ...

A wrong value is a :class:`~rocketmq_actors.errors.ConfigError` naming the option, raised by
``ClientOptions(...)`` itself (attrs validators), before any client exists. The client kinds
have options of their own beside these (``ProducerOptions``, ``PushOptions``, ...); the
attrs helpers they are built with are here too (:func:`seconds`, :func:`count`, ...).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import validate_topic
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.runtime.checks import check_int, check_timeout

from .namesrv import parse_namesrv

__all__ = [
    "ClientOptions",
    "count",
    "instance_of",
    "maybe_seconds",
    "seconds",
]

T = TypeVar("T")


def seconds(*, allow_zero: bool = False) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """Validator: a finite number of seconds above zero (or zero, with ``allow_zero``)."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        check_timeout(attribute.name, value, allow_zero=allow_zero)

    return check


def maybe_seconds(*, allow_zero: bool = False) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """Validator: None, or what :func:`seconds` accepts."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            check_timeout(attribute.name, value, allow_zero=allow_zero)

    return check


def count(
    *, minimum: int = 1, maximum: int | None = None
) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """Validator: an ``int`` within ``[minimum, maximum]`` (a ``bool`` is not one)."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        check_int(attribute.name, value, minimum=minimum, maximum=maximum)

    return check


def instance_of(
    kind: type[Any] | tuple[type[Any], ...], *, optional: bool = False, what: str | None = None
) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """Validator: an instance of ``kind`` (or None, with ``optional``), else a
    :class:`ConfigError` saying what was expected (``what``, else the type's name)."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) and kind is not bool and bool not in _tuple(kind):
            ok = False
        else:
            ok = isinstance(value, kind)
        if not ok:
            expected = what or " or ".join(k.__name__ for k in _tuple(kind))
            raise ConfigError(
                f"{attribute.name} must be {expected}, not {type(value).__name__} ({value!r})"
            )

    return check


def _tuple(kind: type[Any] | tuple[type[Any], ...]) -> tuple[type[Any], ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _check_namesrv(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        parse_namesrv(value)  # (a malformed address is a ConfigError naming it)


def _check_namespace(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value:
        raise ConfigError(f"namespace must be a non-empty string or None, not {value!r}")
    validate_topic(value, error=ConfigError)  # (Java's Validators: a namespace is a name too)


def _check_trace_topic(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        validate_topic(value, error=ConfigError)


def _check_callable(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise ConfigError(f"{attribute.name} must be callable, not {type(value).__name__}")


def _namesrv(value: str | Sequence[str] | None) -> str | tuple[str, ...] | None:
    """A list of addresses kept as a tuple (the options are frozen and hashable)."""
    if value is None or isinstance(value, str):
        return value
    return tuple(value) if isinstance(value, Sequence) else value


@attrs.frozen(kw_only=True)
class ClientOptions:
    """What every client (producer or consumer) shares.

    * ``namesrv``: the NameServer addresses (``"host:port"``, several joined by ``;``, or a
      list); None reads ``$NAMESRV_ADDR`` when the client is built, as the Java client does.
    * ``namespace``: prefixes every topic and group on the wire (Java's namespace).
    * ``instance_name``: the client instance's name (the client id is ``ip@instance_name``).
    * ``ssl_context``: TLS to every NameServer and broker; ``credentials``: ACL signing.
    * ``request_timeout``: an admin or offset request to a broker (seconds).
    * ``shutdown_timeout``: how long a stop may take, graceful steps included (seconds).
    * ``tracing``: OpenTelemetry spans (extra ``otel``); ``trace`` / ``trace_topic``: RocketMQ
      message trace records (read by ``mqadmin queryMsgTraceById``); ``client_metrics``: the
      RocketMQ 5.x clients' metrics too (:mod:`rocketmq_actors.clientmetrics`).
    * ``on_error(error)``: called once when the client fails (an actor gave up).
    """

    namesrv: str | tuple[str, ...] | None = attrs.field(
        default=None, converter=_namesrv, validator=_check_namesrv
    )
    namespace: str | None = attrs.field(default=None, validator=_check_namespace)
    instance_name: str | None = attrs.field(
        default=None, validator=instance_of(str, optional=True, what="a string")
    )
    ssl_context: ssl.SSLContext | None = attrs.field(
        default=None, validator=instance_of(ssl.SSLContext, optional=True)
    )
    credentials: AclCredentials | None = attrs.field(
        default=None, validator=instance_of(AclCredentials, optional=True)
    )
    request_timeout: float = attrs.field(default=3.0, validator=seconds())
    shutdown_timeout: float = attrs.field(default=10.0, validator=seconds())
    tracing: bool = attrs.field(default=False, validator=instance_of(bool))
    trace: bool = attrs.field(default=False, validator=instance_of(bool))
    client_metrics: bool = attrs.field(default=False, validator=instance_of(bool))
    trace_topic: str | None = attrs.field(default=None, validator=_check_trace_topic)
    on_error: Callable[[BaseException], object] | None = attrs.field(
        default=None, validator=_check_callable, eq=False
    )

    def evolve(self, **changes: Any) -> ClientOptions:
        """A copy with ``changes`` (checked as the constructor checks them)."""
        return attrs.evolve(self, **changes)
