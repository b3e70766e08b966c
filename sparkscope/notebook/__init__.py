"""sparkscope in IPython and Jupyter: `%load_ext sparkscope` gives a kernel the REPL's session (spark, ss, display,
dbutils), its colon commands as magics (%start, %peek, %state …, %%sql, %fs), a streaming DataFrame's display() that
updates in its cell, and %watch. The front end over the same executor, registry and rendering as the terminal's
(kernel.py: the kernel's session and cells; extension.py: loading them; magics.py: the magics; streams.py: outputs that update in place)."""
