"""The 5.x controller's administration replies (controller mode: automatic master election),
as Java's ``MQClientAPIImpl`` reads them:

* CONTROLLER_GET_METADATA_INFO (1005): a ``GetMetaDataResponseHeader`` - the controller
  group, its leader and its DLedger peers;
* CONTROLLER_ELECT_MASTER (1002): an ``ElectMasterRequestHeader`` in, an
  ``ElectMasterResponseHeader`` and an ``ElectMasterResponseBody`` (the broker set and its
  SyncStateSet) out;
* CONTROLLER_GET_SYNC_STATE_DATA (1006): a JSON list of broker names in, a
  ``BrokerReplicasInfo`` out (per broker name: master, epochs, in-sync and other replicas).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .bodies import _body_decoder, _field, _object
from .errors import ProtocolError
from .headers import Header, wire

__all__ = [
    "ControllerMetadata",
    "ElectMasterRequestHeader",
    "ElectMasterResponseHeader",
    "ElectMasterResult",
    "GetMetaDataResponseHeader",
    "Replica",
    "ReplicasInfo",
    "decode_sync_state_data",
    "encode_broker_names",
]


@attrs.define(kw_only=True, slots=True)
class GetMetaDataResponseHeader(Header):
    """CONTROLLER_GET_METADATA_INFO (1005) reply header, as the controller writes it
    (``makeCustomHeaderToNet`` leaves a null field out: every field may be missing).
    ``isLeader`` is a Java ``boolean``, missing read as false as Java reads it."""

    group: str | None = wire("group", default=None)
    controller_leader_id: str | None = wire("controllerLeaderId", default=None)
    controller_leader_address: str | None = wire("controllerLeaderAddress", default=None)
    is_leader: bool = wire("isLeader", default=False)
    peers: str | None = wire("peers", default=None)


def _peers(text: str | None) -> dict[str, str]:
    peers = {}
    # "n0:127.0.0.1:9878;n1:...;" (DLedgerController.getControllerMetadata: id:address;),
    # or "127.0.0.1:9878;..." (JRaftController's: the addresses alone, named by themselves)
    for entry in (text or "").split(";"):
        peer = entry.strip()
        if not peer:
            continue
        if peer.count(":") == 1:
            peers[peer] = peer
            continue
        peer_id, sep, addr = peer.partition(":")
        if not sep or not addr:
            raise ProtocolError("bad-header-field", f"peers: {peer!r} is not id:address")
        peers[peer_id] = addr
    return peers


@attrs.frozen(kw_only=True)
class ControllerMetadata:
    """CONTROLLER_GET_METADATA_INFO (1005) reply: Java's ``GetMetaDataResponseHeader``.
    ``peers`` maps each DLedger peer id to its address; ``is_leader`` is whether the
    controller asked is the leader (requests that change state go to ``leader_addr``).
    A field not given - missing, or empty as JRaft's leader id without a leader - is None."""

    group: str | None
    leader_id: str | None
    leader_addr: str | None
    is_leader: bool
    peers: Mapping[str, str]

    @classmethod
    def from_ext(cls, ext: Mapping[str, str]) -> ControllerMetadata:
        header = GetMetaDataResponseHeader.from_ext(ext)
        return cls(
            group=header.group or None,
            leader_id=header.controller_leader_id or None,
            leader_addr=header.controller_leader_address or None,
            is_leader=header.is_leader,
            peers=_peers(header.peers),
        )


@attrs.define(kw_only=True, slots=True)
class ElectMasterRequestHeader(Header):
    """CONTROLLER_ELECT_MASTER (1002), as ``ElectMasterRequestHeader.ofAdminTrigger`` builds
    it: ``designateElect`` makes ``broker_id`` the preferred new master when it is eligible."""

    cluster_name: str = wire("clusterName")
    broker_name: str = wire("brokerName")
    broker_id: int = wire("brokerId")
    designate_elect: bool = wire("designateElect", default=True)
    invoke_time: int | None = wire("invokeTime", default=None)


@attrs.define(kw_only=True, slots=True)
class ElectMasterResponseHeader(Header):
    """CONTROLLER_ELECT_MASTER (1002) reply header (5.1.1+; Java's fields are nullable
    ``Long``/``String``/``Integer``, a null one left out): the master and the epochs."""

    master_broker_id: int | None = wire("masterBrokerId", default=None)
    master_address: str | None = wire("masterAddress", default=None)
    master_epoch: int | None = wire("masterEpoch", default=None)
    sync_state_set_epoch: int | None = wire("syncStateSetEpoch", default=None)


@attrs.frozen(kw_only=True)
class ElectMasterResult:
    """CONTROLLER_ELECT_MASTER (1002) reply. ``elected`` is False when the controller kept
    the master it had (its CONTROLLER_MASTER_STILL_EXIST answer: the master is alive and
    eligible), True when it made ``master_broker_id`` the master. ``broker_addrs`` (broker
    id -> address) is the broker set as the controller knows it, filled only on a new
    election; ``sync_state_set`` the ids of the replicas in sync."""

    elected: bool
    master_broker_id: int | None
    master_addr: str | None
    master_epoch: int | None
    sync_state_set_epoch: int | None
    broker_addrs: Mapping[int, str]
    sync_state_set: tuple[int, ...]

    @classmethod
    @_body_decoder
    def decode(cls, ext: Mapping[str, str], body: bytes, *, elected: bool) -> ElectMasterResult:
        """The ``ElectMasterResponseHeader`` fields and the ``ElectMasterResponseBody``
        (``{"brokerMemberGroup": {"cluster", "brokerName", "brokerAddrs": {id: addr}},
        "syncStateSet": [ids]}``; either may be missing)."""
        header = ElectMasterResponseHeader.from_ext(ext)
        # (fastjson writes brokerAddrs' keys unquoted: _object reads them)
        obj: Mapping[Any, Any] = _object(body, "elect master body") if body else {}
        group = obj.get("brokerMemberGroup") or {}
        if not isinstance(group, Mapping):
            raise ProtocolError("bad-body", "brokerMemberGroup is not an object")
        addrs = _field(group, "brokerAddrs", dict, {})
        in_sync = _field(obj, "syncStateSet", list, [])
        return cls(
            elected=elected,
            master_broker_id=header.master_broker_id,
            master_addr=header.master_address or None,
            master_epoch=header.master_epoch,
            sync_state_set_epoch=header.sync_state_set_epoch,
            broker_addrs=dict(sorted((int(k), str(v)) for k, v in addrs.items())),
            sync_state_set=tuple(sorted(int(i) for i in in_sync)),
        )


@attrs.frozen(kw_only=True)
class Replica:
    """One node of a broker set: Java's ``BrokerReplicasInfo.ReplicaIdentity``; ``alive``
    as the controller's heartbeats tell (None from a controller that does not say)."""

    broker_id: int
    addr: str
    alive: bool | None


@attrs.frozen(kw_only=True)
class ReplicasInfo:
    """One broker set's replication state: Java's ``BrokerReplicasInfo.ReplicasInfo`` - its
    master, the epochs, the replicas in the SyncStateSet and the others."""

    master_broker_id: int | None
    master_addr: str | None
    master_epoch: int
    sync_state_set_epoch: int
    in_sync: tuple[Replica, ...]
    not_in_sync: tuple[Replica, ...]


def _replicas(info: Mapping[str, Any], key: str) -> tuple[Replica, ...]:
    rows = _field(info, key, list, [])
    out = []
    for row in rows:
        if not isinstance(row, Mapping):
            raise ProtocolError("bad-body", f"{key} holds a replica that is not an object")
        alive = row.get("alive")
        out.append(Replica(
            broker_id=_field(row, "brokerId", int, -1),
            addr=_field(row, "brokerAddress", str, ""),
            alive=alive if isinstance(alive, bool) else None,
        ))  # fmt: skip
    return tuple(sorted(out, key=lambda r: r.broker_id))


@_body_decoder
def decode_sync_state_data(body: bytes) -> dict[str, ReplicasInfo]:
    """CONTROLLER_GET_SYNC_STATE_DATA (1006) reply, a ``BrokerReplicasInfo``: broker name ->
    its replicas (a broker name the controller does not know is left out)."""
    if not body:
        return {}
    table = _field(_object(body, "sync state data"), "replicasInfoTable", dict, {})
    out = {}
    for name, info in sorted(table.items()):
        if not isinstance(info, Mapping):
            raise ProtocolError("bad-body", f"broker {name!r} replicas info is not an object")
        master = info.get("masterBrokerId")
        out[str(name)] = ReplicasInfo(
            master_broker_id=master if isinstance(master, int) and master >= 0 else None,
            master_addr=_field(info, "masterAddress", str, "") or None,
            master_epoch=_field(info, "masterEpoch", int, 0),
            sync_state_set_epoch=_field(info, "syncStateSetEpoch", int, 0),
            in_sync=_replicas(info, "inSyncReplicas"),
            not_in_sync=_replicas(info, "notInSyncReplicas"),
        )
    return out


def encode_broker_names(names: Sequence[str]) -> bytes:
    """CONTROLLER_GET_SYNC_STATE_DATA (1006) body: the broker names, a JSON list."""
    return json.dumps(list(names)).encode()
