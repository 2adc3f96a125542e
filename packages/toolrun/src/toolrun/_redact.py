"""Secrets out of results, errors and logs: known secret values in any encoding, and credentials in text.

Every value registered with :func:`register_secrets` is a secret: :func:`~toolrun.load_config`
registers each server's header values, ``env`` values, URL credentials, an OpenAPI entry's
``query`` values, and the values of ``${VAR}`` whose name looks secret; the backends register
those of configurations built in code, and a stdio server with ``inheritEnv`` the values of the
inherited variables whose names look secret.
Values shorter than :data:`MIN_SECRET_LENGTH` characters are not registered (``"1"`` or
``"true"`` would blank every message). The registry is process-wide and only grows.

- :func:`mask_secrets` replaces the registered values — as they are, percent-encoded,
  JSON-escaped or base64-encoded — in text or anywhere inside a structured value. The runner
  applies it to every successful result, so what a tool returns never shows them, and the MCP
  and provider backends to every tool definition they list (:mod:`toolrun._definitions`).
- :func:`redact` does the same in text and also removes what looks like a credential: the user
  information of URLs (``https://user:pass@host`` → ``https://***@host``) and the values of
  parameters whose names look secret (``api_key=…``, ``"password": "…"``, ``Authorization: …``,
  ``Bearer …``). Error messages and log lines go through it; results do not (it would change
  data that only looks like a credential).

Each is replaced by ``***``.
"""

from __future__ import annotations

import base64
import bisect
import heapq
import itertools
import logging
import marshal
import re
import string
import threading
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any, TypeVar, cast

from toolindex.log import add_scrubber

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "RedactingFilter",
    "Redactor",
    "default_redactor",
    "looks_secret",
    "mask_secrets",
    "redact",
    "redact_processor",
    "redact_url",
    "register_secrets",
]

MASK = "***"
"""What a secret is replaced by."""

MIN_SECRET_LENGTH = 6
"""Shorter values are never registered as secrets."""

# Parameter names that carry credentials: the word alone or as the last part of a longer name
# (``api_key``, ``client_secret``, ``x-api-key``, ``access_token``, ``db.password``).
_SECRET_WORDS = (
    r"api[_-]?key|apikey|key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|secret|password|passwd|pwd"
    r"|pass|auth|authorization|signature|sig|credentials?|session[_-]?id|sessionid|private[_-]?key|cookie"
    r"|client[_-]?secret|code[_-]?verifier|jwt|bearer"
)
_NAME = rf"(?:[A-Za-z0-9]+[_.-])*(?:{_SECRET_WORDS})"
_SECRET_NAME = re.compile(rf"^{_NAME}$", re.IGNORECASE)
# name=value (query strings, command lines, log lines); the value ends at a separator or quote.
# A trailing colon is left out when a separator follows ("cannot reach http://h/?key=abc: …").
_ASSIGNMENT = re.compile(
    rf"(?<![A-Za-z0-9_.])({_NAME})=(['\"]?)([^\s&#;,'\"<>)\]}}]+?)(?=:?(?:[\s&#;,'\"<>)\]}}]|$))", re.IGNORECASE
)
# "name": "value" (JSON).
_JSON_PAIR = re.compile(rf'("{_NAME}"\s*:\s*")((?:[^"\\]|\\.)*)(")', re.IGNORECASE)
# Header lines: everything after the colon.
_HEADER = re.compile(
    r"(?<![A-Za-z0-9_-])((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie|set-cookie)(\s*:\s*)([^\r\n]+)",
    re.IGNORECASE,
)
# An authorization scheme and its credential. Only "Bearer" is taken on its own: after "Basic" or
# "Token" the word must look like a credential (a digit, a symbol, or an upper-case letter after a
# lower-case one), or "Token expired" and "Basic Configuration" would go.
_SCHEME_TOKEN = re.compile(
    r"\b(?:(Bearer)(\s+)([A-Za-z0-9._~+/=-]{6,})|(Basic|Token|Digest)(\s+)"
    r"((?=[A-Za-z]*(?:[0-9._~+/=-]|(?-i:[a-z][A-Z])))[A-Za-z0-9._~+/=-]{8,}))",
    re.IGNORECASE,
)
# scheme://userinfo@ — userinfo is everything up to the last @ before the host part ends.
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]{0,30}://)[^\s/?#@'\"<>]*@")


def looks_secret(name: str) -> bool:
    """Whether a parameter, header or variable name looks like it holds a secret.

    >>> looks_secret("GITHUB_TOKEN"), looks_secret("api_key"), looks_secret("HOME")
    (True, True, False)
    """
    return bool(_SECRET_NAME.match(name))


_T = TypeVar("_T")
_SCALARS = frozenset({int, float, bool})
# What masking looks inside (typed loosely on purpose: what is found inside is Any, not Unknown).
_CONTAINERS: tuple[type, ...] = (dict, list, tuple)


def _is_dict(value: Any) -> bool:
    return isinstance(value, dict)


def _entries(container: Any) -> list[Any]:
    """A container's entries: ``(key, value)`` pairs of a dict, the items of a list or tuple."""
    return list(container.items() if _is_dict(container) else container)


# Characters no URL or JSON encoder rewrites: a run of them is found literally in every encoding.
_KEPT = frozenset(string.ascii_letters + string.digits + "-._")
_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# One base64 character (either alphabet, percent- or JSON-escaped) and one padding character.
_B64_CHAR = r"(?:[A-Za-z0-9+/_-]|%2[BbFf]|\\/)"
_B64_PAD = r"(?:=|%3[Dd])"
_B64_ALTS = {"+": r"(?:\+|-|%2[Bb])", "/": r"(?:/|_|%2[Ff]|\\/)"}


def _hex(digits: str) -> str:
    """Hex digits matching in either case: ``2f`` → ``2[Ff]``."""
    return "".join(f"[{d.upper()}{d.lower()}]" if d.isalpha() else d for d in digits)


def _char_pattern(c: str) -> str:
    """A character of a secret as it is, percent-encoded or JSON-escaped."""
    if c in _KEPT:
        return re.escape(c)
    alts = [re.escape(c), "".join(f"%{_hex(f'{b:02x}')}" for b in c.encode("utf-8", "surrogatepass"))]
    if c == " ":
        alts.append(r"\+")
    if c in _JSON_SHORT:
        alts.append(re.escape(_JSON_SHORT[c]))
    cp = ord(c)
    if cp < 0x20 or cp > 0x7E or c in '"\\':
        units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
        alts.append("".join(r"\\u" + _hex(f"{u:04x}") for u in units))
    return f"(?:{'|'.join(alts)})"


def _char_span(c: str) -> int:
    """The most characters ``c`` can take in any encoding :func:`_char_pattern` matches."""
    if c in _KEPT:
        return 1
    return max(3 * len(c.encode("utf-8", "surrogatepass")), 12 if ord(c) >= 0x10000 else 6)


def _anchor_of(text: str, kept: Callable[[str], bool]) -> tuple[int, str]:
    """The longest run of ``kept`` characters in ``text`` (the first of equals), and where it starts."""
    best_at, best, run_at = 0, 0, 0
    for i, c in enumerate(text):
        if not kept(c):
            run_at = i + 1
        elif i + 1 - run_at > best:
            best_at, best = run_at, i + 1 - run_at
    return best_at, text[best_at : best_at + best]


class _Form:
    """One way a secret can be written, as a regex, and the literal every match of it contains.

    ``before`` is the most characters a match can span before the anchor: a match around an
    anchor found at ``p`` starts at ``p - before`` or later.
    """

    __slots__ = ("anchor", "before", "regex")

    def __init__(self, pattern: str, anchor: str, before: int) -> None:
        self.regex = re.compile(pattern)
        self.anchor = anchor
        self.before = before


def _text_form(secret: str) -> _Form:
    """``secret`` as it is, percent-encoded or JSON-escaped."""
    at, anchor = _anchor_of(secret, _KEPT.__contains__)
    before = sum(_char_span(c) for c in secret[:at])
    return _Form("".join(_char_pattern(c) for c in secret), anchor, before)


def _base64_forms(secret: str) -> list[_Form]:
    """``secret``'s base64 at the three byte offsets it can have in a longer text.

    At offset ``k`` the characters that carry only the secret's bits are fixed; the one before
    and the one after also carry a neighbour's bits, so they match any base64 character (and
    are masked with the rest when present).
    """
    data = secret.encode("utf-8", "surrogatepass")
    forms: list[_Form] = []
    for k in range(3):
        encoded = base64.b64encode(bytes(k) + data).decode("ascii")
        bits_before, bits_end = 8 * k, 8 * (k + len(data))
        core = encoded[-(-bits_before // 6) : bits_end // 6]
        lead = f"{_B64_CHAR}?" if bits_before % 6 else ""
        tail = f"(?:{_B64_CHAR}{_B64_PAD}{{0,2}})?" if bits_end % 6 else ""
        at, anchor = _anchor_of(core, str.isalnum)
        before = 3 + sum(3 if c in _B64_ALTS else 1 for c in core[:at])
        forms.append(_Form(lead + "".join(_B64_ALTS.get(c, c) for c in core) + tail, anchor, before))
    return forms


class _Compiled:
    """The registered secrets' forms, grouped by the literal anchor every match of a form contains.

    Finding the anchors is a few ``str.find`` / ``in`` scans at C speed; a form's regex is tried
    only where its anchor occurs, at the few positions a match around it can start. A text or a
    value in which no anchor occurs holds no secret.
    """

    __slots__ = ("anchors", "by_anchor", "separator")

    def __init__(self, values: Iterable[str]) -> None:
        by_anchor: dict[str, list[_Form]] = {}
        for v in values:
            for form in (_text_form(v), *_base64_forms(v)):
                by_anchor.setdefault(form.anchor, []).append(form)
        self.by_anchor = by_anchor
        self.anchors: tuple[str, ...] = tuple(a for a in by_anchor if a)  # ASCII by construction
        # Joins the strings of a structured value into one text: a character no form can match
        # (forms match a control character only where a secret has it).
        taken = "".join(values)
        self.separator = next((c for c in map(chr, range(32)) if c not in taken), "\x00")

    def may_hold(self, text: str) -> bool:
        return "" in self.by_anchor or any(a in text for a in self.anchors)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where registered secrets are in ``text``: sorted, overlapping ones merged."""
        found: list[tuple[int, int]] = []
        for anchor, forms in self.by_anchor.items():
            if not anchor:  # a secret with no literal run: its regex reads the whole text
                found += [m.span() for f in forms for m in f.regex.finditer(text) if m.end() > m.start()]
                continue
            at = text.find(anchor)
            while at != -1:
                covers = at + len(anchor)
                for f in forms:
                    for start in range(max(0, at - f.before), at + 1):
                        m = f.regex.match(text, start)
                        if m is not None and m.end() >= covers:
                            found.append((start, m.end()))
                            break
                at = text.find(anchor, at + 1)
        if len(found) < 2:
            return found
        found.sort()
        merged = [found[0]]
        for lo, hi in found[1:]:
            if lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        return merged

    def mask_text(self, text: str) -> str:
        if not self.may_hold(text):
            return text
        spans = self.spans(text)
        return _masked(text, spans, 0) if spans else text

    def holds_none(self, value: Any) -> bool:
        """Whether ``value`` surely holds no secret (``False``: it may)."""
        if "" in self.by_anchor:
            return False
        # marshal writes every str (and key) as its UTF-8 bytes, at C speed, and refuses anything
        # but plain data without running any of its code: no anchor in the bytes, no secret inside.
        try:
            blob = marshal.dumps(value)
        except ValueError:  # an object marshal does not know, or nesting too deep for it
            return False
        # As text (anchors are ASCII, so any decoding that keeps ASCII bytes as they are will do):
        # str's search costs a third of bytes' on a short value, the same on a long one.
        text = blob.decode("latin-1")
        return not any(a in text for a in self.anchors)

    def mask_value(self, value: Any) -> Any:
        if self.holds_none(value):
            return value
        # Go down the one entry that holds every secret, as deep as there is one, then mask what
        # is left in one scan: a megabyte with one secret is halved a few times, not walked.
        path: list[tuple[Any, list[Any], int]] = []
        node: Any = value
        while isinstance(node, _CONTAINERS):
            entries = _entries(node)
            if not entries:  # only an object marshal does not know makes an empty one look hot
                break
            lo, hi = self._narrow(entries)
            is_dict = _is_dict(node)
            inner = entries[lo][1] if is_dict else entries[lo]
            key = entries[lo][0] if is_dict else None
            key_clean = not isinstance(key, str) or self.mask_text(key) is key
            if hi - lo > 1 or not key_clean or any(c is inner for c, _, _ in path) or inner is node:
                stretch = entries[lo:hi]
                masked = self._mask_all(stretch)
                if masked is not stretch:
                    entries[lo:hi] = masked
                    node = _rebuilt(node, entries)
                break
            path.append((node, entries, lo))
            node = inner
        else:
            if isinstance(node, str):
                node = self.mask_text(node)
        for container, entries, i in reversed(path):
            is_dict = _is_dict(container)
            if (entries[i][1] if is_dict else entries[i]) is node:
                node = container
            else:
                entries[i] = (entries[i][0], node) if is_dict else node
                node = _rebuilt(container, entries)
        return node

    def _narrow(self, entries: list[Any]) -> tuple[int, int]:
        """The stretch ``entries[lo:hi]`` outside of which no entry holds a secret, found by halving.

        Halving stops where both halves may hold one (so a value with secrets all over costs
        one step, and one with a single secret a few).
        """
        lo, hi = 0, len(entries)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.holds_none(entries[lo:mid]):
                lo = mid
            elif self.holds_none(entries[mid:hi]):
                hi = mid
            else:
                break
        return lo, hi

    def _mask_all(self, values: list[Any]) -> list[Any]:
        """``values`` with every string in them (keys too) masked, in one scan; ``values`` itself if none was."""
        found = _Strings.of(values)
        if found is None:  # a container met twice (shared, or in a cycle): the generic walk
            return _walk(values, self.mask_text)
        strings = found.strings
        # Every string in one text, joined by a character no form matches: one scan for all.
        starts = list(itertools.accumulate((len(s) + 1 for s in strings), initial=0))
        spans = self.spans(self.separator.join(strings))
        if not spans:
            return values
        by_string: dict[int, list[tuple[int, int]]] = {}
        for lo, hi in spans:
            by_string.setdefault(bisect.bisect_right(starts, lo) - 1, []).append((lo, hi))
        # Rebuild only the containers on the way from a masked string up to the root, deepest first.
        edits: dict[int, list[tuple[Any, bool, Any]]] = {}
        for i, at in by_string.items():
            ci, slot, is_key = found.where(i)
            edits.setdefault(ci, []).append((slot, is_key, _masked(strings[i], at, starts[i])))
        # A child is numbered after its parent: the highest number first is deepest first.
        todo = [-ci for ci in edits]
        heapq.heapify(todo)
        while todo:
            ci = -heapq.heappop(todo)
            rebuilt = _edited(found.containers[ci], edits.pop(ci))
            parent, slot = found.parents[ci]
            if parent < 0:
                return rebuilt
            if parent not in edits:
                heapq.heappush(todo, -parent)
            edits.setdefault(parent, []).append((slot, False, rebuilt))
        raise AssertionError("unreachable: the root is always rebuilt last")  # pragma: no cover


def _rebuilt(container: Any, entries: list[Any]) -> Any:
    """A container of ``container``'s kind (dict, list or tuple) holding ``entries``."""
    if isinstance(container, dict):
        return dict(entries)
    return tuple(entries) if isinstance(container, tuple) else entries


class _Strings:
    """Every string of a value (dict keys too), container by container.

    Containers are numbered in the order they are read (a parent before its children);
    ``strings[first[c]:first[c + 1]]`` are container ``c``'s own strings, in its order.
    """

    __slots__ = ("containers", "first", "parents", "strings")

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.containers: list[Any] = []
        self.first: list[int] = []
        self.parents: list[tuple[int, Any]] = []
        """Each container's parent (``-1`` for the root) and its slot there."""

    @classmethod
    def of(cls, root: Any) -> _Strings | None:
        """The strings of ``root``; ``None`` if a container occurs twice (shared, or in a cycle)."""
        out = cls()
        strings, containers, first, parents = out.strings, out.containers, out.first, out.parents
        add = strings.append
        seen = {id(root)}
        todo: list[tuple[Any, int, Any]] = [(root, -1, None)]
        while todo:
            c, parent, slot = todo.pop()
            ci = len(containers)
            containers.append(c)
            first.append(len(strings))
            parents.append((parent, slot))
            if _is_dict(c):
                for k, v in c.items():
                    if isinstance(k, str):
                        add(k)
                    if isinstance(v, str):
                        add(v)
                    elif isinstance(v, _CONTAINERS):
                        if id(v) in seen:
                            return None
                        seen.add(id(v))
                        todo.append((v, ci, k))
            else:
                for j, v in enumerate(c):
                    if isinstance(v, str):
                        add(v)
                    elif isinstance(v, _CONTAINERS):
                        if id(v) in seen:
                            return None
                        seen.add(id(v))
                        todo.append((v, ci, j))
        first.append(len(strings))
        return out

    def where(self, i: int) -> tuple[int, Any, bool]:
        """``(container, slot, is_key)`` of string ``i``."""
        ci = bisect.bisect_right(self.first, i) - 1
        nth = i - self.first[ci]
        c = self.containers[ci]
        if isinstance(c, dict):
            for k, v in cast(dict[Any, Any], c).items():
                if isinstance(k, str):
                    if nth == 0:
                        return ci, k, True
                    nth -= 1
                if isinstance(v, str):
                    if nth == 0:
                        return ci, k, False
                    nth -= 1
        else:
            for j, v in enumerate(c):
                if isinstance(v, str):
                    if nth == 0:
                        return ci, j, False
                    nth -= 1
        raise AssertionError("unreachable: every string has a place")  # pragma: no cover


def _edited(container: Any, edits: list[tuple[Any, bool, Any]]) -> Any:
    """A copy of ``container`` with its entries (and, for a dict, keys) replaced as ``edits`` say."""
    if isinstance(container, dict):
        keys = {slot: new for slot, is_key, new in edits if is_key}
        values = {slot: new for slot, is_key, new in edits if not is_key}
        return {keys.get(k, k): values.get(k, v) for k, v in cast(dict[Any, Any], container).items()}
    out = list(container)
    for slot, _, new in edits:
        out[slot] = new
    return tuple(out) if isinstance(container, tuple) else out


def _masked(text: str, spans: list[tuple[int, int]], offset: int) -> str:
    """``text`` with each span (sorted, disjoint, shifted by ``offset``) replaced by the mask."""
    pieces: list[str] = []
    done = 0
    for lo, hi in spans:
        pieces += (text[done : lo - offset], MASK)
        done = hi - offset
    pieces.append(text[done:])
    return "".join(pieces)


class _Frame:
    """A container being rebuilt by :func:`_walk`."""

    __slots__ = ("changed", "container", "entries", "key", "next")

    def __init__(self, container: Any) -> None:
        self.container = container
        self.entries = _entries(container)
        self.next = 0
        self.changed = False
        self.key: Any = None
        """The (new) key of the entry whose value is being rebuilt below this frame."""

    def built(self) -> Any:
        if not self.changed:
            return self.container
        if isinstance(self.container, dict):
            return dict(self.entries)
        return tuple(self.entries) if isinstance(self.container, tuple) else self.entries


def _walk(root: Any, change: Callable[[str], str]) -> Any:
    """``root`` with ``change`` applied to every string and key in it, containers rebuilt only where one changed.

    Strings are visited in one fixed order (a container's entries in order, each key before
    its value, depth first). Iterative (an explicit stack), so no depth reaches the recursion limit.

    Raises:
        ValueError: If a container contains itself.
    """
    if isinstance(root, str):
        return change(root)
    if not isinstance(root, _CONTAINERS):
        return root
    stack = [_Frame(root)]
    on_path = {id(root)}
    while True:
        frame = stack[-1]
        is_dict = isinstance(frame.container, dict)
        entries = frame.entries
        descended = False
        while frame.next < len(entries):
            i = frame.next
            frame.next += 1
            key, value = entries[i] if is_dict else (None, entries[i])
            if is_dict and isinstance(key, str):
                new_key = change(key)
                if new_key is not key:
                    key, frame.changed = new_key, True
                    entries[i] = (key, value)
            if isinstance(value, _CONTAINERS):
                if id(value) in on_path:
                    raise ValueError("the value contains itself")
                on_path.add(id(value))
                frame.key = key
                stack.append(_Frame(value))
                descended = True
                break
            if isinstance(value, str) and (new := change(value)) is not value:
                frame.changed = True
                entries[i] = (key, new) if is_dict else new
        if descended:
            continue
        stack.pop()
        on_path.discard(id(frame.container))
        built = frame.built()
        if not stack:
            return built
        parent = stack[-1]
        if built is not frame.container:
            parent.changed = True
            parent.entries[parent.next - 1] = (parent.key, built) if isinstance(parent.container, dict) else built


class Redactor:
    r"""Replaces registered secret values, in any of their encodings, and credentials in text by ``***``.

    Two operations: :meth:`mask` replaces only the registered values, in text or inside a
    structured value (what a tool returned); :meth:`redact` replaces them in text and also
    anything that looks like a credential (URL user information, ``api_key=…``, ``Bearer …``):
    that is for error messages and log lines, not for results, whose data it would change.

    A registered value is found as it is and as encoders write it: percent-encoded (every
    character other than letters, digits and ``-._`` as ``%XX`` in either case, a space also as
    ``+``), JSON-escaped (``\/``, ``\u00e9``), and base64 (standard or URL-safe alphabet,
    also percent-encoded) at any of the three byte offsets it can have inside a longer encoded
    text (``Basic base64(user:secret)``). The mask covers every character that carries a bit of
    the value, so no encoded form is left half visible.

    Thread-safe: registering swaps an immutable compiled set; masking reads it once.

    Args:
        secrets: Values to replace wherever they appear.
        min_length: Values shorter than this are ignored.
    """

    def __init__(self, secrets: Iterable[str] = (), *, min_length: int = MIN_SECRET_LENGTH) -> None:
        self._min = min_length
        self._lock = threading.Lock()
        self._values: frozenset[str] = frozenset()
        self._compiled: _Compiled | None = None
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Register secret values (blank and short ones are skipped).

        Args:
            secrets: The values.
        """
        fresh = {s for s in secrets if isinstance(s, str) and len(s.strip()) >= self._min}  # pyright: ignore[reportUnnecessaryIsInstance]
        with self._lock:
            if fresh <= self._values:
                return
            values = self._values | fresh
            self._values, self._compiled = values, _Compiled(values)

    @property
    def secrets(self) -> frozenset[str]:
        """The registered values."""
        return self._values

    def mask(self, value: _T) -> _T:
        """``value`` with every registered secret, in any of its encodings, replaced by ``***``.

        Strings are masked; so are the strings and the keys inside dicts, lists and tuples, at
        any depth. Other values (numbers, ``None``, objects) are returned as they are.
        Containers are rebuilt only where something was masked (two keys that become the same
        are merged, the later wins): a value without a secret is returned itself, after one scan
        of its serialised form (no copy, no walk).

        >>> r = Redactor(["tok/9Zq+Kp"])
        >>> r.mask({"next": "https://h/items?page=2&key=tok%2F9Zq%2BKp", "auth": "dG9rLzlacStLcA=="})
        {'next': 'https://h/items?page=2&key=***', 'auth': '***'}

        Args:
            value: Text or a structured value (a tool's result, its content blocks).

        Returns:
            The masked value (``value`` itself when it holds no registered secret).

        Raises:
            ValueError: If ``value`` contains itself and holds a secret (it cannot be rebuilt).
        """
        compiled = self._compiled
        if compiled is None:
            return value
        if type(value) is str:
            return cast(_T, compiled.mask_text(value))
        if value is None or type(value) in _SCALARS:
            return value
        return cast(_T, compiled.mask_value(value))

    def may_hold(self, text: str) -> bool:
        r"""Whether ``text`` may hold a registered secret in one of the forms :meth:`mask` finds.

        ``False`` means surely not: every form of a secret contains a literal part (its longest
        run of letters, digits and ``-._``, or of its base64), and none occurs in ``text``.
        That is a few substring searches at C speed, with no match attempted. A text that writes
        one of those characters otherwise (a JSON ``\u0041`` escape) is not covered: decode it first.

        Args:
            text: Any text.
        """
        compiled = self._compiled
        return compiled is not None and compiled.may_hold(text)

    def redact(self, text: str) -> str:
        """``text`` with registered secrets and credentials replaced by ``***``.

        Args:
            text: Any text (an error message, a log line, a URL).

        Returns:
            The redacted text (``text`` itself when nothing was found).
        """
        compiled = self._compiled
        if compiled is not None:
            text = compiled.mask_text(text)
        if "://" in text:
            text = _USERINFO.sub(rf"\1{MASK}@", text)
        if "=" in text:
            text = _ASSIGNMENT.sub(rf"\1=\2{MASK}", text)
        if '"' in text:
            text = _JSON_PAIR.sub(rf"\g<1>{MASK}\g<3>", text)
        if ":" in text:
            text = _HEADER.sub(rf"\1\2{MASK}", text)
        return _SCHEME_TOKEN.sub(_mask_scheme, text)

    __call__ = redact


def _mask_scheme(m: re.Match[str]) -> str:
    scheme, space = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(5))
    return f"{scheme}{space}{MASK}"


_default = Redactor()
# Every line the packages log passes the redactor, whichever route it takes (toolindex.log).
add_scrubber(_default.redact)


def default_redactor() -> Redactor:
    """The process-wide registry that :func:`register_secrets` fills and :func:`redact` reads."""
    return _default


def register_secrets(secrets: Iterable[str]) -> None:
    """Register values that :func:`redact` replaces from now on, process-wide.

    Args:
        secrets: The values (shorter than :data:`MIN_SECRET_LENGTH`: ignored).
    """
    _default.add(secrets)


def mask_secrets(value: _T) -> _T:
    """``value`` with every registered secret, in any of its encodings, replaced by ``***``.

    Args:
        value: Text, or a structured value (dicts, lists, tuples; keys included).

    Returns:
        The masked value; ``value`` itself when it holds no registered secret.

    Raises:
        ValueError: If ``value`` contains itself and holds a secret.
    """
    return _default.mask(value)


def redact(text: str) -> str:
    """``text`` with URL credentials, secret-looking parameters and registered secrets replaced by ``***``.

    >>> redact("GET https://bob:hunter22@api.example.com/mcp?api_key=abc123&page=2")
    'GET https://***@api.example.com/mcp?api_key=***&page=2'

    Args:
        text: Any text.

    Returns:
        The redacted text.
    """
    return _default.redact(text)


def redact_url(url: str) -> str:
    """A URL fit to print: no user information, no secret-looking query or fragment parameters.

    >>> redact_url("https://user:pw@example.org/mcp?token=t0ps3cret&x=1")
    'https://***@example.org/mcp?token=***&x=1'

    Args:
        url: The URL.

    Returns:
        The redacted URL.
    """
    return _default.redact(url)


def _scrub(key: str, value: Any) -> Any:
    if isinstance(value, str):
        return _default.redact(value)
    if isinstance(value, BaseException) and key != "exc_info":
        return _default.redact(repr(value))
    return value


def redact_processor(logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A structlog processor that redacts every string value of the event (and exception values).

    Put it after ``format_exc_info`` (so tracebacks are strings by then) and before the renderer.

    Args:
        logger: Unused (structlog's processor signature).
        method_name: Unused.
        event_dict: The event.

    Returns:
        The event with its values redacted.
    """
    for k, v in event_dict.items():
        event_dict[k] = _scrub(k, v)
    return event_dict


class RedactingFilter(logging.Filter):
    """A :mod:`logging` filter that redacts the formatted message of every record it sees.

    Attach it to a handler (filters on a handler see every record that reaches it, including
    the ``mcp`` SDK's and the HTTP client's, which may quote URLs):
    ``handler.addFilter(RedactingFilter())``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place; never drops it."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler to report
            return True
        record.msg, record.args = _default.redact(message), None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = _default.redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = _default.redact(record.exc_text)
        return True
