"""What every consumer shares: received messages and their settlement, handlers, offsets, rebalance
strategies, broker calls."""
