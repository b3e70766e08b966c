"""Watching queries: progress, the listener's events, alerts, late data."""
