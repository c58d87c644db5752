"""The 5.x controller's replies (GET_METADATA_INFO 1005, ELECT_MASTER 1002,
GET_SYNC_STATE_DATA 1006) as Java writes them (fastjson: unquoted integer map keys)."""

from __future__ import annotations

import json

import pytest

from rocketmq_actors.protocol.controller_bodies import (
    ControllerMetadata,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    ElectMasterResult,
    GetMetaDataResponseHeader,
    Replica,
    decode_sync_state_data,
    encode_broker_names,
)
from rocketmq_actors.protocol.errors import ProtocolError

A, B = "127.0.0.1:10911", "127.0.0.1:10915"


def test_metadata_from_the_response_header() -> None:
    meta = ControllerMetadata.from_ext({
        "group": "group1", "controllerLeaderId": "n0", "controllerLeaderAddress": "h:9878",
        "isLeader": "true", "peers": "n0:h:9878;n1:g:9878;",
    })  # fmt: skip
    assert (meta.group, meta.leader_id, meta.leader_addr, meta.is_leader) == (
        "group1", "n0", "h:9878", True)  # fmt: skip
    assert meta.peers == {"n0": "h:9878", "n1": "g:9878"}


def test_metadata_of_a_controller_without_leader() -> None:
    jraft = ControllerMetadata.from_ext({"peers": "127.0.0.1:9878;127.0.0.1:9868;"})
    assert jraft.peers == {"127.0.0.1:9878": "127.0.0.1:9878", "127.0.0.1:9868": "127.0.0.1:9868"}
    meta = ControllerMetadata.from_ext({"isLeader": "false", "peers": ""})
    assert (meta.leader_addr, meta.is_leader, meta.peers) == (None, False, {})
    with pytest.raises(ProtocolError):
        ControllerMetadata.from_ext({"peers": "no-id-here;"})


def test_metadata_fields_not_given_are_none() -> None:
    """makeCustomHeaderToNet leaves a null field out; JRaft says "" for no leader id."""
    meta = ControllerMetadata.from_ext({})
    assert meta == ControllerMetadata(group=None, leader_id=None, leader_addr=None,
                                      is_leader=False, peers={})  # fmt: skip
    jraft = ControllerMetadata.from_ext({"group": "jRaft-Controller", "controllerLeaderId": "",
                                         "isLeader": "false", "peers": "h:9878;"})  # fmt: skip
    assert (jraft.group, jraft.leader_id, jraft.leader_addr) == ("jRaft-Controller", None, None)
    assert ControllerMetadata.from_ext({"group": "", "controllerLeaderAddress": ""}) == meta


def test_the_metadata_header_is_a_typed_header() -> None:
    header = GetMetaDataResponseHeader(group="g", controller_leader_id="n0",
                                       controller_leader_address="h:9878", is_leader=True,
                                       peers="n0:h:9878;")  # fmt: skip
    ext = header.to_ext()
    assert ext == {"group": "g", "controllerLeaderId": "n0", "controllerLeaderAddress": "h:9878",
                   "isLeader": "true", "peers": "n0:h:9878;"}  # fmt: skip
    assert GetMetaDataResponseHeader.from_ext(ext) == header
    assert GetMetaDataResponseHeader.from_ext({}) == GetMetaDataResponseHeader()
    assert GetMetaDataResponseHeader.from_ext({"isLeader": "TRUE"}).is_leader is True


def test_the_elect_request_is_an_admin_trigger() -> None:
    header = ElectMasterRequestHeader(cluster_name="C", broker_name="broker-a", broker_id=2,
                                      invoke_time=5)  # fmt: skip
    assert header.to_ext() == {"clusterName": "C", "brokerName": "broker-a", "brokerId": "2",
                               "designateElect": "true", "invokeTime": "5"}  # fmt: skip


def test_a_new_election_with_its_member_group() -> None:
    ext = {"masterBrokerId": "2", "masterAddress": B, "masterEpoch": "3",
           "syncStateSetEpoch": "4"}  # fmt: skip
    body = (b'{"brokerMemberGroup":{"brokerAddrs":{2:"' + B.encode() + b'",1:"' + A.encode()
            + b'"},"brokerName":"broker-a","cluster":"C"},"syncStateSet":[2]}')  # fmt: skip
    result = ElectMasterResult.decode(ext, body, elected=True)
    assert result == ElectMasterResult(
        elected=True, master_broker_id=2, master_addr=B, master_epoch=3, sync_state_set_epoch=4,
        broker_addrs={1: A, 2: B}, sync_state_set=(2,),
    )  # fmt: skip
    assert list(result.broker_addrs) == [1, 2]


def test_a_kept_master_has_no_member_group() -> None:
    ext = {"masterBrokerId": "1", "masterAddress": A, "masterEpoch": "1",
           "syncStateSetEpoch": "2"}  # fmt: skip
    kept = ElectMasterResult.decode(ext, b'{"syncStateSet":[1,2]}', elected=False)
    assert (kept.elected, kept.master_broker_id, kept.broker_addrs, kept.sync_state_set) == (
        False, 1, {}, (1, 2))  # fmt: skip
    empty = ElectMasterResult.decode({}, b"", elected=False)
    assert (empty.master_broker_id, empty.master_addr, empty.master_epoch) == (None, None, None)
    assert empty.sync_state_set_epoch is None
    assert (empty.broker_addrs, empty.sync_state_set) == ({}, ())
    with pytest.raises(ProtocolError, match="masterEpoch") as caught:
        ElectMasterResult.decode({"masterEpoch": "x"}, b"", elected=True)
    assert caught.value.reason == "bad-header-field"


def test_the_elect_header_fields_not_given_are_none() -> None:
    """Java's fields are nullable (Long, String, Integer): a null one is left out."""
    ext = {"masterEpoch": "3", "syncStateSetEpoch": "4", "masterAddress": ""}
    result = ElectMasterResult.decode(ext, b"", elected=False)
    assert (result.master_broker_id, result.master_addr, result.master_epoch,
            result.sync_state_set_epoch) == (None, None, 3, 4)  # fmt: skip
    assert ElectMasterResponseHeader.from_ext({}) == ElectMasterResponseHeader()


@pytest.mark.parametrize("field", ["masterBrokerId", "masterEpoch", "syncStateSetEpoch"])
@pytest.mark.parametrize("raw", ["x", "null", "", "1.5"])
def test_a_bad_elect_header_number_is_a_protocol_error(field: str, raw: str) -> None:
    """The controller writes these with Long/Integer.toString and leaves a null out, so
    not even "null" or "" can come: anything but a decimal is a bad header."""
    ext = {"masterBrokerId": "1", "masterEpoch": "1", "syncStateSetEpoch": "1", field: raw}
    with pytest.raises(ProtocolError) as caught:
        ElectMasterResult.decode(ext, b'{"syncStateSet":[1]}', elected=True)
    assert caught.value.reason == "bad-header-field"
    assert field in str(caught.value)


def test_the_elect_header_is_a_typed_header() -> None:
    header = ElectMasterResponseHeader(master_broker_id=2, master_address=B, master_epoch=3,
                                       sync_state_set_epoch=4)  # fmt: skip
    ext = header.to_ext()
    assert ext == {"masterBrokerId": "2", "masterAddress": B, "masterEpoch": "3",
                   "syncStateSetEpoch": "4"}  # fmt: skip
    assert ElectMasterResponseHeader.from_ext(ext) == header


def test_sync_state_data_per_broker_set() -> None:
    replica = '{{"alive":{alive},"brokerAddress":"{addr}","brokerId":{id},"brokerName":"broker-a"}}'
    body = json.dumps({"replicasInfoTable": {"broker-a": {
        "masterBrokerId": 1, "masterAddress": A, "masterEpoch": 2, "syncStateSetEpoch": 3,
        "inSyncReplicas": [json.loads(replica.format(alive="true", addr=A, id=1))],
        "notInSyncReplicas": [json.loads(replica.format(alive="false", addr=B, id=2))],
    }}}).encode()  # fmt: skip
    info = decode_sync_state_data(body)["broker-a"]
    assert (info.master_broker_id, info.master_addr, info.master_epoch,
            info.sync_state_set_epoch) == (1, A, 2, 3)  # fmt: skip
    assert info.in_sync == (Replica(broker_id=1, addr=A, alive=True),)
    assert info.not_in_sync == (Replica(broker_id=2, addr=B, alive=False),)
    assert decode_sync_state_data(b"") == {}
    assert decode_sync_state_data(b'{"replicasInfoTable":{}}') == {}
    with pytest.raises(ProtocolError):
        decode_sync_state_data(b'{"replicasInfoTable":{"broker-a":[]}}')


def test_the_sync_state_request_body_is_a_json_list() -> None:
    assert json.loads(encode_broker_names(["broker-a", "broker-b"])) == ["broker-a", "broker-b"]
