"""The ``trainsizer`` command line: the app and the executable. Each command is a small function in its own module
(``trainsizer.commands``; every number from trainsizer.workflows), loaded only when named (cli_groups.LazyGroup), so
that ``trainsizer plan`` never imports another command's module or builds its options, and ``trainsizer --help``
starts fast.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

GC_THRESHOLD = 100_000  # allocations between the collector's young-generation passes in the executable (console)


@functools.cache
def _app() -> typer.Typer:
    """The app, made on first use (``trainsizer.cli.app``): importing this module imports no typer, so that the
    executable sets the collector's threshold (:func:`console`) before typer and click are imported."""
    import typer

    from trainsizer.cli_groups import LazyGroup

    app = typer.Typer(cls=LazyGroup, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                      help="Size AI training jobs: per-GPU memory, speed, a searched plan of GPUs and layout, "
                           "the servers, site fit and rent-or-buy cost. Bad input exits 2 with one line naming "
                           "the field.")
    # every command, and the `burnin`, `probe` and `catalog` sub-apps, load when named (cli_groups.LazyGroup)
    app.callback()(_commands)
    return app


def _commands() -> None:
    """Typer makes a group of an app with a callback; its commands are cli_groups.LAZY_COMMANDS."""


def __getattr__(name: str) -> Any:
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console entry point: user mistakes print one line and exit 2, never a traceback."""
    import typer

    from trainsizer.errors import InputError

    # trainsizer uses no pydantic plugin; finding none costs an entry-point scan of every installed package
    # (~25 ms of a 0.3 s command). PYDANTIC_DISABLE_PLUGINS: https://docs.pydantic.dev/latest/concepts/plugins/
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    try:
        _app()(standalone_mode=False)
    except InputError as exc:
        from trainsizer.i18n import lang_of_argv
        from trainsizer.report.error_text import error_text

        typer.echo(error_text(exc, lang_of_argv(sys.argv[1:])), err=True)
        sys.exit(2)
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except Exception as exc:  # click / typer usage errors (typer >= 0.29 ships its own copy of click)
        if hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int):
            # one line, like every other user mistake: the option and what is wrong (no usage block)
            param = getattr(exc, "param", None)
            name = (param.opts[0] if getattr(param, "opts", None) else getattr(param, "name", "")) if param else ""
            message = " ".join(exc.format_message().split())
            typer.echo(f"error: {name + ': ' if name and name not in message else ''}{message}", err=True)
            sys.exit(2)
        raise


def console() -> None:
    """The ``trainsizer`` executable: :func:`main`, then an exit without Python's last garbage collection."""
    # A command is a short process that builds many long-lived objects (modules, catalogs, schemas): the cyclic
    # collector's default first threshold (700 allocations) traverses them over and over while they are made
    # (~30 ms of a 0.5 s plan; set before typer and click are imported: ~2 ms more). A larger one still collects
    # cycles in long commands (burn-in, validate).
    # https://docs.python.org/3/library/gc.html#gc.set_threshold
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    # numpy's OpenBLAS starts one busy thread per core at import; the planner makes no BLAS call worth threads,
    # and on a 2-core machine they take the other core for ~60 ms. Set before numpy loads; the user's value wins.
    # https://github.com/OpenMathLib/OpenBLAS#setting-the-number-of-threads-using-environment-variables
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # the classes a command creates compile their generated methods once, not in every run (method_code_cache)
    from trainsizer import method_code_cache

    method_code_cache.install()
    try:
        main()
    finally:
        method_code_cache.save()
        # The process ends here. At shutdown Python would still traverse every object the imports created for a
        # final collection (~40 ms of a 0.3 s command); gc.freeze() moves them out of the collector's reach, so
        # exit frees them by reference count only. Streams are still flushed and atexit handlers still run.
        # (Not in main(): tests and the Python API call main() in a process that goes on.)
        gc.freeze()


if __name__ == "__main__":
    console()
