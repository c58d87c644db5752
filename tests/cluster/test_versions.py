"""Broker version ordinals (Java's MQVersion.Version) and what they allow."""

from __future__ import annotations

import pytest

from rocketmq_actors.cluster.versions import TIMER_MIN_VERSION, is_5x, version_name
from rocketmq_actors.protocol.codes import CLIENT_VERSION


@pytest.mark.parametrize(
    ("ordinal", "name"),
    [(401, "V4_9_4"), (405, "V4_9_6"), (407, "V4_9_7"), (411, "V4_9_9"), (412, "V5_0_0_SNAPSHOT"),
     (413, "V5_0_0"), (479, "V5_3_3"), (212, "V4_0_0_SNAPSHOT"), (100, "#100"),
     (612, "HIGHER_VERSION")],
)  # fmt: skip
def test_version_names_follow_the_java_enum(ordinal: int, name: str) -> None:
    assert version_name(ordinal) == name


def test_timer_delivery_starts_at_5_0() -> None:
    assert version_name(TIMER_MIN_VERSION) == "V5_0_0_SNAPSHOT"
    assert is_5x(CLIENT_VERSION) and not is_5x(405) and is_5x(413)
