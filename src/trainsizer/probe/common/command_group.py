"""A typer group whose arguments after ``--`` are the user's own command (``burnin -- python train.py``,
``probe profile -- torchrun ... train.py``), never subcommand names; the command lands in
``ctx.meta["trailing_command"]``, which click shares between a group and its subcommands."""

from typing import Any

from typer.core import TyperGroup

META_KEY = "trailing_command"


class TrailingCommandGroup(TyperGroup):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta[META_KEY] = args[i + 1:]
            args = args[:i]
        return super().parse_args(ctx, args)
