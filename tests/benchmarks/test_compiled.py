"""``benchmarks.compiled`` leaves out of a mypyc build what cannot work compiled, with the
reason, before it measures anything."""

from __future__ import annotations

from benchmarks.compiled import SEND_PATH, _derived, candidates


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
