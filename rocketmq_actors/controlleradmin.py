"""The 5.x controller (controller mode: the controller elects each broker set's master), as
``mqadmin`` asks it (re-exported by :mod:`rocketmq_actors.admin`):

* :func:`controller_metadata` - CONTROLLER_GET_METADATA_INFO (1005) to the controller
  given (``getControllerMetaData``): its group, leader and peers;
* :func:`sync_state_data` - CONTROLLER_GET_SYNC_STATE_DATA (1006) to the leader
  (``getSyncStateSet``): per broker set, its master, epochs and replicas in sync;
* :func:`elect_master` - CONTROLLER_ELECT_MASTER (1002) to the leader (``electMaster``,
  ``mqadmin electMaster``): make a node the master of its broker set.

The controller may run embedded in a NameServer (``enableControllerInNamesrv``; its own
port) or on its own; the address is the one brokers have as ``controllerAddr``. Requests
that read or change state go to the leader the controller given names, as Java's
``MQClientAPIImpl`` does.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rocketmq_actors.adminbase import call, check_addr
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import BrokerError, ConfigError
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.controller_bodies import (
    ControllerMetadata,
    ElectMasterRequestHeader,
    ElectMasterResult,
    ReplicasInfo,
    decode_sync_state_data,
    encode_broker_names,
)
from rocketmq_actors.runtime.checks import check_int

__all__ = [
    "ControllerRefused",
    "controller_metadata",
    "elect_master",
    "sync_state_data",
]


class ControllerRefused(BrokerError):
    """The controller refused the request (``code`` and ``remark`` are its answer):
    CONTROLLER_ELECT_MASTER_FAILED (no eligible node), CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    (a broker set it does not know), a request to an address that runs no controller
    (REQUEST_CODE_NOT_SUPPORTED), or no leader elected yet. Retriable only for
    CONTROLLER_NOT_LEADER (the leadership moved)."""

    def __init__(self, addr: str, code: int, remark: str | None) -> None:
        super().__init__(addr, code, remark)
        self.retriable = code == ResponseCode.CONTROLLER_NOT_LEADER


async def controller_metadata(instance: ClientInstance, controller: str) -> ControllerMetadata:
    """The controller group, leader and peers, as the controller at ``controller`` knows
    them (``mqadmin getControllerMetaData``)."""
    addr = check_addr("controller address", controller)
    reply = await call(instance, addr, RequestCode.CONTROLLER_GET_METADATA_INFO,
                       refused=ControllerRefused)  # fmt: skip
    return ControllerMetadata.from_ext(reply.ext_fields)


async def _leader(instance: ClientInstance, controller: str) -> str:
    meta = await controller_metadata(instance, controller)
    if meta.leader_addr is None:
        raise ControllerRefused(controller, ResponseCode.CONTROLLER_NOT_LEADER,
                                "the controller group has no leader yet")  # fmt: skip
    return meta.leader_addr


async def sync_state_data(
    instance: ClientInstance, controller: str, broker_names: Sequence[str]
) -> dict[str, ReplicasInfo]:
    """The replication state of each broker set named (Java's ``getInSyncStateData``, what
    ``mqadmin getSyncStateSet`` prints): its master, epochs, the nodes in the SyncStateSet
    and the others, each alive or not. A name the controller does not know is left out."""
    addr = check_addr("controller address", controller)
    if isinstance(broker_names, str) or not broker_names:
        raise ConfigError(f"broker_names must be a non-empty list, not {broker_names!r}")
    for name in broker_names:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a broker name must be a non-empty string, not {name!r}")
    leader = await _leader(instance, addr)
    reply = await call(instance, leader, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA,
                       body=encode_broker_names(broker_names),
                       refused=ControllerRefused)  # fmt: skip
    return decode_sync_state_data(reply.body)


async def elect_master(
    instance: ClientInstance, controller: str, cluster: str, broker_name: str, broker_id: int
) -> ElectMasterResult:
    """Ask the controller's leader to make node ``broker_id`` the master of broker set
    ``broker_name`` of ``cluster`` (``mqadmin electMaster``): it is chosen when it is
    alive and in the SyncStateSet (or eligible by the controller's unclean-election
    setting); otherwise the controller elects by its own policy. When the master stays -
    ``broker_id`` is the master already, say - the result's ``elected`` is False (Java's
    ``electMaster`` throws the controller's CONTROLLER_MASTER_STILL_EXIST instead); other
    refusals are :class:`ControllerRefused`."""
    addr = check_addr("controller address", controller)
    for what, value in (("cluster", cluster), ("broker_name", broker_name)):
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{what} must be a non-empty string, not {value!r}")
    check_int("broker_id", broker_id, minimum=0)
    header = ElectMasterRequestHeader(
        cluster_name=cluster, broker_name=broker_name, broker_id=broker_id,
        invoke_time=int(time.time() * 1000),
    )  # fmt: skip
    leader = await _leader(instance, addr)
    reply = await call(instance, leader, RequestCode.CONTROLLER_ELECT_MASTER, header.to_ext(),
                       accept=(ResponseCode.CONTROLLER_MASTER_STILL_EXIST,),
                       refused=ControllerRefused)  # fmt: skip
    return ElectMasterResult.decode(dict(reply.ext_fields), reply.body,
                                    elected=reply.code == ResponseCode.SUCCESS)  # fmt: skip
