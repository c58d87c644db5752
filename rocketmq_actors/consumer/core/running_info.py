"""What every consumer reports of itself when the broker asks (GET_CONSUMER_RUNNING_INFO)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Protocol

from rocketmq_actors.runtime.tree import Node

__all__ = ["TREE_PROPERTY", "member_properties"]

#: the running-info property holding a member's live actor tree as JSON (Java tools show
#: properties they do not know as they are)
TREE_PROPERTY = "PROP_ROCKETMQ_ACTORS_TREE"


class Member(Protocol):
    def tree(self) -> Node: ...


def member_properties(member: Member, *, namesrv: Sequence[str], consume_type: str,
                      started_ms: int) -> dict[str, str]:  # fmt: skip
    """The running-info properties every member reports (GET_CONSUMER_RUNNING_INFO)."""
    return {
        "PROP_NAMESERVER_ADDR": ";".join(namesrv),
        "PROP_CONSUME_TYPE": consume_type,
        "PROP_CONSUMER_START_TIMESTAMP": str(started_ms),
        "clientVersion": "rocketmq-actors",
        "pid": str(os.getpid()),
        TREE_PROPERTY: json.dumps(member.tree().to_dict(), separators=(",", ":")),
    }
