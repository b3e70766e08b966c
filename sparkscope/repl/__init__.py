"""The interactive REPL: the executor that runs Python and colon commands, its worker threads and context."""
