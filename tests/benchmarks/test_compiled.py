"""``benchmarks.compiled`` leaves out of a mypyc build what cannot work compiled, with the
reason, before it measures anything, and judges each scope by what it saves and the tests it
passes."""

from __future__ import annotations

from typing import Any

from benchmarks.compiled import (
    SCOPES,
    SEND_PATH,
    _derived,
    candidates,
    has_coroutine,
    scopes_of,
    tally,
)
from benchmarks.docs_compiled import COMPILED_RULE_PATH, _parity_row, _verdict


def test_a_module_whose_class_an_interpreted_class_derives_from_is_left_out() -> None:
    # ClientInstance and GroupMember derive from Lifecycle; ReceivedMessage from MessageExt
    found = _derived(["runtime/lifecycle", "protocol/records", "protocol/framing"])
    assert set(found) == {"runtime/lifecycle", "protocol/records"}
    assert (
        "cluster/instance.ClientInstance derives from its Lifecycle" in found["runtime/lifecycle"]
    )
    assert (
        "consumer/message.ReceivedMessage derives from its MessageExt" in found["protocol/records"]
    )


def test_a_subclass_inside_the_build_is_no_reason() -> None:
    # _Queued derives from FirstAttempt: both compiled together, nothing is left out for it
    assert _derived(["producer/attempt", "producer/senders"]) == {}
    # ... and left out when the subclass stays interpreted
    assert _derived(["producer/attempt"]) == {
        "producer/attempt": "producer/senders._Queued derives from its FirstAttempt "
        "(a compiled class cannot be subclassed)"
    }


def test_the_candidates_are_every_protocol_module_and_the_send_path() -> None:
    got = candidates()
    assert "protocol/framing" in got and "protocol/__init__" not in got
    assert got[-len(SEND_PATH) :] == list(SEND_PATH)
    assert "producer/prepare" not in got  # (it validates the user's Message: see SEND_PATH)


def test_the_sync_scope_keeps_the_modules_without_a_coroutine() -> None:
    built = ["protocol/command", "runtime/connection", "producer/prepare", "producer/sendloop"]
    assert has_coroutine("runtime/connection") and not has_coroutine("protocol/command")
    scopes = scopes_of(built)
    assert scopes == {
        "protocol": ["protocol/command"],
        "sync": ["protocol/command", "producer/prepare"],
        "send_path": built,
    }
    assert tuple(scopes) == SCOPES
    # producer/senders (coroutines) derives _Queued from attempt's FirstAttempt: both stay out
    assert scopes_of(["producer/attempt", "producer/senders", "producer/result"])["sync"] == [
        "producer/result"
    ]


def _measured(cpu: float, failed: int) -> dict[str, Any]:
    return {
        "modules": ["protocol/command"],
        COMPILED_RULE_PATH: {"pure": {"client_cpu_us_per_msg": 10.0},
                             "compiled": {"client_cpu_us_per_msg": cpu}},
        "tests": {"passed": 10, "failed": failed, "deselected": 4,
                  "failed_by_file": {"tests/protocol/test_msgid.py": failed} if failed else {}},
    }  # fmt: skip


def test_a_scope_is_worth_shipping_only_if_it_saves_enough_and_passes_the_tests() -> None:
    assert _verdict("sync", _measured(8.5, 0)).endswith("met, worth shipping")
    failing = _verdict("sync", _measured(8.5, 3))
    assert "3 tests fail" in failing and failing.endswith("not met, not shipped")
    assert _verdict("sync", _measured(9.5, 0)).endswith("not met, not shipped")
    assert (
        _parity_row("sync", _measured(8.5, 3))
        == "| sync | 1 | 10 / 3 (4) | `protocol/test_msgid.py` 3 |"
    )


def test_a_parity_run_is_tallied_from_pytests_summary() -> None:
    out = (
        "....F..E\n"
        "FAILED tests/producer/test_failures.py::test_stalled[asyncio] - assert False\n"
        "FAILED tests/producer/test_failures.py::Class::test_other - TypeError: x\n"
        "ERROR tests/runtime/test_wire.py - ImportError: y\n"
        "725 passed, 2 failed, 1 error, 79 deselected in 58.84s\n"
    )
    assert tally(out) == {
        "passed": 725,
        "failed": 3,
        "failed_by_file": {"tests/producer/test_failures.py": 2, "tests/runtime/test_wire.py": 1},
        "deselected": 79,
    }
    crashed = tally("ImportError while loading conftest\n")
    assert crashed["error"] and crashed["passed"] == 0
    assert "did not run: not met" in _verdict("protocol", {**_measured(5.0, 0), "tests": crashed})
    assert _parity_row("protocol", {**_measured(5.0, 0), "tests": crashed}) == (
        "| protocol | 1 | did not run | - |"
    )
