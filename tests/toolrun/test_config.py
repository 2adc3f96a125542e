from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

import pytest

from toolrun import DEFAULT_MCP_TIMEOUT, ConfigError, HttpServerConfig, StdioServerConfig, load_config, redact
from toolrun._config import expand_vars


def cfg(servers: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    return load_config({"mcpServers": servers}, env=env or {})


def test_stdio_and_http_servers() -> None:
    c = cfg(
        {
            "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "cwd": "/tmp"},
            "remote": {"url": "https://example.org/mcp", "headers": {"Authorization": "Bearer x"}, "timeout": 5},
        }
    )
    git, remote = c.servers["git"], c.servers["remote"]
    assert isinstance(git, StdioServerConfig)
    assert (git.command, git.args, git.env, git.cwd) == ("uvx", ("mcp-server-git",), {"A": "1"}, "/tmp")
    assert isinstance(remote, HttpServerConfig)
    assert remote.headers == {"Authorization": "Bearer x"}
    assert remote.timeout == 5
    assert list(c.enabled()) == ["git", "remote"]


def test_type_synonyms_and_options() -> None:
    c = cfg(
        {
            "a": {
                "type": "streamable-http",
                "url": "http://127.0.0.1:1/mcp",
                "connectTimeout": 2,
                "protocol": "legacy",
            },
            "b": {"type": "stdio", "command": "x", "inheritEnv": True, "autoApprove": ["t"]},
        }
    )
    assert c.servers["a"].type == "http"
    assert c.servers["a"].connect_timeout == 2
    assert c.servers["a"].protocol == "legacy"
    assert c.servers["b"].inherit_env is True


def test_disabled_servers_are_kept_but_not_enabled() -> None:
    c = cfg({"on": {"command": "a"}, "off": {"command": "b", "disabled": True, "env": {"K": "${UNSET}"}}})
    assert set(c.servers) == {"on", "off"}
    assert list(c.enabled()) == ["on"]


def test_variable_expansion() -> None:
    env = {"TOKEN": "s3cret", "HOME": "/home/u", "EMPTY": ""}
    c = cfg(
        {
            "s": {
                "command": "${HOME}/bin/server",
                "args": ["--token=${TOKEN}", "--level=${LEVEL:-info}", "--e=${EMPTY:-fallback}"],
                "env": {"API_KEY": "${TOKEN}"},
            },
            "h": {"url": "https://${HOST:-example.org}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        },
        env,
    )
    s = c.servers["s"]
    assert s.command == "/home/u/bin/server"
    assert s.args == ("--token=s3cret", "--level=info", "--e=fallback")
    assert s.env == {"API_KEY": "s3cret"}
    assert c.servers["h"].url == "https://example.org/mcp"
    assert c.servers["h"].headers == {"Authorization": "Bearer s3cret"}


def test_missing_variable_names_server_and_field() -> None:
    with pytest.raises(ConfigError) as ei:
        cfg({"gh": {"command": "x", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}})
    assert (ei.value.server, ei.value.field) == ("gh", "env.GITHUB_TOKEN")
    assert "'GITHUB_TOKEN' is not set" in str(ei.value)
    with pytest.raises(ConfigError) as ei:
        cfg({"s": {"command": "x", "args": ["a", "${NOPE}"]}})
    assert ei.value.field == "args[1]"


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        ({"command": "x", "url": "http://h/mcp"}, "command", "not 'command' and 'url'"),
        ({"type": "sse", "url": "http://h/sse"}, "type", "SSE is not supported"),
        ({"type": "websocket", "url": "ws://h"}, "type", "unknown server type; expected 'stdio', 'http' or 'openapi'"),
        ({"args": ["x"]}, None, "needs 'command'"),
        ({"command": 42}, "command", "string"),
        ({"command": "x", "args": "--flag"}, "args", "list of strings"),
        ({"command": "x", "args": ["a", 1]}, "args", "list of strings"),
        ({"command": "x", "env": {"A": 1}}, "env.A", "string"),
        ({"command": "x", "timeout": -1}, "timeout", "greater than or equal to 0"),
        ({"command": "x", "timeout": "soon"}, "timeout", "valid number"),
        ({"url": "ftp://h/x"}, "url", "http:// or https://"),
        ({"url": "http://h", "headers": ["a"]}, "headers", "dictionary"),
        ({"command": "x", "protocol": "2024"}, "protocol", "'auto' or 'legacy'"),
    ],
)
def test_bad_server_entries(entry: dict[str, Any], field: str | None, words: str) -> None:
    with pytest.raises(ConfigError) as ei:
        cfg({"srv": entry})
    assert ei.value.server == "srv"
    assert ei.value.field == field
    assert words in str(ei.value)


def test_bad_top_level() -> None:
    with pytest.raises(ConfigError, match="mcpServers"):
        load_config({"servers": {}})
    with pytest.raises(ConfigError, match="must be an object"):
        load_config({"mcpServers": []})
    with pytest.raises(ConfigError) as ei:
        load_config({"mcpServers": {"a:b": {"command": "x"}}})
    assert ei.value.server == "a:b"
    with pytest.raises(ConfigError, match="must be an object"):
        load_config({"mcpServers": {"s": "uvx server"}})


def test_load_from_file(tmp_path: Path) -> None:
    p = tmp_path / "mcp.json"
    p.write_text(json.dumps({"mcpServers": {"t": {"command": "x"}}, "otherClientSetting": True}))
    assert load_config(p).servers["t"].command == "x"
    assert load_config(str(p)).servers["t"].command == "x"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")


def test_config_is_frozen() -> None:
    s = cfg({"s": {"command": "x"}}).servers["s"]
    with pytest.raises(ValueError, match="frozen"):
        s.command = "y"


def test_expand_vars_leaves_plain_text() -> None:
    assert expand_vars("no vars $HOME here", {}) == "no vars $HOME here"
    assert expand_vars("${A}${B:-b}", {"A": "a"}) == "ab"


def test_timeout_defaults_to_a_minute_and_zero_or_null_means_no_limit() -> None:
    c = cfg(
        {
            "default": {"command": "x"},
            "zero": {"command": "x", "timeout": 0},
            "null": {"url": "http://h/mcp", "timeout": None},
            "set": {"url": "http://h/mcp", "timeout": 2.5},
        }
    )
    assert DEFAULT_MCP_TIMEOUT == 60.0
    assert c.servers["default"].timeout == 60.0  # leaving the key out never means unbounded
    assert c.servers["zero"].timeout is None
    assert c.servers["null"].timeout is None
    assert c.servers["set"].timeout == 2.5
    assert StdioServerConfig(command="x").timeout == 60.0


def test_expose_stderr_is_off_unless_asked() -> None:
    c = cfg({"quiet": {"command": "x"}, "loud": {"command": "x", "exposeStderr": True}})
    assert c.servers["quiet"].expose_stderr is False
    assert c.servers["loud"].expose_stderr is True


@pytest.mark.parametrize(
    ("entry", "secret"),
    [
        ({"url": "ftp://alice:pa55word-1@h/x?api_key=k3y-value-1"}, "pa55word-1"),
        ({"url": "ftp://h/x?api_key=k3y-value-1"}, "k3y-value-1"),
        ({"url": "https://h/mcp", "headers": {"Authorization": "Bearer t0k3n-value-1"}, "timeout": "x"}, "t0k3n-value"),
        ({"command": "x", "env": {"API_KEY": "3nv-secret-1"}, "args": "not a list"}, "3nv-secret-1"),
        ({"command": "x", "env": {"API_KEY": 12345678}}, "12345678"),
        ({"type": "t0k3n-as-type", "url": "https://h/mcp"}, "t0k3n-as-type"),
    ],
)
def test_config_errors_never_echo_values(entry: dict[str, Any], secret: str) -> None:
    with pytest.raises(ConfigError) as ei:
        cfg({"srv": entry})
    assert ei.value.server == "srv"
    # Nor in the printed traceback: pydantic's own error, which quotes the input, is not chained.
    assert secret not in "".join(traceback.format_exception(ei.value))


def test_loading_registers_the_secrets_it_holds() -> None:
    cfg(
        {
            "gh": {"url": "https://bob:pw-l0ad-1@h/mcp?token=q-l0ad-1&page=2", "headers": {"X-Key": "h-l0ad-1"}},
            "local": {"command": "x", "env": {"DB_URL": "postgres://u@h/db-l0ad-1"}, "args": ["--key=${MY_TOKEN}"]},
        },
        {"MY_TOKEN": "v-l0ad-1"},
    )
    text = "pw-l0ad-1 q-l0ad-1 h-l0ad-1 postgres://u@h/db-l0ad-1 v-l0ad-1 page=2"
    assert redact(text) == "*** *** *** *** *** page=2"


def test_disabled_servers_register_nothing() -> None:
    cfg({"off": {"url": "https://h/mcp", "headers": {"X-Key": "d1sabled-value"}, "disabled": True}})
    assert redact("d1sabled-value") == "d1sabled-value"


def test_repr_hides_secrets() -> None:
    c = cfg(
        {
            "h": {"url": "https://bob:hunter22@h/mcp?api_key=abcdef1", "headers": {"Authorization": "Bearer zz9zz9"}},
            "s": {"command": "x", "env": {"TOKEN": "r3pr-secret"}},
        }
    )
    text = repr(c)
    for secret in ("hunter22", "abcdef1", "zz9zz9", "r3pr-secret"):
        assert secret not in text
    assert "'Authorization': '***'" in text
    assert "h/mcp?api_key=***" in text
