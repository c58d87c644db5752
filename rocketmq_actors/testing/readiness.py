"""When a launched server is ready: the NameServer answers, a broker is listed by it.

Blocking checks for the launcher's polling loop (LocalCluster._poll); each returns False
rather than raising while the server is still on its way.
"""

from __future__ import annotations

from rocketmq_actors.logs import get_logger

from . import probe
from .serverconf import BrokerProcessInfo

__all__ = ["BrokerReadiness", "namesrv_answers"]

log = get_logger("rocketmq_actors.testing")


def namesrv_answers(namesrv: str) -> bool:
    try:
        probe.cluster_info(namesrv, timeout=2.0)
    except probe.ProbeError:
        return False
    return True


class BrokerReadiness:
    """Until the NameServer lists ``info``; with ``elected`` (controller mode, first start)
    until it lists it as its broker set's master. A 5.x broker is told to register at once
    the first time it is seen booted (see :func:`probe.register_broker_now`)."""

    def __init__(
        self,
        namesrv: str,
        info: BrokerProcessInfo,
        *,
        elected: bool,
        is_4x: bool,
        permission: str,
    ) -> None:
        self.namesrv = namesrv
        self.info = info
        self.elected = elected
        self.permission = permission
        # 4.x registers at once; in controller mode the controller chooses the id first
        self._nudged = is_4x or info.broker_id is None

    def __call__(self, booted: bool) -> bool:
        if not booted:
            return False
        if not self._nudged:
            self._nudged = True
            self._register_now()
        try:
            cluster = probe.cluster_info(self.namesrv, timeout=2.0)
        except probe.ProbeError:
            return False
        info = self.info
        data = cluster.brokers.get(info.broker_name or "")
        if data is None:
            return False
        if info.broker_id is None:  # controller mode: the controller chose the id
            wanted = 0 if self.elected else None
            return any(
                addr == info.addr and wanted in (None, broker_id)
                for broker_id, addr in data.broker_addrs.items()
            )
        return data.broker_addrs.get(info.broker_id) == info.addr

    def _register_now(self) -> None:
        """Best effort: without it a 5.x broker registers 10 s after it booted; a broker
        that refuses (ACL, TLS) registers then."""
        try:
            probe.register_broker_now(self.info.addr, self.permission, timeout=5.0)
        except probe.ProbeError as exc:
            log.debug("cluster.register_now.failed", name=self.info.name, error=str(exc))
