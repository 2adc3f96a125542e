import pytest
import structlog

# structlog's default logger keeps the sys.stdout of its first use, which pytest's capture
# closes after that test; route it through stdlib logging (captured per test) instead.
structlog.configure(logger_factory=structlog.stdlib.LoggerFactory())


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
