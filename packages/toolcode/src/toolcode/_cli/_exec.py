"""``toolcode exec`` and ``toolcode resume``: a run, the decisions it waits for, and its exit code."""

from __future__ import annotations

import argparse
import getpass

from toolcode._cli._common import (
    Handled,
    again,
    connected,
    decide,
    json_arg,
    read_code,
    stderr,
    stdout,
)
from toolcode._cli._parser import SNIPPET_FAILED_EXIT, USAGE_EXIT, exit_code
from toolcode._cli._render import print_json, render_outcome
from toolcode._outcome import outcome_json
from toolcode.models import ExecuteOutcome

__all__ = ["cmd_exec", "cmd_resume"]

_MAX_QUESTIONS = 1000
"""Decisions asked for within one ``exec``, at most (then the run stays paused)."""


async def cmd_exec(args: argparse.Namespace) -> int:
    """Run a snippet; answer what it pauses for from ``--approve``, or by asking at the terminal."""
    code = read_code(args)
    data = json_arg(args.input, "--input")
    options = {
        "timeout": args.timeout,
        "max_tool_calls": args.max_tool_calls,
        "max_output_chars": args.max_output_chars,
        "allowed_namespaces": args.allow,
        "trace": args.trace,
        "type_check": args.type_check,
        "speculate": args.speculate,
    }
    async with connected(args) as box:
        options = {k: v for k, v in options.items() if v is not None}
        outcome = await box.codemode.execute(code, input=data, options=options, session=args.session)
        for _ in range(_MAX_QUESTIONS):
            approval = outcome.approval
            chosen = (
                decide(args.approve, approval.pending, approval.line, code, approval.snippet_code)
                if approval is not None
                else None
            )
            if approval is None or chosen is None:
                break  # done, or left paused
            outcome = await box.codemode.resume(approval.execution_id, chosen[0], by=chosen[1])
        _print_outcome(args, outcome)
    return _exit_for(outcome)


async def cmd_resume(args: argparse.Namespace) -> int:
    """Decide about a paused run and continue it."""
    async with connected(args) as box:
        outcome = await box.codemode.resume(args.execution_id, args.decision, by=f"person:{getpass.getuser()}")
        _print_outcome(args, outcome)
    return _exit_for(outcome)


def _print_outcome(args: argparse.Namespace, outcome: ExecuteOutcome) -> None:
    if args.json:
        print_json(outcome_json(outcome))
    else:
        render_outcome(stdout(), stderr(), outcome, resume_hint=lambda execution_id: _resume_hint(args, execution_id))


def _resume_hint(args: argparse.Namespace, execution_id: str) -> str:
    """How to continue a paused run: a command line that works as pasted, and the other decisions."""
    if getattr(args, "no_state", False):
        return (
            "--no-state keeps no paused run after this command: run it again with --approve=all or "
            "--approve=none, or without --no-state to decide later"
        )
    return (
        f"continue with: {again(args, 'resume', execution_id, 'approve')}\n"
        "  (or approve_run, deny or abort in place of approve; or run exec again with --approve=all|none)"
    )


def _exit_for(outcome: ExecuteOutcome) -> int:
    if outcome.approval is not None:
        raise Handled("approval_required")
    if not outcome.ok and outcome.error is not None:
        if outcome.error.line is not None and exit_code(outcome.error.code) == USAGE_EXIT:
            # Wrong arguments to a tool inside the snippet are the snippet's failure, not this command's usage.
            raise Handled(outcome.error.code, exit=SNIPPET_FAILED_EXIT)
        raise Handled(outcome.error.code)
    return 0
