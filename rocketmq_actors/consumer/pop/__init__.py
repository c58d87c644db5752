"""The POP consumer (5.x): the broker hands out messages, so a group may have more members than
queues."""

from .consumer import PopConsumer
from .options import PopOptions

__all__ = ["PopConsumer", "PopOptions"]
