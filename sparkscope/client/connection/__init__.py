"""Connecting: the server's URL, profiles and tokens, the first probe, what the server can run."""
