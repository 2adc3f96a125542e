"""The :class:`Store` seam and its default, :class:`InMemoryStore`."""

from __future__ import annotations

import heapq
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol, cast, runtime_checkable

from tooldocs._doc import RENDER_TIERS, Budgets, DetailLevel, ToolDoc, parse_level
from tooldocs._examples import DEFAULT_CAPS, ExampleCaps, ToolExample
from tooldocs._render import Signature, tool_signature
from tooldocs._shapes import (
    LearnedShape,
    ShapeFile,
    ShapeLimits,
    definition_fingerprint,
    entry_of,
    infer_shape,
    merge_shapes,
)
from tooldocs._text import SCAN_CHARS, cap_text, one_line
from tooldocs.exceptions import ArgsTooLargeError, DocNotFoundError, InvalidExampleError
from toolindex import AmbiguousToolIDError, Index, InvalidToolIDError, Tool, ToolNotFoundError
from toolindex.log import get_logger

__all__ = ["InMemoryStore", "Store"]

_log = get_logger("tooldocs")
# Parameter names an error lists.
_LISTED_PARAMS = 20
# Notes and references keep 300 characters of one line; reading more of a text would only cost time.
_NOTE_SCAN = 4 * 300
REFERENCE_META_KEYS: Final = ("docs", "documentation", "docsUrl", "url", "homepage")
"""The ``_meta`` keys whose ``http(s)`` URL the ``full`` level shows among a tool's references."""
_URL = re.compile(r"https?://[^\s<>()\"'`\]]+[^\s<>()\"'`\].,;:!?]")


@runtime_checkable
class Store(Protocol):
    """Documentation of the tools of an index, at the detail an agent asks for.

    Contract:
        - Concurrency: every method may be called from many threads and tasks at once;
          methods are synchronous and cheap (no network). ``record_result`` is called by
          the runner after every successful call, so it must not block on I/O per call.
        - Ids: the index's rules (``ns:name``, ``ns:name:version``, an unambiguous bare name).
        - Errors: only :class:`~tooldocs.exceptions.ToolDocsError` subclasses. An id the
          index cannot resolve raises :class:`~tooldocs.exceptions.DocNotFoundError`
          chained from the index's error, with its suggestions; a bad level raises
          :class:`~tooldocs.exceptions.InvalidDetailLevelError`.
        - Ownership: returned docs and examples are immutable values; notes, examples and
          learned shapes added to a store belong to it (persisted only where documented).
        - Learned shapes belong to the definition they were learned from: a tool whose
          definition changed (same id) shows none until its own results teach one.
        - Size: ``describe`` keeps :meth:`ToolDoc.render` within the level's budget;
          ``describe_many`` keeps the total within its own budget.
    """

    def describe(self, tool_id: str, level: DetailLevel | str = DetailLevel.SCHEMA) -> ToolDoc:
        """The doc of one tool at ``level``."""
        ...

    def describe_many(self, ids: Iterable[str], level: DetailLevel | str = DetailLevel.SUMMARY) -> list[ToolDoc]:
        """Docs of several tools, in the order given, within the ``many`` budget."""
        ...

    def examples(self, tool_id: str, max: int = 3) -> list[ToolExample]:
        """Up to ``max`` examples of a tool, most recently added last."""
        ...

    def add_notes(self, tool_id: str, notes: str | Sequence[str]) -> None:
        """Attach usage notes to a tool (shown at ``full``)."""
        ...

    def add_example(self, tool_id: str, example: ToolExample | Mapping[str, Any]) -> ToolExample:
        """Attach an example; one with the same id replaces the old one."""
        ...

    def record_result(self, tool_id: str, value: Any) -> None:
        """Learn the result shape from a successful result (no-op when an output schema is declared)."""
        ...

    def result_shape(self, tool_id: str) -> dict[str, Any] | None:
        """The shape learned from the tool's current definition, or ``None``."""
        ...


class InMemoryStore:
    """The default :class:`Store`: docs rendered from an :class:`~toolindex.Index` on demand.

    Notes, examples and references live in memory. Learned result shapes live in memory
    and, with ``shapes_path``, in a JSON file that is read once at start and written
    atomically (temp file + rename) *only when a shape changes*. Shapes only widen and are
    size-capped, so after a tool's first few results recording changes nothing and costs
    no I/O; pass ``autosave=False`` to write only on :meth:`flush`. A file that cannot be
    read gives a :class:`~tooldocs.ShapeFileWarning` and is moved aside (not overwritten)
    on the next save.

    Each shape is kept with the :func:`~tooldocs.definition_fingerprint` of the definition
    it was learned from, and shown only while the tool has that definition: when the
    definition under an id changes, the next result starts a new shape.

    Example:
        >>> from toolindex import InMemoryIndex, Tool, BackendRef
        >>> index = InMemoryIndex()
        >>> index.register(Tool(name="add", namespace="math", description="Add two numbers.",
        ...     input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        ...                   "required": ["a", "b"]}), BackendRef.local("add"))
        >>> print(InMemoryStore(index).describe("math:add").render())
        # math:add
        def add(*, a: float, b: float) -> dict[str, Any]:
            \"\"\"Add two numbers.\"\"\"
    """

    def __init__(
        self,
        index: Index,
        *,
        budgets: Budgets | None = None,
        shapes_path: str | Path | None = None,
        autosave: bool = True,
        example_caps: ExampleCaps = DEFAULT_CAPS,
        shape_limits: ShapeLimits | None = None,
        max_examples: int = 20,
        stable_after: int = 16,
        learn_every: int = 8,
    ) -> None:
        """Create a store over ``index``.

        Args:
            index: Where tools come from.
            budgets: Character budgets per level (defaults: :class:`Budgets`).
            shapes_path: JSON file for learned result shapes; ``None`` keeps them in memory only.
            autosave: Write the file whenever a shape changes; ``False``: only on :meth:`flush`.
            example_caps: Size caps for examples.
            shape_limits: Caps for learned shapes.
            max_examples: Examples kept per tool; adding more drops the oldest.
            stable_after: After this many results in a row leave a tool's shape unchanged,
                sample results instead of inspecting each one.
            learn_every: When sampling, inspect one result in this many (1 inspects all).

        Raises:
            ValueError: If ``stable_after`` is negative or ``learn_every`` is below 1.
        """
        if stable_after < 0 or learn_every < 1:
            raise ValueError(f"need stable_after >= 0 and learn_every >= 1, got {stable_after}, {learn_every}")
        self._stable_after = stable_after
        self._learn_every = learn_every
        self._streak: dict[str, int] = {}
        self._resolved: dict[str, tuple[int, Tool, str]] = {}
        # tool id -> (the tool object, its definition fingerprint); Tool objects are immutable.
        self._fingerprints: dict[str, tuple[Tool, str]] = {}
        self._index = index
        self.budgets = budgets or Budgets()
        self._caps = example_caps
        self._limits = shape_limits or ShapeLimits()
        self._max_examples = max_examples
        self._autosave = autosave
        self._lock = threading.RLock()
        self._notes: dict[str, list[str]] = {}
        self._examples: dict[str, list[ToolExample]] = {}
        self._refs: dict[str, list[str]] = {}
        self._file = ShapeFile(Path(shapes_path)) if shapes_path is not None else None
        loaded = self._file.load() if self._file else {}
        # Entries of the first file format name no definition: none is shown, so none is kept.
        self._shapes: dict[str, LearnedShape] = {k: v for k, v in loaded.items() if v.definition}
        self._dirty = False
        self._shapes_version = 0
        # (tool object, level, store generation) -> doc; Tool objects are immutable, so identity is a safe key.
        self._cache: dict[tuple[str, DetailLevel], tuple[Tool, int, ToolDoc]] = {}
        self._generation = 0

    # -- lookup --------------------------------------------------------------------

    def _tool(self, tool_id: str) -> Tool:
        return self._lookup(tool_id)[0]

    def _lookup(self, tool_id: str) -> tuple[Tool, str]:
        """The tool and its full id (``Tool.id`` is computed on each access)."""
        # Resolving an id costs more than recording a stable result; reuse resolutions
        # until the index changes (its version moves on every mutation).
        version = self._index.version
        hit = self._resolved.get(tool_id)
        if hit is not None and hit[0] == version:
            return hit[1], hit[2]
        try:
            tool = self._index.get(tool_id)
        except ToolNotFoundError as e:
            raise DocNotFoundError(tool_id, e.suggestions) from e
        except AmbiguousToolIDError as e:
            raise DocNotFoundError(tool_id, e.candidates, reason="the bare name is ambiguous") from e
        except InvalidToolIDError as e:
            raise DocNotFoundError(tool_id, reason=e.reason) from e
        if len(self._resolved) >= 4096:
            self._resolved.clear()
        tid = tool.id
        self._resolved[tool_id] = (version, tool, tid)
        return tool, tid

    def _definition(self, tool: Tool, tid: str) -> str:
        """The tool's :func:`definition_fingerprint`, computed once per tool object."""
        hit = self._fingerprints.get(tid)
        if hit is not None and hit[0] is tool:
            return hit[1]
        fingerprint = definition_fingerprint(tool)
        if len(self._fingerprints) >= 4096:
            self._fingerprints.clear()
        self._fingerprints[tid] = (tool, fingerprint)
        return fingerprint

    def _learned(self, tool: Tool, tid: str) -> LearnedShape | None:
        """The shape learned from the tool's current definition (call under the lock)."""
        if tool.output_schema is not None:
            return None
        learned = self._shapes.get(tid)
        fingerprint = self._definition(tool, tid)
        return learned if learned is not None and fingerprint and learned.definition == fingerprint else None

    # -- docs ----------------------------------------------------------------------

    def describe(self, tool_id: str, level: DetailLevel | str = DetailLevel.SCHEMA) -> ToolDoc:
        """The doc of one tool.

        Args:
            tool_id: ``ns:name``, ``ns:name:version`` or an unambiguous bare name.
            level: ``summary``, ``schema`` or ``full``.

        Returns:
            The doc; ``doc.render()`` is within the level's budget.

        Raises:
            DocNotFoundError: If the index has no such tool (chained, with suggestions).
            InvalidDetailLevelError: If ``level`` is not a detail level.
        """
        lvl = parse_level(level)
        tool, tid = self._lookup(tool_id)
        with self._lock:
            if lvl is DetailLevel.FULL:
                # Full docs show live counters (results seen); they are not cached.
                return self._build(tool, lvl, self.budgets.for_level(lvl))
            key = (tid, lvl)
            hit = self._cache.get(key)
            if hit is not None and hit[0] is tool and hit[1] == self._generation:
                return hit[2]
            doc = self._build(tool, lvl, self.budgets.for_level(lvl))
            self._cache[key] = (tool, self._generation, doc)
            return doc

    def describe_many(self, ids: Iterable[str], level: DetailLevel | str = DetailLevel.SUMMARY) -> list[ToolDoc]:
        """Docs of several tools, in order, within the ``many`` budget.

        When the rendered docs together exceed ``budgets.many``, docs from the end of the
        list are given at ``summary`` level instead, until the total fits (each doc's
        ``level`` says what it is).

        Args:
            ids: Tool ids (e.g. the ids of search hits).
            level: Detail level wanted for each.

        Returns:
            One doc per id, in the order given.

        Raises:
            DocNotFoundError: If any id is unknown (nothing is returned then).
            InvalidDetailLevelError: If ``level`` is not a detail level.
        """
        lvl = parse_level(level)
        docs = [self.describe(i, lvl) for i in ids]
        sizes = [len(d.render()) for d in docs]
        total = sum(sizes) + len(docs)
        i = len(docs) - 1
        while total > self.budgets.many and i >= 0:
            if docs[i].level is not DetailLevel.SUMMARY:
                small = self.describe(docs[i].id, DetailLevel.SUMMARY)
                new_size = len(small.render())
                total -= sizes[i] - new_size
                docs[i], sizes[i] = small, new_size
            i -= 1
        return docs

    def _build(self, tool: Tool, level: DetailLevel, budget: int) -> ToolDoc:
        summary = cap_text(tool.summary, self.budgets.summary)
        base: dict[str, Any] = {
            "id": tool.id,
            "level": level,
            "name": tool.name,
            "namespace": tool.namespace,
            "summary": summary,
            "title": tool.title,
            "budget": budget,
        }
        if level is DetailLevel.SUMMARY:
            # The rendered summary line carries the id too: keep the whole line in budget.
            room = max(budget - len(tool.id) - 3, 20)
            base["summary"] = cap_text(summary, room)
            return ToolDoc(**base)
        learned = self._learned(tool, tool.id)
        shape = learned.shape if learned else None
        full = level is DetailLevel.FULL
        extras: dict[str, Any] = {}
        if full:
            extras = {
                "description": tool.description or None,
                "notes": tuple(self._notes.get(tool.id, ())),
                "examples": tuple(self._examples.get(tool.id, ())[-3:]),
                "references": tuple(self._references(tool)),
                "result_shape": shape,
                "result_count": learned.count if learned else 0,
            }
        # The signature gets the richest detail that fits: all of the budget at schema level,
        # about half of it at full level (the rest is for description, notes and examples).
        sig_room = budget if not full else budget // 2
        sig: Signature | None = None
        doc: ToolDoc | None = None
        for opts in RENDER_TIERS:
            sig = tool_signature(tool, result_shape=shape, options=opts)
            doc = ToolDoc(**base, **self._schema_fields(tool, sig), **extras)
            probe = doc if not full else doc.model_copy(update={"level": DetailLevel.SCHEMA})
            if len(probe.compose()) <= sig_room:
                break
        assert doc is not None  # RENDER_TIERS is not empty
        return doc

    @staticmethod
    def _schema_fields(tool: Tool, sig: Signature) -> dict[str, Any]:
        return {
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
            "required": sig.required,
            "defaults": {p.wire_name: p.default for p in sig.params if p.has_default},
            "signature": sig.text,
            "returns": sig.returns,
            "wire_names": sig.wire_names,
            "collisions": tuple(str(c) for c in sig.collisions),
            "warnings": sig.warnings,
        }

    def _references(self, tool: Tool) -> list[str]:
        found = _URL.findall((tool.description or "")[:SCAN_CHARS])
        meta = tool.meta or {}
        for key in REFERENCE_META_KEYS:
            v = meta.get(key)
            if isinstance(v, str) and v.startswith(("http://", "https://")):
                found.append(v)
        found.extend(self._refs.get(tool.id, ()))
        return list(dict.fromkeys(found))[:10]

    # -- notes, examples, references -------------------------------------------------

    def _touch(self) -> None:
        self._generation += 1

    def add_notes(self, tool_id: str, notes: str | Sequence[str]) -> None:
        """Attach usage notes to a tool; they appear at ``full`` level.

        Args:
            tool_id: The tool.
            notes: One note or several; each is kept to one line of at most 300 characters.

        Raises:
            DocNotFoundError: If the tool is unknown.
        """
        tool = self._tool(tool_id)
        items = [notes] if isinstance(notes, str) else list(notes)
        clean = [c for c in (cap_text(one_line(n[:_NOTE_SCAN]), 300) for n in items) if c]
        with self._lock:
            bucket = self._notes.setdefault(tool.id, [])
            bucket.extend(n for n in clean if n not in bucket)
            del bucket[:-20]
            self._touch()

    def add_references(self, tool_id: str, references: str | Sequence[str]) -> None:
        """Attach external references (URLs, doc paths) to a tool; they appear at ``full`` level.

        Args:
            tool_id: The tool.
            references: One reference or several.

        Raises:
            DocNotFoundError: If the tool is unknown.
        """
        tool = self._tool(tool_id)
        items = [references] if isinstance(references, str) else list(references)
        with self._lock:
            bucket = self._refs.setdefault(tool.id, [])
            clean = (cap_text(one_line(x[:_NOTE_SCAN]), 300) for x in items)
            bucket.extend(r for r in clean if r and r not in bucket)
            self._touch()

    def add_example(self, tool_id: str, example: ToolExample | Mapping[str, Any]) -> ToolExample:
        """Attach an example to a tool.

        The args must fit the tool's input schema: every required parameter present, and
        no parameter the schema does not declare (unless it allows extra ones explicitly).

        Args:
            tool_id: The tool.
            example: A :class:`ToolExample` or a mapping with its fields.

        Returns:
            The stored example (capped).

        Raises:
            DocNotFoundError: If the tool is unknown.
            ArgsTooLargeError: If the args exceed the caps (names the tool and the example).
            InvalidExampleError: If the example is malformed or does not fit the schema.
        """
        tool = self._tool(tool_id)
        try:
            ex = example if isinstance(example, ToolExample) else ToolExample.from_dict(example, caps=self._caps)
            if ex.caps is not self._caps and isinstance(example, ToolExample):
                ex = ToolExample.from_dict(example.to_dict(), caps=self._caps)
        except ArgsTooLargeError as e:
            label = str(example.get("id") or example.get("title") or "") if isinstance(example, Mapping) else None
            raise ArgsTooLargeError(e.cap, e.limit, e.actual, tool_id=tool.id, example=label, path=e.path) from e
        except InvalidExampleError as e:
            raise InvalidExampleError(e.example, e.field, e.reason, tool_id=tool.id) from e
        self._check_args(tool, ex)
        with self._lock:
            bucket = [x for x in self._examples.get(tool.id, []) if x.id != ex.id]
            bucket.append(ex)
            self._examples[tool.id] = bucket[-self._max_examples :]
            self._touch()
        return ex

    @staticmethod
    def _check_args(tool: Tool, ex: ToolExample) -> None:
        # Work in proportion to the example's args (capped), not to the tool's schema (hostile).
        schema = tool.input_schema
        props = schema.get("properties")
        declared: dict[str, Any] = cast("dict[str, Any]", props) if isinstance(props, dict) else {}
        req = schema.get("required")
        if isinstance(req, list):
            missing = next((r for r in cast("list[Any]", req) if isinstance(r, str) and r not in ex.args), None)
            if missing is not None:
                raise InvalidExampleError(
                    ex.id, f"args.{missing}", "required by the tool's input schema but missing", tool_id=tool.id
                )
        extra_ok = schema.get("additionalProperties", False) not in (False, None) or not declared
        unknown = [k for k in ex.args if k not in declared]
        if unknown and not extra_ok:
            names = heapq.nsmallest(_LISTED_PARAMS + 1, declared)
            listed = ", ".join(names[:_LISTED_PARAMS]) + (", ..." if len(names) > _LISTED_PARAMS else "")
            raise InvalidExampleError(
                ex.id, f"args.{unknown[0]}", f"not a parameter of the tool (parameters: {listed})", tool_id=tool.id
            )

    def examples(self, tool_id: str, max: int = 3) -> list[ToolExample]:
        """The most recent examples of a tool.

        Args:
            tool_id: The tool.
            max: At most this many (0 gives none).

        Returns:
            Examples, oldest first.

        Raises:
            DocNotFoundError: If the tool is unknown.
        """
        tool = self._tool(tool_id)
        with self._lock:
            items = self._examples.get(tool.id, [])
            return list(items[-max:]) if max > 0 else []

    # -- learned result shapes -----------------------------------------------------------

    def record_result(self, tool_id: str, value: Any) -> None:
        """Learn from one successful result of a tool.

        Merges the value's shape into the tool's learned shape, in memory. Does nothing
        when the tool declares an output schema, or when ``value`` is ``None`` (a result
        without structured content teaches nothing). A shape learned from another
        definition of the tool (its id now names a changed tool) is replaced, not widened.
        With a shapes file and ``autosave``, the file is rewritten only when the merged
        shape actually changed, which stops after a tool's first few results. Once a
        tool's shape has not changed for ``stable_after`` results in a row, only every
        ``learn_every``-th result is inspected, so the steady-state cost is a lock and a
        counter.

        Args:
            tool_id: The tool that produced ``value``.
            value: The result's plain-Python value (structured content).

        Raises:
            DocNotFoundError: If the tool is unknown.
        """
        tool, tid = self._lookup(tool_id)
        if tool.output_schema is not None or value is None:
            return
        definition = self._definition(tool, tid)
        if not definition:
            return
        with self._lock:
            old = self._shapes.get(tid)
            if (
                old is not None
                and old.definition == definition
                and self._streak.get(tid, 0) >= self._stable_after
                and (old.count + 1) % self._learn_every
            ):
                # A stable shape: only every learn_every-th result is inspected.
                self._shapes[tid] = LearnedShape(old.shape, old.count + 1, definition)
                return
        shape = infer_shape(value, self._limits)  # outside the lock: proportional to the value's size
        with self._lock:
            old = self._shapes.get(tid)
            if old is not None and old.definition != definition:
                old = None  # another definition's: this one starts afresh
                self._streak[tid] = 0
            merged = shape if old is None else merge_shapes(old.shape, shape, self._limits)
            changed = old is None or merged != old.shape
            kept = merged if changed or old is None else old.shape
            self._shapes[tid] = LearnedShape(kept, (old.count if old else 0) + 1, definition)
            self._streak[tid] = 0 if changed else self._streak.get(tid, 0) + 1
            if changed:
                self._touch()
                self._shapes_version += 1
                self._dirty = True
                if self._autosave:
                    self._save_locked()

    def result_shape(self, tool_id: str) -> dict[str, Any] | None:
        """The learned result shape of a tool.

        Args:
            tool_id: The tool.

        Returns:
            A JSON Schema, or ``None`` when nothing was learned from the tool's current
            definition (or the tool declares an output schema).

        Raises:
            DocNotFoundError: If the tool is unknown.
        """
        tool, tid = self._lookup(tool_id)
        with self._lock:
            learned = self._learned(tool, tid)
            return dict(learned.shape) if learned else None

    @property
    def shapes_version(self) -> int:
        """A counter that moves each time a learned shape changes (to know when to save them elsewhere)."""
        return self._shapes_version

    def learned_shapes(self) -> dict[str, dict[str, Any]]:
        """Every learned result shape as plain data: ``{tool_id: {"shape": ..., "count": n, "definition": fp}}``.

        The form :meth:`restore_shapes` takes; what a caller keeps in its own storage (a
        database shared by several processes, say) instead of the shapes file. ``definition``
        is the :func:`~tooldocs.definition_fingerprint` the shape was learned from. Shapes of
        tools this store does not know now are given too (another process may know them).
        """
        with self._lock:
            return {k: entry_of(v) for k, v in self._shapes.items()}

    def restore_shapes(self, shapes: Mapping[str, Mapping[str, Any]]) -> int:
        """Merge shapes learned elsewhere (:meth:`learned_shapes`' form) into this store's.

        Only shapes of the same definition merge: one learned here is widened by the other
        (shapes only widen), so restoring is order-independent and never loses what either
        side saw. A shape of a definition other than the tool's current one is ignored, and
        one of the current definition replaces a stale one kept here. For a tool this store
        does not know (yet), a shape of another definition than the one kept here is ignored:
        which one is current cannot be told, and the one kept is shown only if it turns out
        to be. Entries without a definition (written before definitions were kept) belong to
        none and are ignored, as are malformed ones.

        Args:
            shapes: ``{tool_id: {"shape": schema, "count": n, "definition": fingerprint}}``.

        Returns:
            How many tools' shapes changed.
        """
        # The definitions the tools have now, read before taking the lock (the index has its own).
        ids = [k for k in shapes if isinstance(k, str)]  # pyright: ignore[reportUnnecessaryIsInstance]
        current = {tool_id: self._current_definition(tool_id) for tool_id in ids}
        changed = 0
        with self._lock:
            for tool_id in ids:
                entry = shapes[tool_id]
                shape, count, definition = entry.get("shape"), entry.get("count", 1), entry.get("definition")
                if not isinstance(shape, dict) or not isinstance(definition, str) or not definition:
                    continue
                now = current[tool_id]
                if now is not None and definition != now:
                    continue  # another definition's: never this one's
                if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                    count = 1
                old = self._shapes.get(tool_id)
                if old is not None and old.definition != definition:
                    if now is None:
                        continue  # which of the two is current is unknown here: keep ours
                    old = None  # ours is stale, this one the current definition's
                    self._streak.pop(tool_id, None)
                shape_d = cast("dict[str, Any]", shape)
                merged = shape_d if old is None else merge_shapes(old.shape, shape_d, self._limits)
                if old is None or merged != old.shape:
                    changed += 1
                self._shapes[tool_id] = LearnedShape(merged, max(count, old.count if old else 0), definition)
            if changed:
                self._touch()
                self._shapes_version += 1
        return changed

    def _current_definition(self, tool_id: str) -> str | None:
        """The fingerprint of the definition ``tool_id`` has now; ``None`` when the index has no such tool."""
        try:
            tool, tid = self._lookup(tool_id)
        except DocNotFoundError:
            return None
        # The id of a shape is a tool's full id; another one (a bare name, a later version) is not its tool.
        return self._definition(tool, tid) if tid == tool_id else None

    def flush(self) -> bool:
        """Write learned shapes to the shapes file if anything changed since the last write.

        Returns:
            ``True`` when the file is up to date (or there is no file), ``False`` if writing failed.
        """
        with self._lock:
            return self._save_locked() if self._dirty else True

    def _save_locked(self) -> bool:
        if self._file is None:
            self._dirty = False
            return True
        ok = self._file.save(self._shapes)
        if ok:
            self._dirty = False
        return ok
