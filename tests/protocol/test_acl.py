from __future__ import annotations

import base64
import hashlib
import hmac

from rocketmq_actors.protocol.acl import AclCredentials, sign


def test_golden_signature_from_protocol_md() -> None:
    signed = sign({"topic": "T"}, b"", AclCredentials("ak", "sk"))
    assert signed == {"topic": "T", "AccessKey": "ak", "Signature": "vX6jW2Q9g11lvMjNC+gReuZ8fTQ="}


def _expected(content: bytes, secret: str = "sk") -> str:
    return base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha1).digest()).decode()


def test_values_sorted_by_key_in_java_order_then_body() -> None:
    # Java orders by UTF-16 code units: uppercase before lowercase, BMP before surrogates
    fields = {"b": "2", "B": "1", "\U0001f600": "4", "\uffff": "3"}
    signed = sign(fields, b"BODY", AclCredentials("ak", "sk", security_token="tok"))
    # Java order: AccessKey, B, SecurityToken, b, U+1F600 (UTF-16 D83D DE00), U+FFFF.
    # Code-point order would put U+FFFF before U+1F600; Java's does not.
    content = ("ak" + "1" + "tok" + "2" + "4" + "3").encode() + b"BODY"
    assert signed["Signature"] == _expected(content)
    assert signed["SecurityToken"] == "tok"


def test_resigning_replaces_an_old_signature() -> None:
    creds = AclCredentials("ak", "sk")
    once = sign({"topic": "T"}, b"", creds)
    assert sign(once, b"", creds) == once


def test_credentials_repr_hides_the_secret() -> None:
    assert "sk-secret" not in repr(AclCredentials("ak", "sk-secret"))
