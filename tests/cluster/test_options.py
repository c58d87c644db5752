"""ClientOptions: a frozen value, every wrong option a ConfigError when it is built."""

from __future__ import annotations

import math
import ssl
from typing import Any

import attrs
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.acl import AclCredentials


def test_defaults_and_a_list_of_nameservers_kept_as_a_tuple() -> None:
    options = ClientOptions(namesrv=["a:9876", "b:9876"])
    assert options.namesrv == ("a:9876", "b:9876")
    assert (options.request_timeout, options.shutdown_timeout) == (3.0, 10.0)
    assert not options.tracing and not options.trace and options.on_error is None
    assert hash(options) == hash(ClientOptions(namesrv=("a:9876", "b:9876")))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.namespace = "x"  # type: ignore[misc]


def test_evolve_checks_what_it_changes() -> None:
    options = ClientOptions(namespace="shop")
    assert options.evolve(shutdown_timeout=2.0).namespace == "shop"
    with pytest.raises(ConfigError, match="shutdown_timeout"):
        options.evolve(shutdown_timeout=0)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"namesrv": "no-port"}, "host:port"),
        ({"namesrv": ["a:1", 7]}, "strings"),
        ({"namesrv": 9876}, "namesrv"),
        ({"namesrv": ""}, "no NameServer"),
        ({"namespace": ""}, "namespace"),
        ({"namespace": "bad name"}, "characters"),
        ({"instance_name": 3}, "instance_name"),
        ({"ssl_context": "tls"}, "ssl_context"),
        ({"credentials": ("ak", "sk")}, "credentials"),
        ({"request_timeout": math.nan}, "request_timeout"),
        ({"shutdown_timeout": -1.0}, "shutdown_timeout"),
        ({"shutdown_timeout": True}, "shutdown_timeout"),
        ({"tracing": "yes"}, "tracing"),
        ({"trace": 1}, "trace"),
        ({"trace_topic": "a b"}, "characters"),
        ({"on_error": "log"}, "on_error"),
    ],
)
def test_a_wrong_option_is_a_config_error_when_built(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ClientOptions(**changes)


def test_what_a_shared_instance_takes_is_accepted_here() -> None:
    options = ClientOptions(
        ssl_context=ssl.create_default_context(),
        credentials=AclCredentials("ak", "sk"),
        instance_name="worker-1",
        on_error=print,
    )
    assert options.credentials is not None and "sk" not in repr(options)
