"""``benchmarks.floor``: each path's round does its work and costs something, a floor is set
beside the CPU a message Java's rate needs, and the page shows every path of the file."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from benchmarks import docs, floor
from benchmarks.docs import floor_section
from benchmarks.docs_null import load
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.protocol.records import decode_records


def test_a_floor_is_the_lowest_round_of_either_loop_and_above_only_past_the_margin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lowest = {"asyncio": [12.0, 13.0], "uvloop": [11.0, 14.0]}  # us a message, lowest first
    # (11 is above 5 by more than 15 %; above 10 too, but by less)
    needed = {"e_autobatch_1k": 5.0, "d_consume": 10.0}

    def java(path: str) -> dict[str, Any]:
        return {"run_id": "r", "msgs_per_s": 1e6 / needed[path], "cpu_us_per_msg": 1.0}

    monkeypatch.setattr(floor, "_java", java)
    monkeypatch.setattr(floor, "_loops", lambda: list(lowest))
    monkeypatch.setattr(floor, "_rounds", lambda _round, _n, _r, loop: lowest[loop])
    paths = floor.measure(3_100, 2)
    assert set(paths) == set(floor.ROUNDS)
    for path, row in paths.items():
        assert row["floor_cpu_us_per_msg"] == 11.0 and row["one_thread_msgs_per_s"] == 90_909
        assert row["loops"]["asyncio"]["median_cpu_us_per_msg"] == 12.5
        assert row["cpu_us_per_msg_for_java_rate"] == needed[path]
    assert paths["e_autobatch_1k"]["floor_above_it"] is True
    assert paths["d_consume"]["floor_above_it"] is False  # (above, but within the margin)


def test_each_loop_runs_its_rounds_and_gives_them_lowest_first() -> None:
    for loop in floor._loops():
        for round_of in floor.ROUNDS.values():
            rounds = floor._rounds(round_of, 620, 2, loop)
            assert len(rounds) == 2 and 0 < rounds[0] <= rounds[1]


async def test_an_autobatch_round_resolves_every_send_in_batches_of_31(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes: list[int] = []  # of each batch, as its results are made (index 0 opens one)

    class Recorded(floor._Result):
        __slots__ = ()

        def __init__(self, msg_id: str, queue: str, queue_offset: int, status: str) -> None:
            super().__init__(msg_id, queue, queue_offset, status)
            if queue_offset == 0:
                sizes.append(0)
            sizes[-1] += 1

    monkeypatch.setattr(floor, "_Result", Recorded)
    assert await floor.autobatch_round(10 * floor.BATCH + 5) > 0
    assert sizes == [floor.BATCH] * 10 + [5]  # (ten full batches and the last, short one)


@pytest.mark.parametrize("broken", ["_Result", "_HEAD"])  # (the completer's, the callers')
async def test_an_autobatch_round_with_a_failing_step_raises_rather_than_hangs(
    monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    def failing(*_: object) -> None:
        raise RuntimeError("no result")

    monkeypatch.setattr(floor, broken, failing)
    with anyio.fail_after(30), pytest.raises(RuntimeError, match="no result"):
        await floor.autobatch_round(100)


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
        lowest = [f"{loop} {f['lowest_cpu_us_per_msg']}" for loop, f in row["loops"].items()]
        assert f"| {path} | {row['floor_cpu_us_per_msg']} ({', '.join(lowest)}) |" in text
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
