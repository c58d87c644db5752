"""``acl`` and ``controller`` refuse a usage mistake with exit status 2 and one line, before
any client starts (the work itself: tests/security/test_acl_admin_real.py,
tests/test_controlleradmin_real.py)."""

from __future__ import annotations

import pytest

from rocketmq_actors.cli import main

# nothing listens there: a command that got as far as the network would exit 1, not 2
NS = ("--namesrv", "127.0.0.1:1")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["acl", "user", "create", "--username", "u"], "--password"),
        (["acl", "user", "get"], "--username"),
        (["acl", "user", "update", "--username", "u"], "--user-status"),
        (["acl", "user", "create", "--username", "u", "--password", "p", "--user-type", "Root"],
         "Root"),
        (["acl", "user", "list", "--cluster", "C", "--addr", "h:1"], "not both"),
        (["acl", "user", "list", "--access-key", "ak"], "--secret-key"),
        (["acl", "policy", "get"], "--subject"),
        (["acl", "policy", "create", "--subject", "User:u", "--resources", "Topic:t"],
         "--actions"),
        (["acl", "policy", "create", "--subject", "User:u", "--resources", "Topic:t",
          "--actions", "Publish"], "Publish"),
        (["acl", "policy", "update", "--subject", "u", "--resources", "Topic:t",
          "--actions", "Pub"], "User:"),
        (["acl", "policy", "create", "--subject", "User:u", "--resources", "Topic:t",
          "--actions", "Pub", "--decision", "Maybe"], "Maybe"),
        (["acl", "user", "list", "--addr", "no-port"], "--addr"),
        (["controller", "metadata"], "--controller"),
        (["controller", "metadata", "--controller", "no-port"], "not host:port"),
        (["controller", "sync-state", "--controller", "h:1"], "--broker"),
        (["controller", "elect-master", "--controller", "h:1", "--broker", "b"], "--cluster"),
    ],
)  # fmt: skip
def test_a_usage_mistake_is_exit_2_before_any_io(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.delenv("ROCKETMQ_ACCESS_KEY", raising=False)
    monkeypatch.delenv("ROCKETMQ_SECRET_KEY", raising=False)
    assert main([*argv, *NS]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and words in err, err
