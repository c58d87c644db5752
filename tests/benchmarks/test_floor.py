"""``benchmarks.floor``: each path's round does its work and costs something, a floor is set
beside the CPU a message Java's rate needs, and the page shows every path of the file."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import docs, floor
from benchmarks.docs import floor_section
from benchmarks.docs_null import load
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.protocol.records import decode_records


def test_a_floor_is_above_what_a_faster_javas_rate_needs_and_not_a_slower_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rates = {"e_autobatch_1k": 10**9, "d_consume": 1}  # (1 ns a message; 1 s a message)

    def java(path: str) -> dict[str, Any]:
        return {"run_id": "r", "msgs_per_s": rates[path], "cpu_us_per_msg": 1.0}

    monkeypatch.setattr(floor, "_java", java)
    paths = floor.measure(3_100, 2)
    assert set(paths) == set(floor.ROUNDS)
    for path, row in paths.items():
        rounds = row["rounds_cpu_us_per_msg"]
        assert len(rounds) == 2 and 0 < row["floor_cpu_us_per_msg"] == rounds[0] <= rounds[1]
        assert row["cpu_us_per_msg_for_java_rate"] == round(1e6 / rates[path], 3)
    assert paths["e_autobatch_1k"]["floor_above_it"] is True
    assert paths["d_consume"]["floor_above_it"] is False


async def test_a_consume_round_decodes_and_hands_over_every_message() -> None:
    handled: list[int] = []
    bodies = floor._pull_bodies()
    assert len(bodies) == 8
    # (the round's own decoder, on the bodies it pulls: PULL messages each, in order)
    for body in bodies:
        handled += [m.queue_offset for m in decode_records(body, ReceivedMessage)]
    assert handled == list(range(floor.PULL)) * 8
    assert await floor.consume_round(floor.PULL * 3) > 0


def test_the_page_shows_every_path_of_floor_json() -> None:
    figures = load("floor")
    text = "\n".join(floor_section(figures))
    for path, row in figures["paths"].items():
        assert (
            f"| {path} | {row['floor_cpu_us_per_msg']} ({row['median_cpu_us_per_msg']}) |" in text
        )
        assert f"{row['one_thread_msgs_per_s']:,}" in text


def test_the_readme_names_a_path_whose_floor_is_above_the_tables_java_rate_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def row(above: bool, run_id: str) -> dict[str, Any]:
        return {"floor_above_it": above, "java": {"run_id": run_id}}

    files: dict[str, Any] = {
        "nullbroker": {"run_id": "R"},
        "floor": {"paths": {"x": row(True, "R"), "y": row(False, "R"), "z": row(True, "old")}},
    }
    monkeypatch.setattr(docs, "load", files.__getitem__)
    (line, _) = docs.floor_note()
    assert "`x`" in line and "`y`" not in line and "`z`" not in line
    files["floor"]["paths"]["x"] = row(True, "old")  # (measured beside another run's rates)
    assert docs.floor_note() == []
