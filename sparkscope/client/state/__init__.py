"""A stateful query's state store: reading it, its changes, its columns."""
