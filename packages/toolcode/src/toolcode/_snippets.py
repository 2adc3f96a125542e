"""Saved snippets: parameterised programs kept in the state store and offered as tools ``snippets:<name>``.

A saved snippet reads its arguments as ``input`` and returns its value as any snippet does. It
is listed, searched and described like any tool (namespace ``snippets``), and called the same
ways: ``run_tool("snippets:name", ...)``, ``from tools import snippets``, MCP ``run_tool``.
Its body runs in the sandbox; called from a run, it runs under that run's limits, its tool
calls count against that run's budget and appear in that run's trace.

A saved snippet belongs to the caller who saved it: other callers do not see it (search, listings,
``describe_tool``, runs) unless an operator published it as *shared*. Names are one namespace for
every caller (a name another caller holds is refused). Every replica that shares the state store
picks up the others' changes within two seconds.

The library keeps them; it does not run them. A call of ``snippets:<name>`` goes down the call
stack like any tool call: toolrun checks its arguments against its input schema and hands them to
this module's provider, which runs the snippet with the function the call stack put in place for
that call (:func:`running_snippets`): within the calling run, or as a run of its own at a door.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import anyio

from toolcode._data import as_mapping
from toolcode._saved_snippet import NAMESPACE, SavedSnippet
from toolcode.exceptions import InvalidArgumentsError, LimitExceededError, TypeCheckError
from toolcode.state import ABSENT, StateStore
from toolcode.state._protocol import keep_in_sync
from toolindex import BackendRef, Index, Tool, ToolIndexError
from toolindex.log import get_logger
from toolrun import CompiledSchema, ProviderBackend, ToolRunError

__all__ = [
    "Check",
    "RunSnippet",
    "SnippetLibrary",
    "running_snippets",
]

_log = get_logger("toolcode.snippets")

PROVIDER_ID: Final = "snippets"
MAX_CODE_CHARS: Final = 100_000
MAX_DESCRIPTION_CHARS: Final = 2_000
MAX_NESTING: Final = 4
"""Saved snippets calling saved snippets: deeper is refused (a snippet calling itself stops here)."""
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}\Z")
_KIND = "snippet"
_DEFAULT_SCHEMA: Final[dict[str, Any]] = {"type": "object"}

Check = Callable[[str], Awaitable[Sequence[Any]]]
"""Type-checks a snippet's code: the problems found (``TypeCheckError`` diagnostics)."""
RunSnippet = Callable[["SavedSnippet", Mapping[str, Any]], Awaitable[Any]]
"""Runs a saved snippet with its (checked) arguments as ``input`` and returns its value."""

_running: ContextVar[RunSnippet | None] = ContextVar("toolcode_running_snippets", default=None)


@contextmanager
def running_snippets(run: RunSnippet) -> Generator[None]:
    """Within the block, a call of a saved snippet that reaches its provider is run by ``run``."""
    token = _running.set(run)
    try:
        yield
    finally:
        _running.reset(token)


def _names_itself(message: str, name: str) -> bool:
    """Whether a finding is about the snippet being saved, which is no tool yet (in either call style)."""
    module_style = f"'tools.{NAMESPACE}' has no attribute '{name}'"
    marks = (f"'{NAMESPACE}:{name}'", f"`tools.{NAMESPACE}`", f"`{name}`", module_style)
    return any(m in message for m in marks)


class _Provider:
    """Runs saved snippets for the runner (a :class:`toolrun.Provider`)."""

    def __init__(self, library: SnippetLibrary) -> None:
        self._library = library

    async def list_tools(self) -> Sequence[Tool]:
        # None: the library registers each snippet itself, a private one in its owner's partition;
        # attaching this backend (``runner.attach()``) must not register them again as public tools.
        return []

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        run = _running.get()
        if run is None:
            raise InvalidArgumentsError("name", "a saved snippet runs only through toolcode's call stack")
        return await run(self._library.get(name), args)


class SnippetLibrary:
    """The saved snippets of one state store, kept in step with the catalog.

    Args:
        store: Where snippets live.
        index: The catalog they appear in.
    """

    def __init__(self, store: StateStore, index: Index) -> None:
        self.store = store
        self.index = index
        self.snippets: dict[str, SavedSnippet] = {}
        self._versions: dict[str, int] = {}
        self.backend = ProviderBackend(PROVIDER_ID, _Provider(self), namespace=NAMESPACE)
        self._lock = anyio.Lock()

    def mine(self, owner: str, operator: bool) -> list[SavedSnippet]:
        """The snippets ``owner`` sees, by name."""
        return [s for _, s in sorted(self.snippets.items()) if s.seen_by(owner, operator)]

    def code_of(self, name: str) -> str | None:
        """A saved snippet's code (``None`` when there is none by that name)."""
        saved = self.snippets.get(name)
        return saved.code if saved is not None else None

    # -- the catalog ---------------------------------------------------------------------

    def _ref(self, name: str) -> BackendRef:
        return BackendRef.of_provider(PROVIDER_ID, tool=name)

    def _show(self, snippet: SavedSnippet) -> None:
        # A private snippet is in its owner's partition of the index: only the owner's view reads
        # it (an operator's included: operators manage every snippet through :meth:`mine`, and run
        # only their own and shared ones), and it weighs in no one's scores.
        partition = None if snippet.shared else snippet.owner
        self.index.register(snippet.tool(), self._ref(snippet.name), partition=partition)

    def _hide(self, name: str) -> None:
        try:
            self.index.unregister(f"{NAMESPACE}:{name}")
        except ToolIndexError as e:  # not in the catalog: nothing to hide
            _log.debug("snippets.hide_missing", name=name, error=repr(e)[:200])

    async def sync(self) -> None:
        """Bring the catalog in step with the store (other replicas' saves and deletes)."""
        async with self._lock:
            await self._sync()

    async def _sync(self) -> None:
        infos = {i.key: i.version for i in await self.store.list(_KIND, limit=100_000)}
        for name in [n for n in self.snippets if n not in infos]:
            del self.snippets[name]
            self._versions.pop(name, None)
            self._hide(name)
        for name, version in infos.items():
            if self._versions.get(name) == version:
                continue
            rec = await self.store.get(_KIND, name)
            snippet = SavedSnippet.decode(rec.value) if rec is not None else None
            if snippet is None or rec is None:
                _log.warning("snippets.unreadable", name=name)
                continue
            self.snippets[name] = snippet
            self._versions[name] = rec.version
            self._show(snippet)

    async def keep_in_sync(self) -> None:
        """Run :meth:`sync` every two seconds until cancelled (a background task; store failures are logged)."""
        await keep_in_sync(self.sync, _log, "snippets.sync_failed")

    # -- operations ----------------------------------------------------------------------

    async def save(
        self,
        name: Any,
        code: Any,
        description: Any,
        input_schema: Any,
        check: Check,
        *,
        owner: str = "local",
        operator: bool = False,
        shared: Any = False,
        quota: int = 0,
    ) -> SavedSnippet:
        """Save (or replace) a snippet, after checking its fields, then its code with ``check``.

        ``owner`` saves it; a snippet of another owner's is replaced only by an ``operator``, who
        alone may save it ``shared`` (seen by every caller).

        Raises:
            InvalidArgumentsError: If a field is invalid (names it), the name is another owner's,
                or ``shared`` is asked by a caller who is not an operator.
            LimitExceededError: ``max_snippets`` (code ``quota_exceeded``) if ``owner`` already keeps
                ``quota`` snippets (0: no limit) and this is a new one.
            TypeCheckError: If the code calls its tools wrongly.
            StateUnavailableError: If the store cannot be written.
        """
        name = self.check_name(name)
        if not isinstance(shared, bool):
            raise InvalidArgumentsError("shared", f"must be true or false, got {type(shared).__name__}")
        if shared and not operator:
            raise InvalidArgumentsError("shared", "only an operator publishes a snippet to every caller")
        if not isinstance(code, str) or not code.strip():
            raise InvalidArgumentsError(
                "code", "must be a non-empty string: the snippet, reading its arguments as `input`"
            )
        if len(code) > MAX_CODE_CHARS:
            raise InvalidArgumentsError("code", f"has {len(code):,} characters; at most {MAX_CODE_CHARS:,}")
        if not isinstance(description, str) or not description.strip():
            raise InvalidArgumentsError("description", "must say what the snippet does (it is how search finds it)")
        if len(description) > MAX_DESCRIPTION_CHARS:
            raise InvalidArgumentsError("description", f"has {len(description):,} characters; at most 2,000")
        schema = self._check_schema(input_schema)
        try:
            compile(code, f"snippets:{name}", "exec", flags=0x2000, dont_inherit=True)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
        except SyntaxError as e:
            raise InvalidArgumentsError("code", f"line {e.lineno}: {e.msg}") from None
        except (ValueError, MemoryError, RecursionError) as e:
            raise InvalidArgumentsError("code", f"cannot be compiled: {type(e).__name__}") from None
        found = await check(code)
        # A snippet may call itself (stopped at MAX_NESTING), though it is not a tool yet.
        found = [d for d in found if not _names_itself(d.message, name)]
        if found:
            raise TypeCheckError(found)
        now = time.time()
        async with self._lock:
            old, current = await self._stored(name, owner, operator)
            counted = bool(quota) and old is None  # a new snippet, counted against its owner's quota
            if counted:
                await self._sync()  # saves on other replicas count too
                self._check_quota(name, owner, quota)
            made = old.created if old else now
            revision = secrets.token_hex(16)
            snippet = SavedSnippet(name, code, description.strip(), schema, made, now, owner, shared, revision)
            version = await self.store.put(_KIND, name, snippet.encode(), expect=current)
            self.snippets[name] = snippet
            self._versions[name] = version
            self._show(snippet)
            if counted:
                # Saved at once on other replicas, past the quota together: a save that sees more
                # than the quota once written takes itself back (all may, none goes past it).
                await self._sync()
                try:
                    self._check_quota(name, owner, quota)
                except LimitExceededError:
                    await self.store.delete(_KIND, name, expect=version)
                    await self._sync()
                    raise
        return snippet

    async def delete(self, name: Any, *, owner: str = "local", operator: bool = False) -> bool:
        """Delete a snippet; ``False`` when there was none.

        Raises:
            InvalidArgumentsError: If the name is invalid, or the snippet another owner's (and
                ``operator`` is false).
        """
        name = self.check_name(name)
        async with self._lock:
            old, current = await self._stored(name, owner, operator)
            gone = old is not None and await self.store.delete(_KIND, name, expect=current)
            self.snippets.pop(name, None)
            self._versions.pop(name, None)
            self._hide(name)
        return gone

    def _check_quota(self, name: str, owner: str, quota: int) -> None:
        """Refuse ``name`` if ``owner`` keeps ``quota`` snippets besides it."""
        kept = sum(1 for s in self.snippets.values() if s.owner == owner and s.name != name)
        if kept >= quota:
            why = "not saved: this caller keeps as many snippets as it may (snippets.max_per_caller); delete one first"
            raise LimitExceededError("max_snippets", quota, kept, why)

    async def _stored(self, name: str, owner: str, operator: bool) -> tuple[SavedSnippet | None, int]:
        """The snippet as the store has it now and its version, after checking ``owner`` may change it.

        The store settles who owns a name, not this replica's copy (another replica may have saved
        it since the last :meth:`sync`); the write that follows is conditional on that version (a
        change meanwhile fails it with ``StateConflictError``, code ``busy``).
        """
        rec = await self.store.get(_KIND, name)
        old = SavedSnippet.decode(rec.value) if rec is not None else None
        if rec is not None and (old is None or old.owner != owner) and not operator:
            raise InvalidArgumentsError(
                "name", f"snippet {name!r} was saved by another caller: choose another name (an operator may change it)"
            )
        return old, rec.version if rec is not None else ABSENT

    def get(self, name: Any, owner: str | None = None, operator: bool = False) -> SavedSnippet:
        """One snippet (of those the caller ``owner`` sees, when given).

        Raises:
            InvalidArgumentsError: If there is no snippet of this name (that the caller sees).
        """
        name = self.check_name(name)
        snippet = self.snippets.get(name)
        if snippet is None or (owner is not None and not snippet.seen_by(owner, operator)):
            seen = self.mine(owner, operator) if owner is not None else self.snippets.values()
            known = ", ".join(sorted(s.name for s in seen)[:10]) or "none saved"
            raise InvalidArgumentsError("name", f"no saved snippet {name!r} (saved: {known})")
        return snippet

    @staticmethod
    def check_name(name: Any) -> str:
        """``name`` if it is a valid snippet name, else :class:`InvalidArgumentsError` on ``name``."""
        if not isinstance(name, str) or not _NAME.match(name):
            shown = repr(name)[:80]
            raise InvalidArgumentsError(
                "name", f"must be 1-64 lowercase letters, digits or '_', starting with a letter; got {shown}"
            )
        return name

    @staticmethod
    def _check_schema(schema: Any) -> dict[str, Any]:
        if schema is None:
            return dict(_DEFAULT_SCHEMA)
        if (given := as_mapping(schema)) is None:
            raise InvalidArgumentsError("input_schema", f"must be a JSON Schema object, got {type(schema).__name__}")
        raw: dict[str, Any] = dict(given)
        if raw.get("type", "object") != "object":
            raise InvalidArgumentsError("input_schema", "must describe an object (the snippet's arguments)")
        try:
            CompiledSchema(raw)
        except ToolRunError as e:
            raise InvalidArgumentsError("input_schema", str(e)) from None
        raw.setdefault("type", "object")
        return raw
