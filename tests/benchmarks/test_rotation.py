"""The rules of ``benchmarks.rotation``: a ratio from one run only, a null broker within its
CPU budget, no publishing of an overloaded run (issue 46)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import docs_null, nullbroker, rotation


def _window(
    side: str,
    *,
    run: str = "r1",
    rate: int = 1000,
    cpu: float = 10.0,
    broker: float = 1.0,
    load: float = 0.5,
    others: float = 0.1,
) -> dict[str, Any]:
    return {
        "side": side, "messages": rate * 2, "seconds": 2.0, "client_cpu_us_per_msg": cpu,
        "run_id": run, "load_1m": load, "calibration_us": 10.0, "machine_busy_cores": 1.0,
        "other_processes_cores": others, "broker_cpu_us_per_msg": broker,
        "broker_sys_us_per_msg": broker / 2,
    }  # fmt: skip


def test_a_path_pools_its_windows_and_gives_both_ratios() -> None:
    windows = [
        _window("ours", rate=1000, cpu=10.0), _window("java", rate=2000, cpu=20.0),
        _window("java", rate=2000, cpu=20.0), _window("ours", rate=3000, cpu=10.0, load=1.5),
    ]  # fmt: skip
    path = rotation.path_figures(windows)
    assert path["ours"] == 2000 and path["java"] == 2000 and path["ratio"] == 1.0
    assert path["cpu_us_per_msg_ours"] == 10.0 and path["cpu_ratio_java_over_ours"] == 2.0
    assert path["broker_share_of_cheaper_client"] == 0.1
    assert path["max_load_1m"] == 1.5 and path["run_id"] == "r1"


def test_a_ratio_from_windows_of_two_runs_is_refused() -> None:
    with pytest.raises(rotation.MixedRuns, match="one run"):
        rotation.path_figures([_window("ours", run="r1"), _window("java", run="r2")])
    with pytest.raises(rotation.MixedRuns):
        rotation.path_figures([_window("ours"), {**_window("java"), "run_id": None}])


def _paths(**overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    good = rotation.path_figures([_window("ours"), _window("java")])
    return {name: {**good, **overrides.get(name, {})} for name in ("sync", "pipelined")}


def test_a_run_within_the_rules_may_be_published() -> None:
    verdict = rotation.verdict(_paths(), machine_cores=2, load_before=1.0)
    assert verdict == {"publishable": True, "overloaded": False, "cores": 2, "load_before": 1.0,
                       "why": [], "budget_exempt": {}}  # fmt: skip


def test_a_null_broker_over_its_budget_fails_the_run_unless_the_path_is_exempt() -> None:
    paths = _paths(sync={"broker_share_of_cheaper_client": 0.35})
    verdict = rotation.verdict(paths, machine_cores=2, load_before=1.0)
    assert not verdict["publishable"] and not verdict["overloaded"]
    assert verdict["why"] == ["sync: the null broker used 35% of the cheaper client's CPU per "
                              "message (budget 20%)"]  # fmt: skip
    exempt = rotation.verdict(paths, 2, 1.0, exempt={"sync": "round trips"})
    assert exempt["publishable"] and exempt["budget_exempt"] == {"sync": "round trips"}
    unmeasured = _paths(pipelined={"broker_share_of_cheaper_client": None})
    assert not rotation.verdict(unmeasured, 2, 1.0)["publishable"]


def test_a_loaded_machine_marks_the_run_overloaded() -> None:
    before = rotation.verdict(_paths(), machine_cores=2, load_before=2.5)
    assert not before["publishable"] and before["overloaded"]
    assert "load average 2.5 above 2 cores" in before["why"][0]
    others = rotation.verdict(_paths(pipelined={"max_other_processes_cores": 0.9}), 2, 0.5)
    assert not others["publishable"] and others["overloaded"]
    assert others["why"] == ["other processes took more than 0.5 cores (or were not measured) "
                             "during pipelined"]  # fmt: skip


def test_paths_of_different_runs_are_not_one_run() -> None:
    paths = _paths(pipelined={"run_id": "r2"})
    assert "paths from different runs" in rotation.verdict(paths, 2, 0.5)["why"][0]


def test_the_observer_records_the_run_load_calibration_and_the_brokers_cpu() -> None:
    observe = rotation.Observer("r9", broker_pid=os.getpid())  # (this process as the broker)
    end = observe(client_pid=os.getpid())
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:  # CPU for the "broker" to have used
        pass
    fields = end(1000)
    assert fields["run_id"] == "r9" and fields["calibration_us"] > 0
    assert fields["load_1m"] == pytest.approx(os.getloadavg()[0], abs=1.0)
    assert fields["broker_cpu_us_per_msg"] >= 40  # 0.05 s over 1000 messages (ticks round)
    assert 0 <= fields["broker_sys_us_per_msg"] <= fields["broker_cpu_us_per_msg"]
    assert fields["other_processes_cores"] is not None


def _results(tmp_path: Path, verdict: dict[str, Any] | None) -> Path:
    run = {"run_id": "r1", "paths": {}, "settings": {}, "detail": {}}
    if verdict is not None:
        run["verdict"] = verdict
    (tmp_path / "nullbroker.json").write_text(json.dumps(run))
    return tmp_path


def test_the_docs_generator_refuses_a_run_that_broke_the_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = rotation.verdict(_paths(), machine_cores=2, load_before=9.0)
    monkeypatch.setattr(docs_null, "RESULTS", _results(tmp_path, failed))
    with pytest.raises(docs_null.Unpublishable, match=r"load average 9\.0 above 2 cores"):
        docs_null.readme_null_table()
    monkeypatch.setattr(docs_null, "RESULTS", _results(tmp_path, None))
    with pytest.raises(docs_null.Unpublishable, match="no verdict"):
        docs_null.null_sections()
    good = rotation.verdict(_paths(), machine_cores=2, load_before=0.5)
    monkeypatch.setattr(docs_null, "RESULTS", _results(tmp_path, good))
    assert docs_null.load_run("nullbroker")["run_id"] == "r1"


def test_a_run_that_broke_the_rules_is_written_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = rotation.verdict(_paths(sync={"broker_share_of_cheaper_client": 0.5}), 2, 0.5)
    monkeypatch.setattr(nullbroker, "measure", lambda args: {"verdict": failed, "paths": {}})
    out = tmp_path / "run.json"
    assert nullbroker.main(["--out", str(out)]) == 1
    assert json.loads(out.read_text())["verdict"]["publishable"] is False
    assert "run.json: not publishable: sync: the null broker used 50%" in capsys.readouterr().err
