"""The push consumer: the broker's messages handed to a handler (or ``async for``), concurrently or
in order, with retries and dead letters."""

from .consumer import BatchHandler, ConsumeFrom, Handler, MessageModel, PushConsumer
from .options import PushOptions

__all__ = ["BatchHandler", "ConsumeFrom", "Handler", "MessageModel", "PushConsumer", "PushOptions"]
