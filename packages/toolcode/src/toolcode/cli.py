"""The ``toolcode`` command: demo, serve, exec, search, describe, tools, namespaces, report.

Run ``toolcode --help`` (or ``toolcode COMMAND --help``) for the options; exit codes are listed
there and in :data:`toolcode._cli._parser.EXIT_CODES`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import anyio

from toolcode._cli._commands import UsageError, run_command
from toolcode._cli._parser import EXIT_CODES, build_parser

__all__ = ["EXIT_CODES", "main"]


def _configure_logging(verbosity: int) -> None:
    # Logs go to stderr: stdout carries results, and the MCP stdio transport in `serve`.
    from toolcode.server import log_to_stderr

    log_to_stderr((logging.WARNING, logging.INFO, logging.DEBUG)[min(verbosity, 2)])


def exit_code_for(exc: BaseException) -> int:
    """The documented exit code for an error that ended a command."""
    from toolcode.exceptions import CodeExecutionError, ConfigurationError, EngineError, LimitExceededError, ToolError
    from toolindex import ToolIndexError
    from toolrun import ToolRunError
    from toolrun.exceptions import BackendUnavailableError, ConfigError

    if isinstance(exc, UsageError):
        return 2
    if isinstance(exc, CodeExecutionError | ToolError):
        return 1
    if isinstance(exc, LimitExceededError):
        return 4
    if isinstance(exc, EngineError | BackendUnavailableError):
        return 5
    if isinstance(exc, ConfigurationError | ConfigError | ToolIndexError | FileNotFoundError | IsADirectoryError):
        return 3
    if isinstance(exc, ToolRunError):
        return 1
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it).

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code (see ``toolcode --help``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from importlib.metadata import version

        sys.stdout.write(f"toolcode {version('toolcode')}\n")
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    _configure_logging(args.verbose)
    from rich.console import Console
    from rich.markup import escape

    from toolcode._cli._commands import _Handled  # pyright: ignore[reportPrivateUsage]
    from toolcode._errors import describe_error

    try:
        return anyio.run(run_command, args)
    except KeyboardInterrupt:
        return 130
    except _Handled as handled:
        return exit_code_for(handled.cause)
    except Exception as exc:  # the last stop before the shell: show it and map it to an exit code
        code = exit_code_for(exc)
        if code == 2:
            parser.error(str(exc))
        Console(stderr=True, highlight=False).print(f"[red]error:[/] {escape(describe_error(exc))}")
        if args.verbose >= 2:
            raise
        return code


if __name__ == "__main__":
    sys.exit(main())
