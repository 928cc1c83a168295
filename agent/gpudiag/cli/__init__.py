"""The command line (typer): thin commands over one typed request (:mod:`.request`), options declared once
(:mod:`.options`), the run loop and its signals (:mod:`.common`), and what draws on the terminal while a command
runs (:mod:`.progress`, :mod:`.live`). The only layer that prints."""
