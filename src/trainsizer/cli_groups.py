"""A command group whose sub-apps load on first use: ``trainsizer estimate`` never imports the probe and
burn-in (and catalog) command modules (about 10 ms of a 0.3 s budget), while ``trainsizer --help`` and
``trainsizer probe ...`` see them as if they had been added with ``add_typer``.

This is Click's documented lazy-loading pattern ("Lazily Loading Subcommands", Click 8 docs:
https://click.palletsprojects.com/en/stable/complex/#lazily-loading-subcommands) on typer's group class.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup

# name -> "module:attribute" of a typer.Typer app, in the order --help lists them
LAZY_SUBAPPS: dict[str, str] = {
    "burnin": "trainsizer.probe.burnin.cli:burnin_app",  # `trainsizer burnin [opts] [-- cmd...]`; `burnin report`
    "catalog": "trainsizer.cli_catalog:catalog_app",  # `trainsizer catalog gpus|links|sites|models [--lang]`
    "probe": "trainsizer.probe.cli:probe_app",  # `trainsizer probe memory|profile|comm`
}


def skip_unset_options(command: Any, ctx: Any) -> None:
    """An option the user left out keeps its default without a conversion. Typer 0.29 converts every value,
    defaults too, through a pydantic ``TypeAdapter`` it builds per option on first use: 1-2 ms each, and the first
    one imports pydantic's adapter machinery (40-60 ms of ``trainsizer estimate`` on a 2-core machine). Its own
    conversion turns ``None`` into ``None`` (``()`` for a repeatable option) without the adapter, and the declared
    default of a plain number or string into itself; this does the same without building the adapter. Any value
    the user gives is converted and checked exactly as before. (Typer versions without adapters: the same result.)"""
    if getattr(command, "_trainsizer_skips_defaults", False):
        return
    command._trainsizer_skips_defaults = True
    params = command.get_params(ctx) if hasattr(command, "get_params") else getattr(command, "params", ())
    for param in params:  # get_params: --help too
        if getattr(param, "required", False) or not hasattr(param, "process_value"):
            continue
        process, default = param.process_value, getattr(param, "default", None)
        many = bool(getattr(param, "multiple", False)) or getattr(param, "nargs", 1) == -1

        def process_value(ctx: Any, value: Any, param: Any = param, process: Any = process, default: Any = default,
                          many: bool = many) -> Any:
            if value is None:
                value = () if many else None
            elif not (value is default and type(value) in (int, float, str)):
                return process(ctx, value)
            return value if param.callback is None else param.callback(ctx, param, value)

        param.process_value = process_value


class LazyGroup(TyperGroup):
    """A TyperGroup that builds the sub-apps of LAZY_SUBAPPS only when one is named or help lists them."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(name for name in LAZY_SUBAPPS if name not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in LAZY_SUBAPPS and cmd_name not in self.commands:
            module, attribute = LAZY_SUBAPPS[cmd_name].split(":")
            group = typer.main.get_command(getattr(importlib.import_module(module), attribute))
            group.name = cmd_name
            self.commands[cmd_name] = group
        command = super().get_command(ctx, cmd_name)
        if command is not None and cmd_name not in LAZY_SUBAPPS:
            skip_unset_options(command, ctx)
        return command

    def parse_args(self, ctx: Any, args: list[str]) -> Any:
        skip_unset_options(self, ctx)  # the group's own options (--help)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A mistyped command name is suggested among the lazy sub-apps too ("Did you mean 'probe'?")."""
        try:
            return super().resolve_command(ctx, args)
        except Exception:
            for name in LAZY_SUBAPPS:
                self.get_command(ctx, name)
            return super().resolve_command(ctx, args)
