"""The query catalog on this machine: records, restarting what outlived its session, checkpoints."""
