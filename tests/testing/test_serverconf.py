"""Broker properties the launcher writes for a ClusterSpec."""

from __future__ import annotations

from pathlib import Path

from rocketmq_actors.testing.serverconf import ClusterSpec, broker_properties, plan_servers


def _props(spec: ClusterSpec, tmp_path: Path) -> dict[str, object]:
    info = plan_servers(spec)["broker-a"]
    return broker_properties(spec, info, namesrv_port=9876, master_ha_port=1, state_dir=tmp_path)


def test_trace_turns_on_the_trace_topic(tmp_path: Path) -> None:
    assert _props(ClusterSpec(trace=True), tmp_path)["traceTopicEnable"] == "true"
    assert "traceTopicEnable" not in _props(ClusterSpec(), tmp_path)
