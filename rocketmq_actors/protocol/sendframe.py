"""The send hot path: SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE frames built from pre-rendered parts.

A producer sends thousands of frames whose headers differ only in a few fields. The generic
path (typed header -> dict -> ``json.dumps``) is several times slower per frame
(benchmarks/codec.py, encode_send_v2_us); this encoder renders the
producer-constant parts once and splices the per-message fields in with the C string escaper of
the standard ``json`` module. The output decodes to exactly what
``RemotingCommand(code, ext_fields=SendMessageRequestHeader(...).to_ext(v2=True))`` encodes to
(a test holds the two paths equal).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable

from .acl import AclCredentials, sign
from .codes import CLIENT_VERSION, LanguageCode, RequestCode
from .command import FLAG_ONEWAY, MAX_FRAME_SIZE, RemotingCommand
from .errors import ProtocolError
from .headers import SendMessageRequestHeader

__all__ = ["BatchBody", "SendFrameEncoder"]

_escape: Callable[[str], str] = json.encoder.encode_basestring
_PREFIX = struct.Struct(">iI")
_END = f',"serializeTypeCurrentRPC":"JSON","version":{CLIENT_VERSION}}}'


class BatchBody:
    """A SEND_BATCH_MESSAGE body kept as its encoded parts, in order, and their total size.

    The parts are joined once, into the frame: a body joined first and then copied into the
    frame was two copies of every batch (benchmarks/paired.py's batch path). ``len()`` is the
    body's size and ``bytes()`` the joined body.
    """

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[bytes], size: int) -> None:
        self.parts = parts
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


class SendFrameEncoder:
    """Builds send frames for one producer group (and one default topic / queue count).

    JSON object order is irrelevant to the broker, so everything constant for a given
    (topic, broker, batch, oneway) - the group, default topic, queue count, topic and broker
    name, flag, language - is rendered once into a cached prefix; per message only the queue,
    flags, timestamp, properties and opaque are spliced in.

    With ACL ``credentials`` every frame is signed, which needs the complete field map: frames
    then take the generic typed-header path (the signature covers every field and the body).
    """

    __slots__ = ("_credentials", "_group", "_group_part", "_prefixes")

    def __init__(
        self,
        producer_group: str,
        *,
        default_topic: str = "TBW102",
        default_queue_nums: int = 4,
        credentials: AclCredentials | None = None,
    ) -> None:
        self._group = producer_group
        self._credentials = credentials
        self._group_part = (
            f'"a":{_escape(producer_group)},"c":{_escape(default_topic)},'
            f'"d":"{default_queue_nums}","k":"false"'
        )
        self._prefixes: dict[tuple[str, str | None, bool, bool], tuple[str, str]] = {}

    def _render_prefix(
        self, topic: str, broker_name: str | None, batch: bool, oneway: bool
    ) -> tuple[str, str]:
        if len(self._prefixes) > 4096:
            self._prefixes.clear()
        code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
        head = f'{{"code":{int(code)},"extFields":{{{self._group_part},"b":{_escape(topic)}'
        if broker_name:
            head += f',"n":{_escape(broker_name)}'
        if batch:
            head += ',"m":"true"'
        mid = (
            f'}},"flag":{FLAG_ONEWAY if oneway else 0},'
            f'"language":"{LanguageCode.PYTHON.name}","opaque":'
        )
        rendered = self._prefixes[(topic, broker_name, batch, oneway)] = (head, mid)
        return rendered

    # positional on purpose: keyword passing is measurably slower here (benchmarks/codec.py)
    def encode(  # noqa: PLR0917
        self,
        opaque: int,
        topic: str,
        queue_id: int,
        body: bytes | BatchBody,
        born_timestamp: int,
        properties: str,
        broker_name: str | None = None,
        *,
        sys_flag: int = 0,
        flag: int = 0,
        batch: bool = False,
        reconsume_times: int | None = None,
        max_reconsume_times: int | None = None,
        oneway: bool = False,
    ) -> bytes:
        """One complete frame: code 320 when ``batch`` (body = batch encoding), else 310."""
        if self._credentials is not None:
            return self._signed(
                opaque, topic, queue_id, bytes(body), born_timestamp, properties, broker_name,
                sys_flag, flag, batch, reconsume_times, max_reconsume_times, oneway,
            )  # fmt: skip
        key = (topic, broker_name, batch, oneway)
        head, mid = self._prefixes.get(key) or self._render_prefix(*key)
        extra = ',"i":' + _escape(properties) if properties else ""
        if reconsume_times is not None:
            extra += f',"j":"{reconsume_times}"'
        if max_reconsume_times is not None:
            extra += f',"l":"{max_reconsume_times}"'
        header = (
            f'{head},"e":"{queue_id}","f":"{sys_flag}","g":"{born_timestamp}","h":"{flag}"'
            f"{extra}{mid}{opaque}{_END}"
        ).encode()
        total = 4 + len(header) + len(body)
        if total > MAX_FRAME_SIZE:
            raise ProtocolError("frame-too-large", f"send frame of {total} bytes")
        if isinstance(body, BatchBody):  # its parts straight into the frame: one copy
            frame = [_PREFIX.pack(total, len(header)) + header]
            frame += body.parts
            return b"".join(frame)
        return _PREFIX.pack(total, len(header)) + header + body

    def _signed(  # noqa: PLR0917
        self,
        opaque: int,
        topic: str,
        queue_id: int,
        body: bytes,
        born_timestamp: int,
        properties: str,
        broker_name: str | None,
        sys_flag: int,
        flag: int,
        batch: bool,
        reconsume_times: int | None,
        max_reconsume_times: int | None,
        oneway: bool,
    ) -> bytes:
        assert self._credentials is not None
        header = SendMessageRequestHeader(
            producer_group=self._group, topic=topic, queue_id=queue_id, sys_flag=sys_flag,
            born_timestamp=born_timestamp, flag=flag, properties=properties or None,
            reconsume_times=reconsume_times, max_reconsume_times=max_reconsume_times,
            batch=True if batch else None, broker_name=broker_name or None,
        )  # fmt: skip
        return RemotingCommand(
            code=RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2,
            opaque=opaque,
            flag=FLAG_ONEWAY if oneway else 0,
            ext_fields=sign(header.to_ext(v2=True), body, self._credentials),
            body=body,
        ).encode()  # refuses frames over MAX_FRAME_SIZE
