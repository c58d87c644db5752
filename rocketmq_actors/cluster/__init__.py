"""NameServer client, route table, heartbeats and the ClientInstance that owns them."""
