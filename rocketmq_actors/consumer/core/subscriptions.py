"""Subscriptions: what a consumer keeps of a topic, by tag expression or SQL92 selector."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import attrs

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import _is_system, unwrap, wrap
from rocketmq_actors.protocol.bodies import SubscriptionData
from rocketmq_actors.protocol.messages import java_string_hash
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["MessageSelector", "Subscription", "matching_topics", "subscription_table"]


@attrs.frozen
class MessageSelector:
    """What a subscription keeps: ``MessageSelector.by_tag("a || b")`` (the default form, also
    given as a plain string) or ``MessageSelector.by_sql("region = 'eu' AND amount > 10")``, a
    SQL92 expression over message properties evaluated by the broker (the broker needs
    ``enablePropertyFilter=true``)."""

    expression: str
    expression_type: str = "TAG"

    @classmethod
    def by_tag(cls, expression: str = "*") -> MessageSelector:
        """Messages whose tag is one of ``expression``'s (``"a || b"``; ``"*"``: every one)."""
        return cls(expression, "TAG")

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        """Messages whose properties match a SQL92 ``expression``, evaluated by the broker
        (it needs ``enablePropertyFilter=true``)."""
        if not expression.strip():
            raise ConfigError("a SQL92 selector needs an expression")
        return cls(expression, "SQL92")


@attrs.frozen
class Subscription:
    """A parsed subscription expression: ``*``, ``a || b`` (tags), or SQL92."""

    topic: str
    expression: str = "*"
    expression_type: str = "TAG"
    tags: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, topic: str, expression: str = "*", expression_type: str = "TAG") -> Subscription:
        expression_type = expression_type.upper()
        if expression_type not in ("TAG", "SQL92"):
            raise ConfigError(f"expression type {expression_type!r} is not TAG or SQL92")
        expression = expression.strip() or "*"
        if expression_type == "SQL92" or expression == "*":
            return cls(topic, expression, expression_type)
        tags = frozenset(t.strip() for t in expression.split("||") if t.strip())
        if not tags:
            raise ConfigError(f"tag expression {expression!r} names no tag")
        return cls(topic, " || ".join(sorted(tags)), "TAG", tags)

    @classmethod
    def of(cls, topic: str, selector: str | MessageSelector) -> Subscription:
        if isinstance(selector, MessageSelector):
            if not (isinstance(selector.expression, str)
                    and isinstance(selector.expression_type, str)):  # fmt: skip
                raise ConfigError(f"subscriptions[{topic!r}]: a selector's expression and type "
                                  "are strings")  # fmt: skip
            return cls.parse(topic, selector.expression, selector.expression_type)
        if not isinstance(selector, str):
            raise ConfigError(
                f"subscriptions[{topic!r}] must be a tag expression (str) or a MessageSelector, "
                f"not {type(selector).__name__}"
            )
        return cls.parse(topic, selector)

    def wire(self, sub_version: int) -> SubscriptionData:
        return SubscriptionData(
            topic=self.topic,
            sub_string=self.expression,
            tags=tuple(sorted(self.tags)),
            codes=tuple(java_string_hash(t) for t in sorted(self.tags)),
            sub_version=sub_version,
            expression_type=self.expression_type,
        )

    def matches(self, message: MessageExt) -> bool:
        """The broker filters by tag hash codes, which can collide: check the exact tag. A
        message that could not be decoded is kept (its consumer deals with it)."""
        return not self.tags or message.decode_error is not None or message.tags in self.tags


def subscription_table(
    namespace: str | None, subscriptions: Mapping[str, str | MessageSelector]
) -> dict[str, Subscription]:
    """A consumer's ``subscriptions`` option parsed, keyed by the topic as the broker knows it
    (the namespace prefixed)."""
    return {
        wrap(namespace, topic): Subscription.of(wrap(namespace, topic), selector)
        for topic, selector in subscriptions.items()
    }


def matching_topics(
    names: Iterable[str], pattern: re.Pattern[str], namespace: str | None
) -> list[str]:
    """The topics of ``names`` (as the NameServer lists them) whose name, without the
    namespace, ``pattern`` matches in full: system, retry and dead-letter topics left out, and
    with a namespace only the topics in it. Sorted, as the wire names them."""
    return sorted(
        name for name in names
        if not _is_system(name) and not name.startswith(("%RETRY%", "%DLQ%"))
        and (namespace is None or unwrap(namespace, name) != name)
        and pattern.fullmatch(unwrap(namespace, name))
    )  # fmt: skip
