"""The POP consumer (5.x): the broker hands out messages, so a group may have more members than
queues."""

from .consumer import PopConsumer

__all__ = ["PopConsumer"]
