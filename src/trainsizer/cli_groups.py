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
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A mistyped command name is suggested among the lazy sub-apps too ("Did you mean 'probe'?")."""
        try:
            return super().resolve_command(ctx, args)
        except Exception:
            for name in LAZY_SUBAPPS:
                self.get_command(ctx, name)
            return super().resolve_command(ctx, args)
