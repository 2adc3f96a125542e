"""The browser console of ``toolcode serve --http``: paused runs, quarantine, audit and state (docs/console.md).

Off unless ``toolcode.console.enabled`` is set; served on the door's port under ``/console``, behind
the same guard (Host and Origin) and signed in with the same bearer tokens.
"""

from toolcode.console._app import CONSOLE_PATH, MAX_IN_FLIGHT, Console, is_console_path

__all__ = ["CONSOLE_PATH", "MAX_IN_FLIGHT", "Console", "is_console_path"]
