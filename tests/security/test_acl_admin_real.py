"""ACL 2.0 users and ACLs managed against a real 5.x broker that authenticates and authorizes
every request (``rocketmq_actors.authadmin``, re-exported by ``rocketmq_actors.admin``; the
``acl`` CLI command): a user created, changed and given a policy can do what the policy
allows and nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from rocketmq_actors import admin
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import AccessDenied, ConfigError, SendFailed
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster

from ..cli._run import one_line_error

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ADMIN = ("rocketmq-actors-admin", "s3cret-for-tests")
PROVIDERS = "org.apache.rocketmq.auth.authorization.provider"
# ACL 2.0 authorization beside the authentication ClusterSpec(acl=...) turns on
AUTHORIZATION = {
    "authorizationEnabled": "true",
    "authorizationProvider": f"{PROVIDERS}.DefaultAuthorizationProvider",
    "authorizationMetadataProvider": f"{PROVIDERS}.LocalAuthorizationMetadataProvider",
}


@pytest.fixture(scope="module")
def auth_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """One broker authenticating and authorizing every request, this module's."""
    version = request.config.getoption("--rocketmq-version")
    if version.startswith("4."):
        pytest.skip(f"ACL 2.0 users and ACLs came with RocketMQ 5.3; {version}")
    cluster = LocalCluster(ClusterSpec(version=version, acl=ADMIN, broker_config=AUTHORIZATION))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(graceful=False)  # its store is thrown away


def _admin(cluster: LocalCluster) -> ClientInstance:
    return ClientInstance(cluster.namesrv_addr, credentials=AclCredentials(*ADMIN))


async def _send(cluster: LocalCluster, creds: AclCredentials, topic: str) -> None:
    async with Producer(
        namesrv=cluster.namesrv_addr, client=ClientOptions(credentials=creds)
    ) as producer:
        await producer.send(Message(topic=topic, body=b"x"))


async def test_a_user_with_a_policy_sends_where_it_allows_and_nowhere_else(
    auth_cluster: LocalCluster, unique_topic: str
) -> None:
    user, other_topic = f"u-{unique_topic}", f"{unique_topic}-other"
    async with _admin(auth_cluster) as instance:
        for topic in (unique_topic, other_topic):
            await create_topic(instance, topic, queues=2)
        node = auth_cluster.broker("broker-a").addr
        assert await admin.create_user(instance, user, "first-password") == [node]
        found = await admin.get_user(instance, user)
        assert found is not None
        assert (found.username, found.password, found.user_type, found.user_status) == (
            user, "first-password", "Normal", "enable")  # fmt: skip
        assert "first-password" not in repr(found)
        listed = await admin.list_users(instance)
        assert {user, ADMIN[0]} <= {u.username for u in listed}
        assert [u.username for u in await admin.list_users(instance, user)] == [user]
        with pytest.raises(admin.AuthRefused) as exists:
            await admin.create_user(instance, user, "again")
        assert "existed" in str(exists.value) and not exists.value.retriable

        await admin.update_user(instance, user, password="second-password")
        found = await admin.get_user(instance, user)
        assert found is not None and found.password == "second-password"

        subject = f"User:{user}"
        assert await admin.get_acl(instance, subject) is None
        await admin.create_acl(instance, subject, [f"Topic:{unique_topic}"], ["Pub"])
        acl = await admin.get_acl(instance, subject)
        assert acl is not None and acl.subject == subject
        (entry,) = [e for p in acl.policies for e in p.entries]
        assert (entry.resource, entry.actions, entry.decision) == (
            f"Topic:{unique_topic}", ("Pub",), "Allow")  # fmt: skip
        assert [a.subject for a in await admin.list_acls(instance, user)] == [subject]

        # the new password signs, the old one no longer does
        await _send(auth_cluster, AclCredentials(user, "second-password"), unique_topic)
        with pytest.raises(SendFailed) as old:
            await _send(auth_cluster, AclCredentials(user, "first-password"), unique_topic)
        assert isinstance(old.value.__cause__, AccessDenied)
        # the policy allows the one topic only: refused, once, not retried
        with pytest.raises(SendFailed) as refused:
            await _send(auth_cluster, AclCredentials(user, "second-password"), other_topic)
        assert isinstance(refused.value.__cause__, AccessDenied)
        assert "no permission" in str(refused.value) and len(refused.value.attempts) == 1

        # a normal user may not manage users
        creds = AclCredentials(user, "second-password")
        async with ClientInstance(auth_cluster.namesrv_addr, credentials=creds) as mine:
            with pytest.raises(AccessDenied):
                await admin.create_user(mine, f"{user}-2", "p")

        assert await admin.delete_acl(instance, subject) == [node]
        assert await admin.get_acl(instance, subject) is None
        with pytest.raises(SendFailed):
            await _send(auth_cluster, AclCredentials(user, "second-password"), unique_topic)
        assert await admin.delete_user(instance, user) == [node]
        assert await admin.get_user(instance, user) is None
        with pytest.raises(admin.AuthRefused):
            await admin.update_user(instance, user, password="third")


async def test_an_entry_of_one_resource_is_deleted_and_update_replaces_an_entry(
    auth_cluster: LocalCluster, unique_topic: str, unique_group: str
) -> None:
    user = f"u-{unique_topic}"
    subject = f"User:{user}"
    async with _admin(auth_cluster) as instance:
        await admin.create_user(instance, user, "pw", cluster="DefaultCluster")
        resources = [f"Topic:{unique_topic}", f"Group:{unique_group}"]
        await admin.create_acl(instance, subject, resources, ["Sub"], source_ips=["127.0.0.1"])
        await admin.update_acl(instance, subject, [f"Topic:{unique_topic}"], ["Pub", "Sub"],
                               decision="deny")  # fmt: skip
        acl = await admin.get_acl(instance, subject)
        assert acl is not None
        entries = {e.resource: e for p in acl.policies for e in p.entries}
        assert set(entries) == {f"Topic:{unique_topic}", f"Group:{unique_group}"}
        assert set(entries[f"Topic:{unique_topic}"].actions) == {"Pub", "Sub"}
        assert entries[f"Topic:{unique_topic}"].decision == "Deny"
        assert entries[f"Group:{unique_group}"].source_ips == ("127.0.0.1",)
        (only,) = await admin.list_acls(instance, subject, unique_group)
        assert [e.resource for p in only.policies for e in p.entries] == [f"Group:{unique_group}"]

        await admin.delete_acl(instance, subject, f"Topic:{unique_topic}")
        acl = await admin.get_acl(instance, subject)
        assert acl is not None
        assert [e.resource for p in acl.policies for e in p.entries] == [f"Group:{unique_group}"]
        with pytest.raises(ConfigError):
            await admin.create_acl(instance, subject, [f"Topic:{unique_topic}"], ["Pub"],
                                   decision="maybe")  # fmt: skip
        await admin.delete_user(instance, user)  # (its ACL goes with it)
        assert not await admin.list_acls(instance, subject)


def _acl_cli(
    cluster: LocalCluster, *args: str, creds: tuple[str, str] | None = ADMIN
) -> subprocess.CompletedProcess[str]:
    """``rocketmq-actors acl ... --json``, signing with ``creds`` given as the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETMQ_")}
    if creds is not None:
        env.update(ROCKETMQ_ACCESS_KEY=creds[0], ROCKETMQ_SECRET_KEY=creds[1])
    return subprocess.run(
        [sys.executable, "-m", "rocketmq_actors", "acl", *args, "--namesrv",
         cluster.namesrv_addr, "--json"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


def _ok(cluster: LocalCluster, *args: str) -> Any:
    proc = _acl_cli(cluster, *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_cli_manages_users_and_policies(auth_cluster: LocalCluster, unique_topic: str) -> None:
    user, subject, c = f"c-{unique_topic}", f"User:c-{unique_topic}", auth_cluster
    node = c.broker("broker-a").addr
    assert _ok(c, "user", "create", "--username", user, "--password", "pw")["brokers"] == [node]
    assert _ok(c, "user", "get", "--username", user)["user"] == {
        "username": user, "user_type": "Normal", "user_status": "enable"}  # fmt: skip
    assert [u["username"] for u in _ok(c, "user", "list", "--filter", user)["users"]] == [user]
    _ok(c, "user", "update", "--username", user, "--user-status", "disable")
    assert _ok(c, "user", "get", "--username", user)["user"]["user_status"] == "disable"
    refused = _acl_cli(c, "user", "create", "--username", user, "--password", "pw")
    one_line_error(refused, 1, "existed")

    _ok(c, "policy", "create", "--subject", subject, "--resources", f"Topic:{unique_topic}",
        "--actions", "Pub,Sub")  # fmt: skip
    acl = _ok(c, "policy", "get", "--subject", subject)["acl"]
    entries = [e for p in acl["policies"] for e in p["entries"]]
    assert [(e["resource"], sorted(e["actions"])) for e in entries] == [
        (f"Topic:{unique_topic}", ["Pub", "Sub"])]  # fmt: skip
    assert [a["subject"] for a in _ok(c, "policy", "list", "--subject", user)["acls"]] == [subject]
    _ok(c, "policy", "delete", "--subject", subject)
    one_line_error(_acl_cli(c, "policy", "get", "--subject", subject), 1, "no broker has an ACL")
    _ok(c, "user", "delete", "--username", user)
    one_line_error(_acl_cli(c, "user", "get", "--username", user), 1, user)

    # unsigned: the broker refuses who we are; bad input: refused before any I/O
    one_line_error(_acl_cli(c, "user", "list", creds=None), 1)
    bad = _acl_cli(c, "policy", "create", "--subject", subject, "--resources", "Topic:t",
                   "--actions", "Publish")  # fmt: skip
    one_line_error(bad, 2, "Publish")
