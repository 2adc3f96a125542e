from __future__ import annotations

import pytest
from _tooldocs_support import CATALOGS, load_catalog_records, tool_from_record

from toolindex import Tool


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=sorted(CATALOGS))
def catalog_tools(request: pytest.FixtureRequest) -> list[Tool]:
    return [tool_from_record(r) for r in load_catalog_records(request.param)]
