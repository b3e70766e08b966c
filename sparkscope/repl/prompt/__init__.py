"""The prompt: prompt-toolkit's session, completion, highlighting, statements, the terminal."""
