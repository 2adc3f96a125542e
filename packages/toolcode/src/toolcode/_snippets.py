"""Saved snippets: parameterised programs kept in the state store and offered as tools ``snippets:<name>``.

A saved snippet reads its arguments as ``input`` and returns its value as any snippet does. It
is listed, searched and described like any tool (namespace ``snippets``), and called the same
ways: ``run_tool("snippets:name", ...)``, ``from tools import snippets``, MCP ``run_tool``.
Its body runs in the sandbox; called from a run, it runs under that run's limits, its tool
calls count against that run's budget and appear in that run's trace.

Saved snippets are shared by every caller of a toolbox (they are catalog entries, like the
upstream tools), and by every replica that shares the state store: each replica picks up the
others' changes within :data:`SYNC_INTERVAL` seconds.

The library keeps them; it does not run them. A call of ``snippets:<name>`` goes down the call
stack like any tool call: toolrun checks its arguments against its input schema and hands them to
this module's provider, which runs the snippet with the function the call stack put in place for
that call (:func:`running_snippets`): within the calling run, or as a run of its own at a door.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio

from toolcode.exceptions import InvalidArgumentsError, ToolCodeError, TypeCheckError
from toolcode.state import StateStore
from toolindex import BackendRef, Index, Tool
from toolindex.log import get_logger
from toolrun import CompiledSchema, ProviderBackend, ToolRunError

__all__ = [
    "NAMESPACE",
    "SYNC_INTERVAL",
    "Check",
    "RunSnippet",
    "SavedSnippet",
    "SnippetLibrary",
    "running_snippets",
]

_log = get_logger("toolcode.snippets")

NAMESPACE: Final = "snippets"
"""The namespace saved snippets take in the catalog."""
PROVIDER_ID: Final = "snippets"
SYNC_INTERVAL: Final = 2.0
"""Seconds between two looks at the state store for other replicas' changes."""
MAX_CODE_CHARS: Final = 100_000
MAX_DESCRIPTION_CHARS: Final = 2_000
MAX_NESTING: Final = 4
"""Saved snippets calling saved snippets: deeper is refused (a snippet calling itself stops here)."""
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
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


@dataclass(frozen=True, slots=True)
class SavedSnippet:
    """One saved snippet."""

    name: str
    code: str
    description: str
    input_schema: Mapping[str, Any]
    created: float
    updated: float
    owner: str = "local"
    """Who saved it (:func:`~toolcode._sessions.owner_of` of the caller): only they, or an operator,
    may replace or delete it."""

    @property
    def tool_id(self) -> str:
        """``snippets:<name>``."""
        return f"{NAMESPACE}:{self.name}"

    def to_dict(self, *, with_code: bool = True) -> dict[str, Any]:
        """Plain data."""
        out: dict[str, Any] = {
            "name": self.name,
            "tool_id": self.tool_id,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "created": round(self.created, 3),
            "updated": round(self.updated, 3),
        }
        if with_code:
            out["code"] = self.code
        return out

    def tool(self) -> Tool:
        """The snippet as a catalog tool."""
        return Tool.validated(
            name=self.name,
            namespace=NAMESPACE,
            description=self.description,
            input_schema=dict(self.input_schema),
            tags=("saved-snippet",),
        )


def _encode(s: SavedSnippet) -> bytes:
    return json.dumps({**s.to_dict(), "owner": s.owner}).encode()


def _decode(blob: bytes) -> SavedSnippet | None:
    try:
        d = json.loads(blob)
        return SavedSnippet(
            str(d["name"]),
            str(d["code"]),
            str(d["description"]),
            dict(d["input_schema"]),
            d["created"],
            d["updated"],
            str(d.get("owner", "local")),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _names_itself(message: str, name: str) -> bool:
    return f"'{NAMESPACE}:{name}'" in message or f"`tools.{NAMESPACE}`" in message or f"`{name}`" in message


class _Provider:
    """Runs saved snippets for the runner (a :class:`toolrun.Provider`)."""

    def __init__(self, library: SnippetLibrary) -> None:
        self._library = library

    async def list_tools(self) -> Sequence[Tool]:
        return [s.tool() for s in self._library.snippets.values()]

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

    def code_of(self, name: str) -> str | None:
        """A saved snippet's code (``None`` when there is none by that name)."""
        saved = self.snippets.get(name)
        return saved.code if saved is not None else None

    # -- the catalog ---------------------------------------------------------------------

    def _ref(self, name: str) -> BackendRef:
        return BackendRef.of_provider(PROVIDER_ID, tool=name)

    def _show(self, snippet: SavedSnippet) -> None:
        self.index.register(snippet.tool(), self._ref(snippet.name))

    def _hide(self, name: str) -> None:
        try:
            self.index.unregister(f"{NAMESPACE}:{name}")
        except ToolCodeError:
            pass
        except Exception as e:  # the index's own "not found": nothing to hide
            _log.debug("snippets.hide_missing", name=name, error=repr(e)[:200])

    async def sync(self) -> None:
        """Bring the catalog in step with the store (other replicas' saves and deletes)."""
        async with self._lock:
            infos = {i.key: i.version for i in await self.store.list(_KIND, limit=100_000)}
            for name in [n for n in self.snippets if n not in infos]:
                del self.snippets[name]
                self._versions.pop(name, None)
                self._hide(name)
            for name, version in infos.items():
                if self._versions.get(name) == version:
                    continue
                rec = await self.store.get(_KIND, name)
                snippet = _decode(rec.value) if rec is not None else None
                if snippet is None or rec is None:
                    _log.warning("snippets.unreadable", name=name)
                    continue
                self.snippets[name] = snippet
                self._versions[name] = rec.version
                self._show(snippet)

    async def keep_in_sync(self) -> None:
        """Run :meth:`sync` every :data:`SYNC_INTERVAL` seconds until cancelled (store failures are logged)."""
        while True:
            await anyio.sleep(SYNC_INTERVAL)
            try:
                await self.sync()
            except ToolCodeError as e:
                _log.warning("snippets.sync_failed", error=str(e)[:300])

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
    ) -> SavedSnippet:
        """Save (or replace) a snippet, after checking its fields, then its code with ``check``.

        ``owner`` saves it; a snippet of another owner's is replaced only by an ``operator``.

        Raises:
            InvalidArgumentsError: If a field is invalid (names it), or the name is another owner's.
            TypeCheckError: If the code calls its tools wrongly.
            StateUnavailableError: If the store cannot be written.
        """
        name = self.check_name(name)
        self._check_owner(name, owner, operator)
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
            self._check_owner(name, owner, operator)
            old = self.snippets.get(name)
            snippet = SavedSnippet(name, code, description.strip(), schema, old.created if old else now, now, owner)
            version = await self.store.put(_KIND, name, _encode(snippet))
            self.snippets[name] = snippet
            self._versions[name] = version
            self._show(snippet)
        return snippet

    async def delete(self, name: Any, *, owner: str = "local", operator: bool = False) -> bool:
        """Delete a snippet; ``False`` when there was none.

        Raises:
            InvalidArgumentsError: If the name is invalid, or the snippet another owner's (and
                ``operator`` is false).
        """
        name = self.check_name(name)
        async with self._lock:
            self._check_owner(name, owner, operator)
            gone = await self.store.delete(_KIND, name)
            self.snippets.pop(name, None)
            self._versions.pop(name, None)
            self._hide(name)
        return gone

    def _check_owner(self, name: str, owner: str, operator: bool) -> None:
        old = self.snippets.get(name)
        if old is not None and old.owner != owner and not operator:
            raise InvalidArgumentsError(
                "name", f"snippet {name!r} was saved by another caller: choose another name (an operator may change it)"
            )

    def get(self, name: Any) -> SavedSnippet:
        """One snippet.

        Raises:
            InvalidArgumentsError: If there is no snippet of this name.
        """
        name = self.check_name(name)
        snippet = self.snippets.get(name)
        if snippet is None:
            known = ", ".join(sorted(self.snippets)[:10]) or "none saved"
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
        if not isinstance(schema, Mapping):
            raise InvalidArgumentsError("input_schema", f"must be a JSON Schema object, got {type(schema).__name__}")
        raw = dict(cast("Mapping[str, Any]", schema))
        if raw.get("type", "object") != "object":
            raise InvalidArgumentsError("input_schema", "must describe an object (the snippet's arguments)")
        try:
            CompiledSchema(raw)
        except ToolRunError as e:
            raise InvalidArgumentsError("input_schema", str(e)) from None
        raw.setdefault("type", "object")
        return raw

    # -- running -------------------------------------------------------------------------
