"""``RemotingCommand``: one frame of the remoting protocol, and its two header encodings.

Frame layout (all big-endian)::

    int32 total_length   bytes that follow this field: 4 + header_len + body_len
    int32 type_and_len   (serialize_type << 24) | header_len
    header               JSON object or ROCKETMQ binary header
    body                 the rest
"""

from __future__ import annotations

import json
import json.scanner
import os
import struct
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .codes import CLIENT_VERSION, LanguageCode, SerializeType
from .errors import ProtocolError

__all__ = [
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "MAX_FRAME_SIZE",
    "RemotingCommand",
    "decode_header",
    "encode_header",
]

FLAG_RESPONSE = 0x1
FLAG_ONEWAY = 0x2

#: The server's frame decoder limit (``com.rocketmq.remoting.frameMaxLength``).
MAX_FRAME_SIZE = 16 * 1024 * 1024

_INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(">iI")
_BIN_FIXED = struct.Struct(">hBhiii")  # code, language, version, opaque, flag, remark_len
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

_LANGUAGE_BY_NAME = {lang.name: lang for lang in LanguageCode}
_OTHER = LanguageCode.OTHER
_PYTHON = LanguageCode.PYTHON
_LANGUAGE_NAME = {int(lang): lang.name for lang in LanguageCode}  # (Enum.name is a slow property)
_JSON = SerializeType.JSON


@attrs.define(slots=True, eq=True)
class RemotingCommand:
    """A request or response frame.

    ``ext_fields`` carries every per-request parameter as strings (the protocol's "custom
    header"); typed header classes convert to and from it.
    """

    code: int
    opaque: int = 0
    flag: int = 0
    ext_fields: dict[str, str] = attrs.field(factory=dict)
    body: bytes = b""
    remark: str | None = None
    language: LanguageCode = LanguageCode.PYTHON
    version: int = CLIENT_VERSION
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        # positional, in field order (keywords cost a measurable share of a small request)
        return cls(
            code,
            0,
            FLAG_ONEWAY if oneway else 0,
            dict(ext_fields) if ext_fields else {},
            body,
            None,
            _PYTHON,
            CLIENT_VERSION,
            serialize_type,
        )

    def response(
        self,
        code: int,
        *,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """A response to this request: same opaque and serialization, response flag set."""
        return RemotingCommand(
            code=code,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            ext_fields=dict(ext_fields) if ext_fields else {},
            body=body,
            remark=remark,
            serialize_type=self.serialize_type,
        )

    def encode(self) -> bytes:
        """The complete frame, length prefix included."""
        header = encode_header(self)
        header_len = len(header)
        total = 4 + header_len + len(self.body)
        if total > MAX_FRAME_SIZE:
            raise ProtocolError(
                "frame-too-large", f"frame of {total} bytes exceeds {MAX_FRAME_SIZE}"
            )
        prefix = _PREFIX.pack(total, (int(self.serialize_type) << 24) | header_len)
        return b"".join((prefix, header, self.body))


# The C encoder/scanner of the json module, built once (json.dumps/JSONEncoder.encode build a
# new C encoder object on every call).
def _unserializable(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_c_encoder = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, _unserializable, json.encoder.encode_basestring, None, ":", ",", False, False, True
)


def _encode_json(value: object) -> str:
    if value.__class__ is str:
        return json.encoder.encode_basestring(value)
    return "".join(_c_encoder(value, 0))


_scan_json = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
_JSON_SPACE = " \t\n\r"  # JSON's whitespace (str.strip() would also take \x0b, \x0c, ...)


def encode_header(cmd: RemotingCommand) -> bytes:
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        return _encode_binary_header(cmd)
    return _encode_json_header(cmd)


def _encode_json_header_stdlib(cmd: RemotingCommand) -> bytes:
    # fastjson's field order (alphabetical); readers do not depend on it
    remark = "" if cmd.remark is None else f',"remark":{_encode_json(cmd.remark)}'
    return (
        f'{{"code":{int(cmd.code)},"extFields":{_encode_json(cmd.ext_fields)},'
        f'"flag":{int(cmd.flag)},"language":"{_LANGUAGE_NAME[int(cmd.language)]}",'
        f'"opaque":{int(cmd.opaque)}{remark},"serializeTypeCurrentRPC":"JSON",'
        f'"version":{int(cmd.version)}}}'
    ).encode()


def _encode_binary_header(cmd: RemotingCommand) -> bytes:
    if not -32768 <= cmd.code <= 32767 or not -32768 <= cmd.version <= 32767:
        raise ProtocolError(
            "binary-header-range",
            f"code {cmd.code} / version {cmd.version} do not fit the 16-bit binary header",
        )
    remark = cmd.remark.encode() if cmd.remark else b""
    parts: list[bytes] = []
    for key, value in cmd.ext_fields.items():
        k = key.encode()
        v = value.encode()
        # Java reads a zero-length value back as null; omit such fields instead.
        if not k or not v:
            continue
        parts.append(_I16.pack(len(k)))
        parts.append(k)
        parts.append(_I32.pack(len(v)))
        parts.append(v)
    ext = b"".join(parts)
    return b"".join(
        (
            _BIN_FIXED.pack(
                cmd.code, int(cmd.language), cmd.version, cmd.opaque, cmd.flag, len(remark)
            ),
            remark,
            _I32.pack(len(ext)),
            ext,
        )
    )


def decode_header(
    serialize_type: int, header: bytes | bytearray | memoryview, body: bytes
) -> RemotingCommand:
    """Build a command from a raw header of the given serialization type and its body."""
    if serialize_type == SerializeType.JSON:
        return _decode_json_header(header, body)
    if serialize_type == SerializeType.ROCKETMQ:
        return _decode_binary_header(header, body)
    raise ProtocolError("bad-serialize-type", f"unknown header serialization type {serialize_type}")


def _bad_int(key: str, value: object) -> ProtocolError:
    return ProtocolError("bad-header-json", f"field {key!r} is not an integer: {value!r}")


def _parse_json_stdlib(header: bytes | bytearray | memoryview) -> Any:
    try:
        text = str(header, "utf-8")
        start = 0
        if text and text[0] in _JSON_SPACE:  # leading JSON whitespace is allowed (as orjson)
            start = len(text) - len(text.lstrip(_JSON_SPACE))
        obj, end = _scan_json(text, start)
    except StopIteration:
        raise ProtocolError("bad-header-json", "header is not JSON") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError("bad-header-json", str(exc)) from None
    if end != len(text) and text[end:].strip(_JSON_SPACE):  # JSON whitespace only
        raise ProtocolError("bad-header-json", f"trailing data after offset {end}")
    return obj


def _parse_json_orjson(header: bytes | bytearray | memoryview) -> Any:
    assert _orjson_loads is not None
    try:
        return _orjson_loads(header)
    except ValueError as exc:  # orjson.JSONDecodeError (bad UTF-8 and trailing data included)
        raise ProtocolError("bad-header-json", str(exc)) from None


# orjson (the optional ``orjson`` extra) parses a response header several times faster than
# the standard library's scanner (benchmarks/codec.py, decode_response_frame_us);
# ROCKETMQ_ACTORS_PURE_JSON=1 keeps the standard library.
_orjson_loads: Callable[[bytes | bytearray | memoryview], Any] | None
_orjson_dumps: Callable[[Any], bytes] | None
try:
    from orjson import dumps as _orjson_dumps
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover - depends on the installed extras
    _orjson_loads = _orjson_dumps = None
JSON_BACKEND = (
    "orjson" if _orjson_loads is not None and not os.environ.get("ROCKETMQ_ACTORS_PURE_JSON")
    else "json"
)  # fmt: skip


def _encode_json_header_orjson(cmd: RemotingCommand) -> bytes:
    """The same bytes as the standard-library encoder (a test holds them equal), in ~1/3 of
    its time. (orjson writes an IntEnum such as a RequestCode as its number.)"""
    assert _orjson_dumps is not None
    language = cmd.language
    name = "PYTHON" if language is _PYTHON else _LANGUAGE_NAME[int(language)]
    # fastjson's field order, as the standard-library encoder writes it
    header = {"code": cmd.code, "extFields": cmd.ext_fields, "flag": cmd.flag,
              "language": name, "opaque": cmd.opaque}  # fmt: skip
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = cmd.version
    try:
        return _orjson_dumps(header)
    except TypeError:  # orjson.JSONEncodeError: say it as the standard library does
        return _encode_json_header_stdlib(cmd)


if JSON_BACKEND == "orjson":
    _parse_json_header = _parse_json_orjson
    _encode_json_header = _encode_json_header_orjson
else:
    _parse_json_header = _parse_json_stdlib
    _encode_json_header = _encode_json_header_stdlib


def _decode_json_header(header: bytes | bytearray | memoryview, body: bytes) -> RemotingCommand:
    return _command_from_json(_parse_json_header(header), body)


def _command_from_json(obj: Any, body: bytes) -> RemotingCommand:
    if obj.__class__ is not dict:
        raise ProtocolError("bad-header-json", "header is not a JSON object")
    get: Callable[..., Any] = obj.get
    try:  # every field a Java peer writes (subscripts: no call each)
        code, opaque, flag, version = obj["code"], obj["opaque"], obj["flag"], obj["version"]
    except KeyError:
        code, opaque, flag, version = (
            get("code"),
            get("opaque", 0),
            get("flag", 0),
            get("version", 0),
        )
    # exact class checks: bool is an int subclass and must not pass for one
    if not (code.__class__ is opaque.__class__ is flag.__class__ is version.__class__ is int):
        for key, value in (("code", code), ("opaque", opaque), ("flag", flag),
                           ("version", version)):  # fmt: skip
            if value.__class__ is not int:
                raise _bad_int(key, value)
    remark = get("remark")
    if remark is not None and remark.__class__ is not str:
        raise ProtocolError("bad-header-json", "remark is not a string")
    ext = get("extFields")
    if ext is None:
        ext = {}
    elif ext.__class__ is not dict:
        raise ProtocolError("bad-header-json", "extFields is not an object")
    else:
        for value in ext.values():
            if value.__class__ is not str:
                ext = _coerce_ext(ext)
                break
    lang = get("language")
    # (a hostile unhashable value such as [] must not reach the dict lookup)
    language = _LANGUAGE_BY_NAME.get(lang, _OTHER) if lang.__class__ is str else _OTHER
    # positional, in field order (the cheapest attrs init on the receive path)
    return RemotingCommand(code, opaque, flag, ext, body, remark, language, version, _JSON)


#: The framing loop calls these two directly for JSON frames (one call less per frame):
#: the JSON value of a raw header (:class:`ProtocolError` if it is not JSON), and the command.
parse_json_header = _parse_json_header
command_from_json = _command_from_json


def _coerce_ext(raw: dict[str, Any]) -> dict[str, str]:
    """Slow path: extFields values that are not all strings (nulls dropped, scalars rendered)."""
    ext: dict[str, str] = {}
    for key, value in raw.items():
        if value is None:
            continue
        if isinstance(value, str):
            ext[key] = value
        elif isinstance(value, bool):
            ext[key] = "true" if value else "false"
        elif isinstance(value, (int, float)):
            ext[key] = str(value)
        else:
            raise ProtocolError("bad-header-json", f"extFields[{key!r}] is not a scalar")
    return ext


def _decode_binary_header(header: bytes | bytearray | memoryview, body: bytes) -> RemotingCommand:
    view = memoryview(header)
    size = len(view)
    if size < 21:
        raise ProtocolError("bad-header-binary", f"binary header of {size} bytes is too short")
    code, lang, version, opaque, flag, remark_len = _BIN_FIXED.unpack_from(view, 0)
    pos = 13 + 4
    if remark_len < 0 or pos + remark_len + 4 > size:
        raise ProtocolError("bad-header-binary", f"remark length {remark_len} out of range")
    try:
        remark = str(view[pos : pos + remark_len], "utf-8") if remark_len else None
        pos += remark_len
        (ext_len,) = _I32.unpack_from(view, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > size:
            raise ProtocolError("bad-header-binary", f"extFields length {ext_len} out of range")
        end = pos + ext_len
        ext: dict[str, str] = {}
        while pos < end:
            if pos + 2 > end:
                raise ProtocolError("bad-header-binary", "truncated extFields key length")
            (klen,) = _I16.unpack_from(view, pos)
            pos += 2
            if klen < 0 or pos + klen + 4 > end:
                raise ProtocolError(
                    "bad-header-binary", f"extFields key length {klen} out of range"
                )
            key = str(view[pos : pos + klen], "utf-8")
            pos += klen
            (vlen,) = _I32.unpack_from(view, pos)
            pos += 4
            if vlen < 0 or pos + vlen > end:
                raise ProtocolError(
                    "bad-header-binary", f"extFields value length {vlen} out of range"
                )
            value = str(view[pos : pos + vlen], "utf-8")
            pos += vlen
            if key and value:
                ext[key] = value
    except UnicodeDecodeError as exc:
        raise ProtocolError("bad-header-binary", f"invalid UTF-8: {exc}") from None
    try:
        language = LanguageCode(lang)
    except ValueError:
        language = LanguageCode.OTHER
    # positional, in field order (the cheapest attrs init on the receive path)
    return RemotingCommand(
        code, opaque, flag, ext, body, remark, language, version, SerializeType.ROCKETMQ
    )
