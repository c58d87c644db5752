"""RemotingCommand: golden vectors from protocol.md, round trips, typed failures."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_actors.protocol import command as command_module
from rocketmq_actors.protocol.codes import LanguageCode, SerializeType
from rocketmq_actors.protocol.command import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    RemotingCommand,
    decode_header,
)
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.framing import decode_frame

GOLDEN_JSON_HEADER = (
    b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":1,'
    b'"serializeTypeCurrentRPC":"JSON","version":401}'
)
GOLDEN_BINARY_HEADER = bytes.fromhex(
    "00690001910000000100000000000000000000000c0005746f7069630000000154"
)


def _golden(serialize_type: SerializeType) -> RemotingCommand:
    return RemotingCommand(
        code=105,
        opaque=1,
        ext_fields={"topic": "T"},
        language=LanguageCode.JAVA,
        version=401,
        serialize_type=serialize_type,
    )


def test_json_golden_vector() -> None:
    frame = _golden(SerializeType.JSON).encode()
    assert frame[:8] == bytes.fromhex("0000007F0000007B")
    assert frame[8:] == GOLDEN_JSON_HEADER
    assert decode_frame(frame) == _golden(SerializeType.JSON)


def test_binary_golden_vector() -> None:
    frame = _golden(SerializeType.ROCKETMQ).encode()
    assert frame[:8] == bytes.fromhex("0000002501000021")
    assert frame[8:] == GOLDEN_BINARY_HEADER
    assert decode_frame(frame) == _golden(SerializeType.ROCKETMQ)


def test_binary_header_with_remark_and_body() -> None:
    cmd = RemotingCommand(
        code=17,
        opaque=-5,
        flag=FLAG_RESPONSE,
        remark="topic[x] not exist",
        body=b"\x00\x01",
        serialize_type=SerializeType.ROCKETMQ,
    )
    assert decode_frame(cmd.encode()) == cmd


def test_binary_header_drops_empty_values_like_java() -> None:
    cmd = RemotingCommand(
        code=10, ext_fields={"a": "", "b": "x"}, serialize_type=SerializeType.ROCKETMQ
    )
    assert decode_frame(cmd.encode()).ext_fields == {"b": "x"}


def test_binary_header_cannot_carry_pop_codes() -> None:
    cmd = RemotingCommand(code=200050, serialize_type=SerializeType.ROCKETMQ)
    with pytest.raises(ProtocolError, match="binary-header-range"):
        cmd.encode()


def test_flags_and_response_helper() -> None:
    req = RemotingCommand.request(39, {"k": "v"}, b"b", oneway=True)
    assert req.is_oneway and not req.is_response
    req.opaque = 77
    resp = req.response(3, remark="nope")
    assert resp.is_response and resp.opaque == 77 and resp.flag == FLAG_RESPONSE
    assert resp.remark == "nope" and resp.serialize_type == req.serialize_type


def test_unknown_language_name_and_number_decode_as_other() -> None:
    raw = b'{"code":0,"language":"COBOL","opaque":1,"flag":1,"version":1}'
    assert decode_header(0, raw, b"").language == LanguageCode.OTHER
    for hostile in (b"[]", b"{}", b"7"):  # unhashable or not a name: still just OTHER
        raw = b'{"code":0,"language":' + hostile + b"}"
        assert decode_header(0, raw, b"").language == LanguageCode.OTHER
    binary = bytearray(GOLDEN_BINARY_HEADER)
    binary[2] = 99
    assert decode_header(1, bytes(binary), b"").language == LanguageCode.OTHER


def test_json_ext_fields_scalars_are_stringified() -> None:
    raw = b'{"code":0,"extFields":{"a":1,"b":true,"c":null,"d":"x"},"opaque":1,"flag":0}'
    assert decode_header(0, raw, b"").ext_fields == {"a": "1", "b": "true", "d": "x"}


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1,2]",
        b'{"opaque":1}',
        b'{"code":"105"}',
        b'{"code":true}',
        b'{"code":1,"extFields":[]}',
        b'{"code":1,"extFields":{"a":{}}}',
        b'{"code":1,"remark":5}',
        b'{"code":1,"opaque":1.5}',
        b'{"code":1} trailing',
        b"",
        b"\xff\xfe",
    ],
)
def test_bad_json_headers_raise_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_header(0, raw, b"")


@pytest.mark.parametrize(
    "raw",
    [
        GOLDEN_BINARY_HEADER[:20],
        GOLDEN_BINARY_HEADER[:13] + struct.pack(">i", 1000) + GOLDEN_BINARY_HEADER[17:],
        GOLDEN_BINARY_HEADER[:13] + struct.pack(">i", -1) + GOLDEN_BINARY_HEADER[17:],
        GOLDEN_BINARY_HEADER[:17] + struct.pack(">i", 999) + GOLDEN_BINARY_HEADER[21:],
        GOLDEN_BINARY_HEADER[:21] + struct.pack(">h", -3) + GOLDEN_BINARY_HEADER[23:],
        GOLDEN_BINARY_HEADER[:21] + b"\x00\x05\xff\xff\xff\xff\xff" + GOLDEN_BINARY_HEADER[28:],
    ],
)
def test_bad_binary_headers_raise_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_header(1, raw, b"")


def test_unknown_serialize_type() -> None:
    with pytest.raises(ProtocolError, match="bad-serialize-type"):
        decode_header(7, b"{}", b"")


_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20)
_ext = st.dictionaries(_text.filter(bool), _text.filter(bool), max_size=6)


@given(
    code=st.integers(-32768, 32767),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.sampled_from([0, FLAG_RESPONSE, FLAG_ONEWAY]),
    ext=_ext,
    body=st.binary(max_size=64),
    remark=st.one_of(st.none(), _text.filter(bool)),
    serialize_type=st.sampled_from(list(SerializeType)),
    version=st.integers(0, 32767),
    language=st.sampled_from(list(LanguageCode)),
)
def test_round_trip(
    code: int,
    opaque: int,
    flag: int,
    ext: dict[str, str],
    body: bytes,
    remark: str | None,
    serialize_type: SerializeType,
    version: int,
    language: LanguageCode,
) -> None:
    cmd = RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        ext_fields=ext,
        body=body,
        remark=remark,
        serialize_type=serialize_type,
        version=version,
        language=language,
    )
    assert decode_frame(cmd.encode()) == cmd


# ---- the two JSON header parsers (standard library; orjson when installed) --------------------

_HEADERS = [
    b'{"code":0,"extFields":{"offset":"123456"},"flag":1,"language":"JAVA","opaque":12345,'
    b'"serializeTypeCurrentRPC":"JSON","version":473}',
    b'{"code":17,"flag":1,"opaque":3,"remark":"topic[T] not exist, apply first please!",'
    b'"language":"CPP","version":1}',
    b'{"code":10,"extFields":{"a":"g","b":1,"c":null,"d":true},"opaque":-5}',
    '{"code":1,"remark":"caf\u00e9 \u2603","language":"GO"}'.encode(),
]


def _outcome(parse: Callable[[bytes], object], header: bytes) -> object:
    try:
        return command_module._command_from_json(parse(header), b"")
    except ProtocolError as exc:
        return ("ProtocolError", exc.reason)


@pytest.mark.skipif(command_module._orjson_loads is None, reason="orjson is not installed")
@settings(max_examples=2000, deadline=None)
@given(
    seed=st.sampled_from(_HEADERS),
    cut=st.integers(0, 200),
    junk=st.binary(max_size=6),
    at=st.integers(0, 200),
)
def test_orjson_and_stdlib_parsers_agree(seed: bytes, cut: int, junk: bytes, at: int) -> None:
    """Differential: on valid and damaged headers, both parsers give the same command or both
    a ProtocolError (never another exception)."""
    for header in (seed, seed[:cut], seed[:at] + junk + seed[at:]):
        stdlib = _outcome(command_module._parse_json_stdlib, header)
        fast = _outcome(command_module._parse_json_orjson, header)
        if isinstance(stdlib, RemotingCommand) or isinstance(fast, RemotingCommand):
            assert stdlib == fast, header
        else:
            assert stdlib[0] == fast[0] == "ProtocolError"  # type: ignore[index]


@pytest.mark.skipif(command_module._orjson_dumps is None, reason="orjson is not installed")
@settings(max_examples=1000, deadline=None)
@given(
    code=st.integers(-(2**31), 2**31 - 1),
    opaque=st.integers(-(2**31), 2**31 - 1),
    ext=st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=5),
    remark=st.one_of(st.none(), st.text(max_size=20)),
    language=st.sampled_from(list(LanguageCode)),
)
def test_orjson_and_stdlib_header_encoders_agree(
    code: int, opaque: int, ext: dict[str, str], remark: str | None, language: LanguageCode
) -> None:
    """Differential: the orjson encoder writes the standard-library encoder's bytes exactly
    (control characters, quotes and non-ASCII text included), or both refuse the command."""
    cmd = RemotingCommand(code, opaque, 0, ext, b"", remark, language)
    outcomes: list[bytes | type[ValueError]] = []
    for encode in (command_module._encode_json_header_stdlib,
                   command_module._encode_json_header_orjson):  # fmt: skip
        try:
            outcomes.append(encode(cmd))
        except ValueError as exc:  # lone surrogates cannot be UTF-8
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]
    if isinstance(outcomes[0], bytes):
        assert decode_header(0, outcomes[0], b"") == cmd


def test_orjson_header_encoder_falls_back_for_keys_it_refuses() -> None:
    cmd = RemotingCommand(10, ext_fields={1: "x"})  # type: ignore[dict-item]
    assert command_module._encode_json_header_orjson(cmd) == (
        command_module._encode_json_header_stdlib(cmd)
    )


def test_both_header_encoders_write_enum_codes_as_numbers() -> None:
    from rocketmq_actors.protocol.codes import RequestCode

    cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "T"})
    for encode in (command_module._encode_json_header_stdlib,
                   command_module._encode_json_header_orjson):  # fmt: skip
        assert encode(cmd).startswith(b'{"code":%d,' % RequestCode.GET_MAX_OFFSET)
