"""Producers: send, submit, send_nowait, send_oneway, send_batch, ordered sends, transactions."""

from rocketmq_actors.protocol.compression import CompressionType
from rocketmq_actors.protocol.messages import Message

from .admin import create_topic
from .future import FlushResult, SendFuture
from .options import ProducerOptions
from .producer import Producer
from .recall import RecallResult
from .result import BatchResults, SendResult, SendStatus
from .selector import QueueSelector, select_by_key
from .transaction import LocalTransactionState, TransactionOutcome, TransactionProducer

__all__ = [
    "BatchResults",
    "CompressionType",
    "FlushResult",
    "LocalTransactionState",
    "Message",
    "Producer",
    "ProducerOptions",
    "QueueSelector",
    "RecallResult",
    "SendFuture",
    "SendResult",
    "SendStatus",
    "TransactionOutcome",
    "TransactionProducer",
    "create_topic",
    "select_by_key",
]
