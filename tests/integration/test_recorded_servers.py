"""The recorded tool lists of the real servers (``tests/data/servers/real_servers.json``) are still what they list.

``bench/typecheck.py`` and ``tests/toolcode/test_typecheck_corpus.py`` check snippets against these
recordings (answered by local fakes); this test starts the servers themselves and compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from servers.record_real_servers import OUT, listed, servers

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


async def test_the_recorded_tool_lists_are_what_the_servers_list(tmp_path: Path) -> None:
    recorded: dict[str, list[dict[str, Any]]] = json.loads(OUT.read_text())["servers"]
    live = await listed(servers(tmp_path))
    assert sorted(live) == sorted(recorded) == ["everything", "filesystem", "git", "memory", "time"]
    for ns, tools in live.items():
        # Compared as JSON: the recording went through it.
        assert json.loads(json.dumps(tools)) == recorded[ns], (
            f"{ns} lists other tools than recorded: run tests/integration/servers/record_real_servers.py"
        )
