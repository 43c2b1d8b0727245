"""What every probe shares: launching ranks (``torchrun``-style child processes), naming the local GPU by the
catalog, the progress line, and the typer group that passes a trailing command through."""
