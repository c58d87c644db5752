"""The typed exception hierarchy every public API raises.

Two questions matter to a caller, and every error answers them:

* ``retriable`` - may the same operation succeed if tried again (possibly elsewhere)?
* ``outcome_unknown`` - may the request have taken effect although no success was seen
  (a send that timed out may have been stored)? When true, a retry can duplicate.
"""

from __future__ import annotations

from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.errors import ProtocolError, RocketMQError

__all__ = [
    "AccessDenied",
    "AllocationFailed",
    "BrokerError",
    "ClientClosed",
    "ClientNotStarted",
    "ClientStateError",
    "ConfigError",
    "ConnectError",
    "ConnectionLost",
    "InternalError",
    "InvalidMessage",
    "InvalidRecallHandle",
    "InvalidSubscription",
    "NameServerUnavailable",
    "ProducerBusy",
    "ProtocolError",
    "RecallDisabled",
    "RecallFailed",
    "RecallTooLate",
    "ReplyTimeout",
    "RequestTimeout",
    "RocketMQError",
    "SendFailed",
    "StartupFailed",
    "SupervisorGaveUp",
    "TopicNotFound",
    "WriteTimeout",
    "WrongEventLoop",
    "broker_error",
    "unwrap_group",
]


class ConfigError(RocketMQError, ValueError):
    """A constructor or call argument that cannot work (a negative timeout, a plain ``def``
    handler, a malformed address); raised before any I/O."""


class InvalidSubscription(ConfigError):
    """A subscription expression the broker cannot evaluate (an SQL92 expression that does not
    compile, or SQL92 on a broker with ``enablePropertyFilter=false``): refused when the
    consumer starts or subscribes, as Java's ``checkClientInBroker`` does, never silently
    consumed unfiltered or not at all."""


class ClientStateError(RocketMQError):
    """The client is not in a state to serve the call."""


class ClientNotStarted(ClientStateError):
    """Used before ``start()`` (or outside ``async with``)."""


class WrongEventLoop(ClientStateError):
    """Called from an event loop other than the one the client was started on (or from a
    non-asyncio backend): a client's tasks and connections belong to one loop."""


class StartupFailed(RocketMQError):
    """``start()`` (or entering ``async with``) failed for a reason that is not itself a
    :class:`RocketMQError`; ``__cause__`` is that reason."""


class InternalError(RocketMQError):
    """An unexpected error inside the client (a bug), caught at an actor's boundary so that it
    fails one call instead of the client; ``__cause__`` is the original exception."""


class ConnectError(RocketMQError):
    """No connection could be opened: nothing was sent."""

    retriable = True

    def __init__(self, addr: str, reason: str) -> None:
        self.addr = addr
        super().__init__(f"cannot connect to {addr}: {reason}")


class ConnectionLost(RocketMQError):
    """The connection died while the request was in flight; ``__cause__`` says why."""

    retriable = True
    outcome_unknown = True

    def __init__(self, addr: str, reason: str) -> None:
        self.addr = addr
        super().__init__(f"connection to {addr} lost: {reason}")


class RequestTimeout(RocketMQError):
    """No response within the timeout; the server may still have acted on the request."""

    retriable = True
    outcome_unknown = True

    def __init__(self, addr: str, code: int, timeout: float) -> None:
        self.addr = addr
        self.code = code
        self.timeout = timeout
        super().__init__(f"request {code} to {addr} got no response within {timeout:.3f}s")


class ReplyTimeout(RequestTimeout):
    """``Producer.request``: no reply came within the timeout. Usually the request was sent
    (``sent``; the responder may still have acted on it) and its correlation entry is freed:
    a late reply is acknowledged to the broker and dropped. When finding the topic's brokers
    took the whole timeout, it was not sent at all (``sent`` and ``outcome_unknown`` are
    false)."""

    retriable = False

    def __init__(
        self, topic: str, correlation_id: str, timeout: float, *, sent: bool = True
    ) -> None:
        self.addr = ""
        self.code = 326  # PUSH_REPLY_MESSAGE_TO_CLIENT: the push that did not come
        self.timeout = timeout
        self.topic = topic
        self.correlation_id = correlation_id
        self.sent = self.outcome_unknown = sent
        RocketMQError.__init__(
            self,
            f"no reply to request {correlation_id} on {topic!r} within {timeout:.3f}s"
            if sent
            else f"request {correlation_id} on {topic!r} not sent: finding the topic's brokers "
            f"took its {timeout:.3f}s",
        )


class WriteTimeout(RocketMQError):
    """The peer stopped reading: the request could not be written within its timeout (the
    connection's outgoing buffer is full). Nothing was sent."""

    retriable = True

    def __init__(self, addr: str, timeout: float) -> None:
        self.addr = addr
        self.timeout = timeout
        super().__init__(f"{addr} took no bytes for {timeout:.3f}s: the request was not written")


class ClientClosed(ClientStateError):
    """The client, or the connection, was closed before or during the call (``__cause__`` is
    the error the client stopped with, when it failed)."""


class NameServerUnavailable(RocketMQError):
    """No NameServer answered (and no cached route could serve the call)."""

    retriable = True


_RETRIABLE_CODES = frozenset(
    {
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.NO_PERMISSION,
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
        ResponseCode.FLOW_CONTROL,
        ResponseCode.GO_AWAY,
    }
)


class BrokerError(RocketMQError):
    """A server answered with an error code; the request was refused, not lost."""

    def __init__(self, addr: str, code: int, remark: str | None) -> None:
        self.addr = addr
        self.code = code
        self.remark = remark
        self.retriable = code in _RETRIABLE_CODES
        try:
            name = ResponseCode(code).name
        except ValueError:
            name = str(code)
        super().__init__(f"{addr} answered {name}: {remark or '(no remark)'}")


class AccessDenied(BrokerError):
    """The server refused the request's credentials: a wrong or missing access key or
    secret (ACL), or an identity the ACL does not let do what it asks (ACL 2.0
    authorization: "User:u has no permission to access Topic:t"). Trying again with the same
    credentials cannot help."""

    def __init__(self, addr: str, code: int, remark: str | None) -> None:
        super().__init__(addr, code, remark)
        self.retriable = False


# how 5.x (NO_PERMISSION) and 4.x (SYSTEM_ERROR with an AclException) word a refused identity
_ACCESS_DENIED_REMARKS = (
    "signature",
    "accesskey",
    "access key",
    "username",
    "user not",
    "authentication",
    "aclexception",
    "no permission to access",  # 5.3+ ACL 2.0 authorization (AclAuthorizationHandler)
)


def broker_error(addr: str, code: int, remark: str | None) -> BrokerError:
    """The error for a server's error answer: :class:`AccessDenied` when it refused who we
    are, else :class:`BrokerError`."""
    text = (remark or "").lower()
    if code in (ResponseCode.NO_PERMISSION, ResponseCode.SYSTEM_ERROR) and any(
        word in text for word in _ACCESS_DENIED_REMARKS
    ):
        return AccessDenied(addr, code, remark)
    return BrokerError(addr, code, remark)


class TopicNotFound(RocketMQError):
    """The NameServer knows no route for the topic."""

    def __init__(self, topic: str, detail: str = "") -> None:
        self.topic = topic
        super().__init__(f"no route for topic {topic!r}" + (f", {detail}" if detail else ""))


class InvalidMessage(RocketMQError, ValueError):
    """A message (or its topic, properties, delay) that cannot be sent; raised before any I/O."""


class UnsupportedByBroker(InvalidMessage):
    """The message needs a feature the target broker's version lacks - timer delivery
    (``deliver_at_ms`` / ``delay_ms``) on a 4.x broker, which would store it as a plain message
    and deliver it at once. Refused before the message is written (not retriable: use
    ``delay_level`` there)."""

    def __init__(
        self, feature: str, addr: str, version: str, *, needs: str = "a RocketMQ 5.x broker"
    ) -> None:
        self.feature = feature
        self.addr = addr
        self.broker_version = version
        super().__init__(f"{feature} needs {needs}; {addr} runs {version}")


class AllocationFailed(RocketMQError):
    """A consumer's allocation strategy raised, or returned something that is not a list of
    the topic's queues; the rebalancer keeps the topic's previous assignment and logs it."""


class InvalidRecallHandle(InvalidMessage):
    """What was given as a recall handle is not one (a ``SendResult.recall_handle``), or it
    names another topic than the one given; raised before any I/O."""


class RecallFailed(BrokerError):
    """The broker refused a recall (RECALL_MESSAGE); ``code`` and ``remark`` are its answer."""


class RecallTooLate(RecallFailed):
    """The handle's delivery time has passed: the message was delivered (or is being
    delivered) and can no longer be recalled (the broker's "timestamp invalid")."""

    def __init__(self, addr: str, code: int, remark: str | None) -> None:
        super().__init__(addr, code, remark)
        self.retriable = False


class RecallDisabled(RecallFailed):
    """The broker does not allow recalls: its ``recallMessageEnable`` is false (the default)."""

    def __init__(self, addr: str, code: int, remark: str | None) -> None:
        super().__init__(addr, code, remark)
        self.retriable = False  # (NO_PERMISSION is retriable for a send, not here)


class SendFailed(RocketMQError):
    """Every attempt to send failed. ``outcome_unknown`` is true when an attempt may have stored
    the message (a timeout or a connection lost mid-request): a retry may then duplicate it.
    ``__cause__`` is the last attempt's error; ``attempts`` lists every attempt's error."""

    def __init__(self, topic: str, attempts: list[RocketMQError]) -> None:
        self.topic = topic
        self.attempts = attempts
        self.outcome_unknown = any(a.outcome_unknown for a in attempts)
        self.retriable = all(a.retriable for a in attempts)
        last = attempts[-1] if attempts else None
        state = "outcome unknown" if self.outcome_unknown else "not stored"
        super().__init__(
            f"send to {topic!r} failed after {len(attempts)} attempt(s), {state}: {last}"
        )


class ProducerBusy(RocketMQError):
    """``Producer.send_nowait`` could not admit the message at once: ``max_pending`` sends
    (or ``max_pending_bytes``) are admitted and unanswered, or an ordered send's queue cannot
    be chosen without waiting (its topic's route was never looked up). Nothing was sent.
    Retriable: try again once sends have completed, or call ``submit``, which waits."""

    retriable = True


class SupervisorGaveUp(RocketMQError):
    """A supervised child exceeded its restart intensity and the supervisor escalated."""

    def __init__(self, supervisor: str, key: object, restarts: int, period: float) -> None:
        self.supervisor = supervisor
        self.key = key
        super().__init__(
            f"{supervisor}: child {key!r} restarted {restarts} times within {period:g}s; giving up"
        )


def unwrap_group(exc: BaseException) -> BaseException:
    """The single leaf of nested one-member exception groups (task groups wrap errors)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
