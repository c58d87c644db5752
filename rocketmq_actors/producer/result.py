"""The outcome of a successful send."""

from __future__ import annotations

import enum

import attrs

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode

__all__ = ["SendResult", "SendStatus"]


class SendStatus(enum.Enum):
    """Every status means the broker stored the message; the last three say a durability
    step (sync flush, replication) did not complete in time."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"

    @classmethod
    def from_code(cls, code: int) -> SendStatus | None:
        return _BY_CODE.get(code)


_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@attrs.frozen(kw_only=True)
class SendResult:
    status: SendStatus
    msg_id: str  # the client id (UNIQ_KEY); comma-joined for a batch
    offset_msg_id: str  # the broker's id: store host + commit-log offset
    queue: MessageQueue  # topic without namespace
    queue_offset: int
    transaction_id: str | None = None
    region_id: str | None = None
