"""The colon commands: the one registry, and the commands by concern."""
