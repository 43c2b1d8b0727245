"""A command group whose commands and sub-apps load on first use: ``trainsizer plan`` imports the plan command's
module and builds its options, never the other commands' (the estimate's options generated from the scenario, the
web server, the probes, the report writers), while ``trainsizer --help`` lists every command from its docstring
without building its options, and ``trainsizer probe ...`` sees the sub-app as if it had been added with
``add_typer``.

This is Click's documented lazy-loading pattern ("Lazily Loading Subcommands", Click 8 docs:
https://click.palletsprojects.com/en/stable/complex/#lazily-loading-subcommands) on typer's group class.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

# name -> "module:function" of a command, in the order --help lists them (trainsizer.commands: one module each)
LAZY_COMMANDS: dict[str, str] = {
    "estimate": "trainsizer.commands.estimate:estimate",
    "validate": "trainsizer.commands.validate:validate",
    "plan": "trainsizer.commands.plan:plan_cmd",
    "report": "trainsizer.commands.plan:report_cmd",
    "quotes": "trainsizer.commands.quotes:quotes_cmd",
    "scale": "trainsizer.commands.scale:scale_cmd",
    "serve": "trainsizer.commands.serve:serve_cmd",
    "calibrate": "trainsizer.commands.calibrate:calibrate_cmd",
    "data-shape": "trainsizer.commands.data_shape:data_shape",
}
# name -> "module:attribute" of a typer.Typer app, listed after the commands
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


def _function(target: str) -> Any:
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


def typer_callback(command: Any) -> Any:
    """The function typer reads a command's parameters from: ``command`` itself, or, for a command whose options
    are generated (request_flags.with_plan_flags, scenario_flags.with_scenario_flags), the function that has them,
    built now."""
    generated = getattr(command, "with_generated_options", None)
    return generated() if generated is not None else command


class LazyGroup(TyperGroup):
    """A TyperGroup that builds a command of LAZY_COMMANDS, or a sub-app of LAZY_SUBAPPS, only when it is named;
    its ``--help`` lists the commands from their docstrings (what typer's help of a command is) without building
    their options."""

    listing = False  # True while the group's own help is written

    def list_commands(self, ctx: Any) -> list[str]:
        return [*LAZY_COMMANDS, *(name for name in self.commands if name not in LAZY_COMMANDS),
                *(name for name in LAZY_SUBAPPS if name not in self.commands)]

    def _build(self, cmd_name: str) -> Any:
        if cmd_name in LAZY_SUBAPPS:
            group = typer.main.get_command(_function(LAZY_SUBAPPS[cmd_name]))
            group.name = cmd_name
            return group
        one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        one.command(cmd_name)(typer_callback(_function(LAZY_COMMANDS[cmd_name])))
        return typer.main.get_command(one)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self.listing and cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            return TyperCommand(cmd_name, help=inspect.getdoc(_function(LAZY_COMMANDS[cmd_name])))
        if cmd_name in {**LAZY_COMMANDS, **LAZY_SUBAPPS} and cmd_name not in self.commands:
            self.commands[cmd_name] = self._build(cmd_name)
        command = super().get_command(ctx, cmd_name)
        if command is not None and cmd_name not in LAZY_SUBAPPS:
            skip_unset_options(command, ctx)
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False

    def parse_args(self, ctx: Any, args: list[str]) -> Any:
        skip_unset_options(self, ctx)  # the group's own options (--help)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A mistyped command name is suggested among the lazy commands and sub-apps too ("Did you mean
        'probe'?")."""
        try:
            return super().resolve_command(ctx, args)
        except Exception:
            for name in (*LAZY_COMMANDS, *LAZY_SUBAPPS):
                self.get_command(ctx, name)
            return super().resolve_command(ctx, args)
