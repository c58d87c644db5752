"""rocketmq-actors: an asyncio client for Apache RocketMQ's remoting protocol.

The package is layered (each layer imports only from the ones listed before it):

* :mod:`rocketmq_actors.protocol` - sans-IO codec: bytes in, typed commands out;
* :mod:`rocketmq_actors.testing` - a real local RocketMQ cluster launcher and pytest fixtures.
"""

from ._version import __version__

__all__ = ["__version__"]
