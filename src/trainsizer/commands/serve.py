"""``trainsizer serve``: the local web planner."""

from typing import Annotated

import typer

from trainsizer.errors import N_, InputError


def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to listen on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[int | None, typer.Option(help="Worker processes computing plans (default: one per "
                                                "core; 0: in the server process).")] = None,
    queue_limit: Annotated[int | None, typer.Option("--queue-limit", help="Requests that may wait for a worker "
                                                    "(default: 64, 8 per worker past 8); more are 503.")] = None,
) -> None:
    r"""The local web planner (pip install -e '.\[web]'): forms, plan, charts, JSON API with OpenAPI."""
    if not 1 <= port <= 65535:
        raise InputError("--port", N_("{value}; accepted: {low} to {high}"), value=port, low=1, high=65535)
    if workers is not None and not 0 <= workers <= 256:
        raise InputError("--workers", N_("{value}; accepted: {low} to {high}"), value=workers, low=0, high=256)
    if queue_limit is not None and not 0 <= queue_limit <= 10_000:
        raise InputError("--queue-limit", N_("{value}; accepted: {low} to {high}"), value=queue_limit, low=0,
                         high=10000)
    try:
        from trainsizer.web.app import serve
    except ImportError as exc:
        raise InputError("serve", f"the web planner needs its extra: pip install -e '.[web]' ({exc.name} missing)") \
            from None
    serve(host, port, workers, queue_limit)
