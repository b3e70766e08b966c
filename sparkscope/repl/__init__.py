"""The terminal front end: prompt-toolkit's prompt, its completion and highlighting, and the terminal beneath it.
It runs what is typed through the core (sparkscope.core), as the notebook does."""
