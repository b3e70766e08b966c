"""Streaming queries: starting them, the ones a session knows, their sources and sinks, reading their rows."""
