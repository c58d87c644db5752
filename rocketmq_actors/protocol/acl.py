"""ACL 1.0 request signing (also verified by the 5.3 auth module: username = AccessKey).

The signature is Base64(HMAC-SHA1(secret, content)) where content is the concatenation of the
extFields *values* ordered by key in Java string order (UTF-16 code units), followed by the
body bytes. Sign last: no field may change afterwards.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

import attrs

__all__ = ["AclCredentials", "sign"]

ACCESS_KEY = "AccessKey"
SECURITY_TOKEN = "SecurityToken"
SIGNATURE = "Signature"


@attrs.frozen(repr=False)
class AclCredentials:
    """ACL credentials (``ClientOptions(credentials=...)``): every request is signed with the
    secret key (Java's ``AclClientRPCHook``); ``security_token`` for temporary credentials."""

    access_key: str
    secret_key: str
    security_token: str | None = None

    def __repr__(self) -> str:  # never print the secret
        return f"AclCredentials(access_key={self.access_key!r}, secret_key='***')"


def _java_order(key: str) -> bytes:
    return key.encode("utf-16-be")


def sign(ext_fields: Mapping[str, str], body: bytes, creds: AclCredentials) -> dict[str, str]:
    """A copy of ``ext_fields`` with AccessKey, SecurityToken (if any) and Signature added."""
    fields = {k: v for k, v in ext_fields.items() if k != SIGNATURE}
    fields[ACCESS_KEY] = creds.access_key
    if creds.security_token:
        fields[SECURITY_TOKEN] = creds.security_token
    content = "".join(fields[k] for k in sorted(fields, key=_java_order)).encode() + body
    digest = hmac.new(creds.secret_key.encode(), content, hashlib.sha1).digest()
    fields[SIGNATURE] = base64.b64encode(digest).decode()
    return fields
