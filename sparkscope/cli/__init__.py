"""The command line without a prompt: -c, -f and a piped script (batch.py), and `sparkscope server …` and
`checkpoints …` (server.py)."""
