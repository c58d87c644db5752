"""Consumers: rebalance strategies, offset stores (push and pull consumers to come)."""
