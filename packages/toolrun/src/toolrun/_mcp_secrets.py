r"""Registered secrets out of every message an MCP server sends, before the SDK reads it.

A server may quote its own credential (an ``env`` value, a header, see
:func:`~toolrun.register_secrets`) in anything it sends: a JSON-RPC error's message, a result, a
notification, a request of its own. Whatever the SDK parses it keeps as it came, and passes on:
to the status of its client span (``MCP send tools/call …``, a child of ``toolcode.tool_call``),
its log lines, its exceptions, every handler. So each transport's reader hands every message to
:func:`mask_message` after it was screened (:func:`~toolrun._mcp_reader.screen`) and before
anything parses it — stdio lines (:mod:`toolrun._mcp_stdio`), HTTP bodies and SSE events
(:func:`~toolrun._mcp_reader.mend_http_response`) — and nothing downstream sees a secret:

- a message in whose text no registered secret can be (:func:`may_hold_secret`: none of their
  literal parts occurs in it, see :meth:`~toolrun.Redactor.may_hold`, and no letter, digit or
  ``-._`` is written as a ``\u`` escape, the one way JSON can hide such a part) is passed on as
  it is: a few substring searches at C speed;
- any other is parsed, masked as a value (every string and key, so how the server escaped a
  secret never matters), and written again only if something was masked. In a ``tools/list``
  reply the definitions are masked as :func:`~toolrun._definitions.masked_definitions` does
  (in a schema's regular expression the mask is a regex literal, or the tool would be unusable);
- a message that is not JSON is masked as text, its escaped printable characters written plainly
  first: it fails its call, and the mending reader may quote it.

The process-wide registry is used (:func:`~toolrun.default_redactor`), where every backend
registers its configuration's secrets. The later steps stay: the runner masks every result with
its own redactor (results of OpenAPI and local tools too), errors and log lines go through
:func:`~toolrun.redact` (which also removes what only looks like a credential), and listed
definitions are masked again where a backend lists them. They also cover what this step
cannot: a compressed HTTP body, which the response hook leaves alone (it is decoded after it).
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from toolrun._definitions import masked_definitions
from toolrun._redact import default_redactor, mask_secrets

__all__ = ["mask_message", "may_hold_secret"]

# A \u escape of a character that an anchor can hold (letters, digits, "-._"); case-insensitive hex.
_ESCAPED_ANCHOR_CHAR = re.compile(r"\\u00(?:2[de]|3[0-9]|4[1-9a-f]|5[0-9af]|6[1-9a-f]|7[0-9a])", re.IGNORECASE)
# A \u escape of a printable ASCII character, or an escaped backslash (which is skipped whole, so
# that "\\u0041" stays a backslash followed by "u0041").
_ESCAPE = re.compile(r"\\(?:\\|u00([2-7][0-9a-f]))", re.IGNORECASE)


def may_hold_secret(text: str) -> bool:
    """Whether a message's text may hold a registered secret (``False``: surely not; C-speed searches).

    Args:
        text: The message's JSON text (or more: an SSE event with its fields).
    """
    return default_redactor().may_hold(text) or _ESCAPED_ANCHOR_CHAR.search(text) is not None


def mask_message(text: str) -> str:
    """One message as a server sent it, with every registered secret in it masked (``***``).

    Args:
        text: The message's JSON text.

    Returns:
        ``text`` itself when it holds no registered secret; else the masked message, written
        again as JSON (ASCII-only), or for a text that is not JSON, the masked text.
    """
    if not may_hold_secret(text):
        return text
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return mask_secrets(_ESCAPE.sub(_plain, text))
    masked = _masked(message)
    # ASCII: a lone surrogate stays an escape, which the SDK's parser refuses as it would have.
    return text if masked is message else json.dumps(masked)


def _plain(m: re.Match[str]) -> str:
    # A quote, a backslash and DEL stay escaped: written plainly they could end a string.
    c = chr(int(m.group(1), 16)) if m.group(1) is not None else ""
    return c if c and c not in '"\\\x7f' else m.group()


def _masked(message: Any) -> Any:
    masked = mask_secrets(message)
    if masked is message:
        return message
    tools = _listed_tools(message)
    result: Any = cast(dict[str, Any], masked).get("result")
    if tools is not None and isinstance(result, dict):
        # A listing's definitions keep their regular expressions valid (a literal mask).
        listing: dict[str, Any] = {**cast(dict[str, Any], result), "tools": masked_definitions(tools)}
        return {**cast(dict[str, Any], masked), "result": listing}
    return masked


def _listed_tools(message: Any) -> list[Any] | None:
    # The "tools" of a reply's result (a tools/list reply by its shape), else None.
    if not isinstance(message, dict):
        return None
    result = cast(dict[str, Any], message).get("result")
    if "method" in message or not isinstance(result, dict):
        return None
    tools = cast(dict[str, Any], result).get("tools")
    return cast(list[Any], tools) if isinstance(tools, list) else None
