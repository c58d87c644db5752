"""The actor kernel on anyio: mailboxes, a registry, a dynamic supervisor, broker connections
and the router that delivers broker-initiated requests to their owners."""
