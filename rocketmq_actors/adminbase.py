"""What the administration modules share (internal): a request that must succeed, and the
master of every broker of a cluster."""

from __future__ import annotations

from collections.abc import Mapping

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import (
    AccessDenied,
    BrokerError,
    ConfigError,
    RocketMQError,
    broker_error,
)
from rocketmq_actors.protocol.addresses import parse_addr
from rocketmq_actors.protocol.bodies import BrokerData
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError

__all__ = ["NoMaster", "call", "check_addr", "masters", "nodes", "on_each", "topic_masters"]


class NoMaster(RocketMQError):
    """No master broker to send to: the cluster name is unknown, or it has no master."""


async def call(
    instance: ClientInstance, addr: str, code: int, ext: dict[str, str] | None = None,
    *, accept: tuple[int, ...] = (), timeout: float | None = None, body: bytes = b"",
    refused: type[BrokerError] | None = None,
) -> RemotingCommand:  # fmt: skip
    """One request to ``addr``; a reply code other than SUCCESS (or one of ``accept``) is
    the broker's typed error: :class:`~rocketmq_actors.errors.AccessDenied` when it refused
    who we are, else ``refused`` (a module's own ``BrokerError`` class) or ``BrokerError``."""
    request = RemotingCommand.request(code, ext or {}, body)
    reply = await instance.request(addr, request, timeout)
    if reply.code != ResponseCode.SUCCESS and reply.code not in accept:
        error = broker_error(addr, reply.code, reply.remark)
        if refused is not None and not isinstance(error, AccessDenied):
            raise refused(addr, reply.code, reply.remark)
        raise error
    return reply


async def on_each(
    instance: ClientInstance, targets: Mapping[str, str], code: int,
    ext: dict[str, str] | None = None, *, body: bytes = b"",
    refused: type[BrokerError] | None = None,
) -> list[str]:  # fmt: skip
    """One change asked of each target (name -> address) in turn, as :func:`call`; the names
    asked. The error of one that refuses says, in a note, which targets took the change
    before it: nothing undoes theirs, as with mqadmin."""
    done: list[str] = []
    for name, addr in targets.items():
        try:
            await call(instance, addr, code, ext, body=body, refused=refused)
        except RocketMQError as exc:
            if done:
                exc.add_note(f"applied on {', '.join(done)} before {name} failed; "
                             f"not on {name} nor the ones after it")  # fmt: skip
            raise
        done.append(name)
    return done


async def _brokers(instance: ClientInstance, cluster: str | None) -> tuple[list[BrokerData], str]:
    """The brokers of ``cluster`` (every cluster when None), by name; and what a "none
    there" error says of where it looked."""
    info = await instance.namesrv.cluster_info()
    names = (
        info.clusters.get(cluster, ())
        if cluster is not None
        else tuple(n for members in info.clusters.values() for n in members)
    )
    where = f"cluster {cluster!r}" if cluster is not None else "any cluster"
    found = [data for name in sorted(set(names)) if (data := info.brokers.get(name))]
    return found, f"{where}; clusters: {sorted(info.clusters)}"


async def masters(instance: ClientInstance, cluster: str | None = None) -> dict[str, str]:
    """Broker name -> master address, of ``cluster`` (every cluster when None)."""
    brokers, where = await _brokers(instance, cluster)
    out = {b.broker_name: b.master_addr for b in brokers if b.master_addr is not None}
    if not out:
        raise NoMaster(f"no master broker in {where}")
    return out


async def nodes(instance: ClientInstance, cluster: str | None = None) -> list[str]:
    """Every node's address (masters and slaves) of ``cluster`` (every cluster when None)."""
    brokers, where = await _brokers(instance, cluster)
    found = sorted({addr for b in brokers for addr in b.broker_addrs.values()})
    if not found:
        raise NoMaster(f"no broker in {where}")
    return found


async def topic_masters(instance: ClientInstance, topic: str) -> dict[str, str]:
    """Broker name -> master address, of every broker of ``topic``'s route that has a master
    (:class:`~rocketmq_actors.errors.TopicNotFound` for a topic the NameServer does not know)."""
    route = await instance.namesrv.topic_route(topic)
    return {b.broker_name: b.master_addr for b in route.broker_datas if b.master_addr is not None}


def check_addr(what: str, addr: object) -> str:
    """``addr`` if it is a ``host:port`` an admin request may go to, else a
    :class:`~rocketmq_actors.errors.ConfigError` naming ``what`` (before any I/O)."""
    try:
        parse_addr(addr)
    except ProtocolError as exc:
        raise ConfigError(f"{what}: {exc}") from None
    assert isinstance(addr, str)  # (parse_addr takes strings only)
    return addr
