"""The command line's commands, one module each (``plan`` and ``report`` share one), loaded only when named
(``trainsizer.cli_groups.LAZY_COMMANDS``)."""
