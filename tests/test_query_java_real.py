"""The Java tools find what we write: ``mqadmin queryMsgByKey``, ``queryMsgByUniqueKey`` and
``queryMsgById`` (MQAdminStartup from the cached rocketmq-tools jar of the session's version)
on messages our producer sent."""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rocketmq_actors import query
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.testing.jars import find_java, resolve_server_jars
from rocketmq_actors.testing.java import java_scratch
from tests.broker_state import until

pytestmark = pytest.mark.integration


def mqadmin(version: str, *args: str) -> str:
    """mqadmin's output; asked again (three times in all) when its own fixed RPC timeout
    (3 s, not configurable per command) ran out, as it has under make test's load."""
    for _ in range(2):
        out = _mqadmin_once(version, *args)
        if "RemotingTimeoutException" not in out:
            return out
    return _mqadmin_once(version, *args)


def _mqadmin_once(version: str, *args: str) -> str:
    with java_scratch() as scratch:
        # a 4.9 MQAdminStartup reads $rocketmq.home.dir/conf/logback_tools.xml and stops
        # without it; an empty configuration is enough
        (scratch / "conf").mkdir()
        (scratch / "conf" / "logback_tools.xml").write_text("<configuration/>\n")
        argv = [
            find_java(), "-Xmx256m", "-XX:-UsePerfData", f"-Duser.home={scratch}",
            f"-Djava.io.tmpdir={scratch}", f"-Drocketmq.home.dir={scratch}", "-cp",
            f"{resolve_server_jars(version)}/*", "org.apache.rocketmq.tools.command.MQAdminStartup",
            *args,
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    return done.stdout + done.stderr


# QueryMsgByIdSubCommand.createBodyFile writes each body it shows to this fixed directory,
# whatever user.home or java.io.tmpdir say
BODY_DIR = Path("/tmp/rocketmq/msgbodys")


@contextlib.contextmanager
def body_files_removed(msg_ids: list[str]) -> Iterator[None]:
    """Remove the body files mqadmin writes for our messages, and the directories it made if
    nothing else is in them."""
    try:
        yield
    finally:
        for msg_id in msg_ids:
            (BODY_DIR / msg_id).unlink(missing_ok=True)
        for directory in (BODY_DIR, BODY_DIR.parent):
            with contextlib.suppress(OSError):  # not empty: somebody else's files
                directory.rmdir()


async def test_mqadmin_finds_our_messages(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str, request: pytest.FixtureRequest
) -> None:
    version = str(request.config.getoption("--rocketmq-version"))
    key = f"java-{uuid.uuid4().hex[:8]}"
    since = time.time_ns() // 1_000_000 - 1000
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        sent = [
            await producer.send(Message(topic=unique_topic, body=f"j{i}".encode(), keys=[key]))
            for i in range(2)
        ]
        # indexed for us first: then the Java tool must find them too
        await until(
            lambda: query.query_messages(producer.instance, unique_topic, key, begin_ms=since),
            lambda result: len(result.messages) >= 2,
        )

    def run(*args: str) -> str:
        return mqadmin(version, *args, "-n", rocketmq_namesrv)

    by_key = await anyio.to_thread.run_sync(
        lambda: run("queryMsgByKey", "-t", unique_topic, "-k", key)
    )
    assert all(s.msg_id in by_key for s in sent), by_key
    with body_files_removed([s.msg_id for s in sent]):
        by_uniq = await anyio.to_thread.run_sync(
            lambda: run("queryMsgByUniqueKey", "-t", unique_topic, "-i", sent[0].msg_id)
        )
        topic_option = () if version.startswith("4.") else ("-t", unique_topic)  # 4.9: no -t
        by_id = await anyio.to_thread.run_sync(
            lambda: run("queryMsgById", *topic_option, "-i", sent[1].offset_msg_id)
        )
    assert not (BODY_DIR / sent[0].msg_id).exists()
    assert sent[0].msg_id in by_uniq and key in by_uniq, by_uniq
    assert sent[1].msg_id in by_id and key in by_id, by_id
