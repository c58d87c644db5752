"""health() against a fake NameServer: reachability, route age, reasons, JSON shape."""

from __future__ import annotations

import contextlib
import json

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.testing.fakeserver import FakeServer

from .test_namesrv_routes import FakeNameServer


async def test_a_silent_name_server_is_a_warning_while_routes_are_cached() -> None:
    """As the Java client, a client with cached routes goes on working without NameServers:
    a readiness probe must not take it out of service for that (a warning, not a reason)."""
    ns = FakeNameServer("b")
    async with FakeServer(ns) as server:
        instance = ClientInstance(server.addr, request_timeout=1)
        assert instance.health().reasons == ("the client is new",)
        async with instance:
            await instance.routes.get("t")
            health = instance.health()
            assert instance.ready and health.namesrv.reachable and health.reasons == ()
            (route,) = [r for r in health.routes if r.topic == "t"]
            assert route.brokers == ("b",) and route.writable_queues == 4
            # the route names a broker this client never dialled
            assert [(b.name, b.state, b.version) for b in health.brokers] == [
                ("b", "not_connected", None)
            ]
            ns.up = False
            await instance.routes.refresh("t")  # served from the cache
            health = instance.health()
            assert health.ready and not health.namesrv.reachable and health.reasons == ()
            assert health.warnings[0].startswith("no NameServer answered: ")
            assert health.namesrv.last_error is not None
            assert [r.topic for r in health.routes] == ["t"]  # the cached route is still shown
            ns.up = True
            await instance.routes.refresh("t")
            assert instance.ready and instance.health().warnings == ()
            as_json = json.loads(json.dumps(instance.health().as_dict()))
            assert as_json["routes"][0]["brokers"] == ["b"] and as_json["kind"] == "client-instance"
        assert instance.health().reasons == ("the client is stopped",)


async def test_a_silent_name_server_and_no_route_is_not_ready() -> None:
    ns = FakeNameServer("b")
    async with FakeServer(ns) as server, ClientInstance(server.addr, request_timeout=1) as client:
        assert client.ready
        ns.up = False
        with contextlib.suppress(RocketMQError):
            await client.routes.get("never-seen")  # the NameServer does not answer
        health = client.health()
        assert not health.ready and not health.namesrv.reachable
        assert health.reasons[0].startswith("no NameServer answered: ")
