"""compose.yaml cannot run here (no Docker engine); it must still parse and agree with the
launcher's version and RocketMQ's well-known ports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rocketmq_actors.testing.cluster import WELL_KNOWN_BROKER_PORT, WELL_KNOWN_NAMESRV_PORT
from rocketmq_actors.testing.jars import DEFAULT_VERSION

COMPOSE = Path(__file__).resolve().parents[1] / "compose.yaml"


def _load() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def test_images_pin_the_launcher_version() -> None:
    services = _load()["services"]
    assert set(services) == {"namesrv", "broker"}
    for service in services.values():
        assert service["image"] == f"apache/rocketmq:{DEFAULT_VERSION}"


def test_ports_are_published_on_loopback_only() -> None:
    services = _load()["services"]
    published = {p for s in services.values() for p in s["ports"]}
    assert f"127.0.0.1:{WELL_KNOWN_NAMESRV_PORT}:{WELL_KNOWN_NAMESRV_PORT}" in published
    assert f"127.0.0.1:{WELL_KNOWN_BROKER_PORT}:{WELL_KNOWN_BROKER_PORT}" in published
    assert all(p.startswith("127.0.0.1:") for p in published)


def test_broker_advertises_the_published_address() -> None:
    data = _load()
    conf = data["configs"]["broker_conf"]["content"]
    props = dict(
        line.split("=", 1) for line in conf.splitlines() if line and not line.startswith("#")
    )
    assert props["brokerIP1"] == "127.0.0.1"
    assert int(props["listenPort"]) == WELL_KNOWN_BROKER_PORT
    broker = data["services"]["broker"]
    assert "/home/rocketmq/broker.conf" in broker["command"]
    assert broker["configs"][0]["target"] == "/home/rocketmq/broker.conf"
