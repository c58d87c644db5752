"""``update_namesrv`` (Java's ``updateNameServerAddress``) on a running client, against the real
NameServer: the next route lookup asks the new addresses."""

from __future__ import annotations

import re

import pytest

from rocketmq_actors.errors import ConfigError, NameServerUnavailable
from rocketmq_actors.producer import Message, Producer

pytestmark = pytest.mark.integration

SILENT = "127.0.0.1:1"  # (nothing listens on port 1)


async def test_a_running_client_moves_to_other_nameservers_and_back(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as producer:
        producer.update_namesrv(SILENT)
        assert producer.instance.namesrv.addrs == (SILENT,)
        with pytest.raises(NameServerUnavailable, match=re.escape(SILENT)):
            await producer.instance.routes.refresh(f"{unique_topic}_x")
        with pytest.raises(ConfigError):
            producer.update_namesrv("not an address")
        assert producer.instance.namesrv.addrs == (SILENT,)  # (a bad one changes nothing)

        producer.update_namesrv([SILENT, rocketmq_namesrv])
        result = await producer.send(Message(topic=unique_topic, body=b"after the move"))
        assert result.msg_id
