"""The lease bookkeeping of the shared ClientInstance (no broker: nothing here starts)."""

from __future__ import annotations

import gc

import pytest

from rocketmq_actors.cluster import shared
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.producer import Producer

NAMESRV = "127.0.0.1:1"  # never dialled: no member here starts


def test_members_of_one_setting_share_an_instance_until_the_last_lease_ends() -> None:
    first = Producer(namesrv=NAMESRV, group="lease_a")
    second = Producer(namesrv=NAMESRV, group="lease_b")
    assert first.instance is second.instance
    instance = first.instance
    del first
    gc.collect()
    assert Producer(namesrv=NAMESRV, group="lease_c").instance is instance  # (second holds it)
    del second
    gc.collect()  # every member of it collected, never started: its leases ended
    assert Producer(namesrv=NAMESRV, group="lease_a").instance is not instance


def test_a_group_already_on_the_instance_gets_another() -> None:
    first = Producer(namesrv=NAMESRV, group="lease_same")
    second = Producer(namesrv=NAMESRV, group="lease_same")
    assert first.instance is not second.instance
    third = Producer(namesrv=NAMESRV, group="lease_other")
    assert third.instance is first.instance


def test_other_settings_are_another_instance() -> None:
    first = Producer(namesrv=NAMESRV, group="lease_x")
    assert Producer(namesrv="127.0.0.1:2", group="lease_y").instance is not first.instance


def test_a_bad_namesrv_is_refused_and_leaves_nothing_behind() -> None:
    with pytest.raises(ConfigError):
        Producer(namesrv="not an address", group="lease_bad")
    assert not any(key[0] == ("not an address",) for key in shared._entries)


def test_a_collection_inside_a_locked_section_only_queues_the_lease() -> None:
    """A garbage collection may run a member's finalizer while this thread holds the
    registry's lock (building an instance allocates): it must not wait for that lock (the
    unit suite once hung there). Its lease ends at the next lease taken."""
    member = Producer(namesrv=NAMESRV, group="lease_locked")
    lease, instance = member._group._lease, member.instance
    assert lease is not None
    with shared._lock:
        shared._finalize(lease)  # (returns: nothing here takes the lock)
    assert Producer(namesrv=NAMESRV, group="lease_locked").instance is not instance
