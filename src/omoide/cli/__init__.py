"""The ``omoide`` command line: a thin shell over the library (see :mod:`.commands`)."""

from omoide.cli.commands import COMMANDS, Command, build_parser, main

__all__ = ["COMMANDS", "Command", "build_parser", "main"]
