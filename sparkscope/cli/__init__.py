"""The command line: `sparkscope`, its flags, and `sparkscope server …`."""
