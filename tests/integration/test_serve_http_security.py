"""The HTTP door of `toolcode serve`: refusal off loopback without tokens, bearer tokens, Host and Origin checks.

Real `toolcode serve --http` processes, real HTTP requests (httpx2) and the real mcp `Client`; one server process
per scenario, shared by that scenario's tests.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import start_http_server

pytestmark = [pytest.mark.integration]

ALICE = secrets.token_urlsafe(32)
UNNAMED = secrets.token_urlsafe(24)
BOB = secrets.token_urlsafe(32)  # from the environment variable
CAROL = secrets.token_urlsafe(32)  # rotated in

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TOOLCODE_HTTP_TOKENS"}
    env.update(extra)
    return env


def _write_private(path: Path, text: str) -> Path:
    # Written next to the target and renamed over it: the server sees either the old or the new file.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(0o600)
    os.replace(tmp, path)
    return path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("http-door")
    cfg = {
        "mcpServers": {
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
        }
    }
    (root / "mcp.json").write_text(json.dumps(cfg))
    _write_private(root / "tokens", f"# callers of the door\nalice:{ALICE}\n\n{UNNAMED}   # a token without a name\n")
    return root


def _serve(workdir: Path, http: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "toolcode.cli",
        "serve",
        "--config",
        str(workdir / "mcp.json"),
        "--http",
        http,
        *extra,
    ]


class Door:
    """A running `toolcode serve --http`: where to reach it, and its output (stdout and stderr) as it comes."""

    def __init__(self, argv: list[str], env: dict[str, str], connect: str) -> None:
        self.connect = connect  # the address a client connects to
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        try:
            match = self.wait_for(r"listening on (http://\S+)", timeout=60)
        except BaseException:
            self.stop()
            raise
        self.url = match.group(1)  # as printed: http://0.0.0.0:PORT/mcp, http://[::1]:PORT/mcp, ...
        port = urlsplit(self.url).port
        assert port is not None and port > 0
        self.port = port

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip())
                self._changed.notify_all()
        with self._changed:
            self.lines.append("<exited>")
            self._changed.notify_all()

    @property
    def output(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        """The first output line matching ``pattern``, waiting for it to be printed."""
        regex = re.compile(pattern)
        found: list[re.Match[str]] = []

        def seen() -> bool:
            found[:] = [m for m in map(regex.search, self.lines) if m][:1]
            return bool(found) or "<exited>" in self.lines

        with self._changed:
            if not self._changed.wait_for(seen, timeout) or not found:
                raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.lines[-30:]))
        return found[0]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def endpoint(self, path: str = "/mcp") -> str:
        return f"http://{self.connect}:{self.port}{path}"

    def post(
        self,
        *,
        token: str | None = None,
        host: str | None = None,
        origin: str | None = None,
        authorization: str | None = None,
        path: str = "/mcp",
    ) -> httpx2.Response:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        if authorization is not None:
            headers["authorization"] = authorization
        if host is not None:
            headers["host"] = host
        if origin is not None:
            headers["origin"] = origin
        return httpx2.post(self.endpoint(path), headers=headers, content=INITIALIZE, timeout=20)


def _start(workdir: Path, http: str, *extra: str, env: dict[str, str] | None = None, connect: str) -> Door:
    return Door(_serve(workdir, http, *extra), env or _env(), connect)


@pytest.fixture(scope="module")
def public(workdir: Path) -> Iterator[Door]:
    """`serve --http 0.0.0.0:0 --token-file tokens`: every interface, bearer tokens required."""
    door = _start(workdir, "0.0.0.0:0", "--token-file", str(workdir / "tokens"), connect="127.0.0.1")
    yield door
    door.stop()


async def _call_time(door: Door, mode: str, headers: dict[str, str]) -> str:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10, read=60)) as http,
        Client(streamable_http_client(door.endpoint(), http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        res = await client.call_tool(
            "execute_code", {"code": '__out = run_tool("time:get_current_time", {"timezone": "UTC"})["timezone"]'}
        )
        assert not res.is_error, res.content
        assert res.structured_content is not None
        return str(res.structured_content["value"])


# ------------------------------------------------------------------------------ refusal and parsing


WEAK = "hunter2hunter2"  # 14 characters


@pytest.fixture(scope="module")
def refused(workdir: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Start-ups that must fail, all run at once (each costs an interpreter start): name → finished process."""
    weak_file = _write_private(workdir / "weak-tokens", f"ok:{ALICE}\nweak:{WEAK}\n")
    runs = {
        "0.0.0.0:0": (_serve(workdir, "0.0.0.0:0"), _env()),
        ":0": (_serve(workdir, ":0"), _env()),
        "bad port": (_serve(workdir, "127.0.0.1:65536"), _env()),
        "weak file": (_serve(workdir, "127.0.0.1:0", "--token-file", str(weak_file)), _env()),
        "weak env": (_serve(workdir, "127.0.0.1:0"), _env(TOOLCODE_HTTP_TOKENS=f"ok:{ALICE}, weak:{WEAK}")),
        "no file": (_serve(workdir, "0.0.0.0:0", "--token-file", str(workdir / "no-such-file")), _env()),
    }
    procs = {
        name: subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, (argv, env) in runs.items()
    }
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return done


@pytest.mark.parametrize("http", ["0.0.0.0:0", ":0"])
def test_non_loopback_without_token_exits_3_and_says_how_to_configure_one(
    refused: dict[str, subprocess.CompletedProcess[str]], http: str
) -> None:
    proc = refused[http]
    assert proc.returncode == 3, proc.stderr
    err = " ".join(proc.stderr.split())
    assert "refusing to serve HTTP" in err and "without authentication" in err, err
    assert "--token-file" in err and "TOOLCODE_HTTP_TOKENS" in err, err
    assert "Configure the tokens callers must present (" in err, err  # whole: nothing taken for a credential
    assert "listening" not in err and proc.stdout == ""


def test_out_of_range_port_exits_2_with_one_line(refused: dict[str, subprocess.CompletedProcess[str]]) -> None:
    proc = refused["bad port"]
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(errors) == 1 and "argument --http" in errors[0] and "0 to 65535" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("http", "why"),
    [
        ("127.0.0.1:65536", "not a number from 0 to 65535"),
        ("127.0.0.1:-1", "not a number from 0 to 65535"),
        ("127.0.0.1:http", "not a number from 0 to 65535"),
        ("127.0.0.1", "expected HOST:PORT"),
        ("::1:8808", "put an IPv6 address in brackets"),
        ("[::1]8808", "expected [IPv6]:PORT"),
        ("[nope]:8808", "is not an IPv6 address"),
        ("*:8808", "is not a host name or IP address"),
        ("127.0.0.1:8808 ", "not a number from 0 to 65535"),
    ],
)
def test_bad_http_values_are_usage_errors(
    workdir: Path, http: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same parser as the process above, in this process: argparse stops before anything starts.
    from toolcode.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["serve", "--config", str(workdir / "mcp.json"), "--http", http])
    assert exited.value.code == 2
    errors = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]
    assert len(errors) == 1 and "argument --http" in errors[0] and why in errors[0], errors


@pytest.mark.parametrize("value", ["https://app.example.com/path", "*", "app.example.com"])
def test_bad_allow_origin_is_a_usage_error(workdir: Path, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from toolcode.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["serve", "--config", str(workdir / "mcp.json"), "--http", "127.0.0.1:0", "--allow-origin", value])
    assert exited.value.code == 2
    assert "argument --allow-origin" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value"),
    [("--sessions-per-caller", "0"), ("--sessions-per-caller", "many"), ("--session-idle-timeout", "nan")],
)
def test_a_bad_session_bound_is_a_usage_error(
    workdir: Path, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolcode.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["serve", "--config", str(workdir / "mcp.json"), "--http", "127.0.0.1:0", option, value])
    assert exited.value.code == 2
    assert f"argument {option}" in capsys.readouterr().err


def test_a_callers_share_of_sessions_is_set_on_the_command_line(workdir: Path) -> None:
    # The share was a serve_http parameter only: an operator of `toolcode serve` could not set it.
    _write_private(workdir / "share-tokens", f"alice:{ALICE}\n")
    extra = ["--token-file", str(workdir / "share-tokens"), "--sessions-per-caller", "1"]
    door = _start(workdir, "127.0.0.1:0", *extra, connect="127.0.0.1")
    try:
        first = door.post(token=ALICE).headers["mcp-session-id"]
        second = door.post(token=ALICE).headers["mcp-session-id"]
        ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})

        def in_session(session: str) -> int:
            headers = {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "authorization": f"Bearer {ALICE}",
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25",
            }
            return httpx2.post(door.endpoint(), headers=headers, content=ping, timeout=20).status_code

        assert in_session(second) == 200
        assert in_session(first) == 404  # her share is one session: opening the second ended the first
    finally:
        door.stop()


def test_session_options_apply_to_http_only(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolcode.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["serve", "--config", str(workdir / "mcp.json"), "--sessions-per-caller", "3"])
    assert exited.value.code == 2
    assert "apply to --http only" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["file", "env"])
def test_short_token_is_a_configuration_error_that_does_not_echo_it(
    refused: dict[str, subprocess.CompletedProcess[str]], where: str
) -> None:
    proc = refused[f"weak {where}"]
    assert proc.returncode == 3, proc.stderr
    err = " ".join(proc.stderr.split())
    assert "at least 16" in err, err
    assert ("line 2" if where == "file" else "TOOLCODE_HTTP_TOKENS") in err, err
    assert WEAK not in proc.stderr and ALICE not in proc.stderr


def test_missing_token_file_is_a_configuration_error(refused: dict[str, subprocess.CompletedProcess[str]]) -> None:
    proc = refused["no file"]
    assert proc.returncode == 3, proc.stderr
    assert "no-such-file" in proc.stderr


@pytest.mark.anyio
async def test_library_serve_http_refuses_non_loopback_without_tokens() -> None:
    from toolcode import Toolbox
    from toolcode.exceptions import ConfigurationError
    from toolcode.server import serve_http

    box = Toolbox()
    try:
        for host in ("0.0.0.0", "", "::", "192.0.2.7", "myhost.lan", "::ffff:127.0.0.1"):
            with pytest.raises(ConfigurationError, match="without authentication"):
                await serve_http(box, host, 0)
        with pytest.raises(ConfigurationError, match="65535"):
            await serve_http(box, "127.0.0.1", 70000)
    finally:
        await box.aclose()


# ------------------------------------------------------------------------------ every interface, with tokens


def test_public_bind_warns_about_the_address_and_tls(public: Door) -> None:
    assert public.url.startswith("http://0.0.0.0:")
    warning = next(ln for ln in public.lines if "non-loopback" in ln)
    assert f"0.0.0.0:{public.port}" in warning
    assert "TLS" in warning and "reverse proxy" in warning
    assert ALICE not in public.output and UNNAMED not in public.output


def test_public_without_or_with_a_wrong_token_is_401(public: Door) -> None:
    missing = public.post()
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert "mcp-session-id" not in missing.headers
    wrong = public.post(token=secrets.token_urlsafe(32))
    assert wrong.status_code == 401
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    assert public.post(token=ALICE[:-1]).status_code == 401  # a prefix is not the token
    assert public.post(authorization=f"Basic {ALICE}").status_code == 401  # only the Bearer scheme
    # Every path is behind the guard, not only the MCP endpoint.
    assert public.post(path="/").status_code == 401
    assert public.post(path="/.well-known/oauth-protected-resource").status_code == 401


def test_public_forged_host_and_foreign_origin_are_refused_even_with_a_token(public: Door) -> None:
    forged = public.post(token=ALICE, host=f"attacker.example:{public.port}")
    assert forged.status_code == 421 and "Host" in forged.text
    assert public.post(token=ALICE, host="localhost.attacker.example").status_code == 421
    evil = public.post(token=ALICE, origin="http://attacker.example")
    assert evil.status_code == 403 and "Origin" in evil.text
    assert public.post(token=ALICE, origin=f"http://attacker.example:{public.port}").status_code == 403
    # The same host as the request's Host is fine, and so is any IP address of this machine at the port.
    same = public.post(token=ALICE, origin=f"http://127.0.0.1:{public.port}")
    assert same.status_code == 200, same.text
    assert public.post(token=ALICE, host=f"[::1]:{public.port}").status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_public_right_token_runs_code(public: Door, mode: str) -> None:
    assert await _call_time(public, mode, {"Authorization": f"Bearer {ALICE}"}) == "UTC"
    assert await _call_time(public, mode, {"Authorization": f"bearer {UNNAMED}"}) == "UTC"  # scheme is case-blind


# ------------------------------------------------------------------------------ loopback aliases, no token


@pytest.fixture(scope="module", params=["[::1]:0", "127.0.0.2:0"])
def alias(request: pytest.FixtureRequest, workdir: Path) -> Iterator[Door]:
    http = str(request.param)
    door = _start(workdir, http, connect=http.rsplit(":", 1)[0])
    yield door
    door.stop()


def test_loopback_alias_serves_without_token_and_checks_host_and_origin(alias: Door) -> None:
    assert "non-loopback" not in alias.output
    assert alias.post().status_code == 200
    assert alias.post(host=f"localhost:{alias.port}").status_code == 200
    assert alias.post(host=f"127.0.0.1:{alias.port}").status_code == 200
    assert alias.post(host=f"attacker.example:{alias.port}").status_code == 421  # DNS rebinding
    assert alias.post(host=f"{alias.connect}:{alias.port + 1}").status_code == 421  # another port
    assert alias.post(origin="http://attacker.example").status_code == 403
    assert alias.post(origin=f"http://{alias.connect}:{alias.port}").status_code == 200


@pytest.mark.anyio
async def test_loopback_alias_runs_code(alias: Door) -> None:
    assert await _call_time(alias, "auto", {}) == "UTC"


# ------------------------------------------------------------------------------ behind a reverse proxy


@pytest.fixture(scope="module")
def proxied(workdir: Path) -> Iterator[Door]:
    """Loopback with tokens from a file and the environment, a public name and one extra origin."""
    _write_private(workdir / "proxied-tokens", f"alice:{ALICE}\n")
    extra = [
        "--token-file",
        str(workdir / "proxied-tokens"),
        "--allow-host",
        "mcp.example.com",
        "--allow-origin",
        "https://app.example.com",
    ]
    door = _start(workdir, "127.0.0.1:0", *extra, env=_env(TOOLCODE_HTTP_TOKENS=f"bob:{BOB}"), connect="127.0.0.1")
    yield door
    door.stop()


def test_tokens_are_enforced_on_loopback_too(proxied: Door) -> None:
    assert "non-loopback" not in proxied.output
    assert proxied.post().status_code == 401
    assert proxied.post(token=ALICE).status_code == 200
    assert proxied.post(token=BOB).status_code == 200  # from TOOLCODE_HTTP_TOKENS


def test_allowed_host_and_origin(proxied: Door) -> None:
    # What a TLS-terminating proxy forwards: the public name, and a browser's https origin of that name.
    assert proxied.post(token=ALICE, host="mcp.example.com").status_code == 200
    assert proxied.post(token=ALICE, host="mcp.example.com", origin="https://mcp.example.com").status_code == 200
    assert proxied.post(token=ALICE, origin="https://app.example.com").status_code == 200
    assert proxied.post(token=ALICE, origin="https://evil.example.com").status_code == 403
    assert proxied.post(token=ALICE, host="evil.example.com").status_code == 421


@pytest.mark.anyio
async def test_mcp_client_through_the_public_name(proxied: Door) -> None:
    headers = {"Authorization": f"Bearer {BOB}", "Host": "mcp.example.com"}
    assert await _call_time(proxied, "legacy", headers) == "UTC"


def test_token_file_rotation_without_restart(proxied: Door, workdir: Path) -> None:
    path = workdir / "proxied-tokens"
    try:
        _write_private(path, f"carol:{CAROL}\n")
        assert proxied.post(token=CAROL).status_code == 200
        assert proxied.post(token=ALICE).status_code == 401  # revoked
        _write_private(path, "carol:xyzzyweak\n")  # broken: the file's tokens are refused until it is fixed
        assert proxied.post(token=CAROL).status_code == 401
        assert proxied.post(token=BOB).status_code == 200  # the environment's token is unaffected
        assert "at least 16" in proxied.wait_for("http.token_file_unusable").string
        assert CAROL not in proxied.output and "xyzzyweak" not in proxied.output
    finally:
        _write_private(path, f"alice:{ALICE}\n")
    assert proxied.post(token=ALICE).status_code == 200


# ------------------------------------------------------------------------------ the caller's identity

_WHO = """
import sys
import anyio
import mcp_types as types
import uvicorn
from mcp.server import Server
from toolcode.server import BearerTokens, HTTPGuard, http_caller


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="whoami", input_schema={"type": "object"})])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text=str(http_caller(ctx)))])


async def main() -> None:
    port = int(sys.argv[2])
    app = Server("who", on_list_tools=list_tools, on_call_tool=call_tool).streamable_http_app()
    guarded = HTTPGuard(app, host="127.0.0.1", port=port, tokens=BearerTokens(file=sys.argv[1]))
    await uvicorn.Server(uvicorn.Config(guarded, host="127.0.0.1", port=port, log_level="info")).serve()


anyio.run(main)
"""


@pytest.mark.anyio
async def test_handlers_see_the_token_name_as_caller(workdir: Path, tmp_path: Path) -> None:
    script = tmp_path / "who.py"
    script.write_text(_WHO)
    server = start_http_server(
        [sys.executable, str(script), str(workdir / "tokens"), "{port}"], ready="Uvicorn running", timeout=60
    )
    try:
        seen: dict[tuple[str, str], str] = {}
        for mode in ("auto", "legacy"):
            for token in (ALICE, UNNAMED):
                async with (
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
                    Client(streamable_http_client(server.url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
                ):
                    res = await client.call_tool("whoami", {})
                    seen[mode, token] = res.content[0].text  # type: ignore[union-attr]
        unnamed_id = seen["auto", UNNAMED]
        assert re.fullmatch(r"token-[0-9a-f]{12}", unnamed_id), unnamed_id
        assert seen == {
            ("auto", ALICE): "alice",
            ("legacy", ALICE): "alice",
            ("auto", UNNAMED): unnamed_id,
            ("legacy", UNNAMED): unnamed_id,
        }
    finally:
        server.stop()


# ------------------------------------------------------------------------------ the rules, value by value


async def _app(scope: object, receive: object, send: object) -> None:  # never reached by these checks
    raise AssertionError("not called")


@pytest.mark.parametrize(
    ("bind", "host", "allowed"),
    [
        ("127.0.0.1", "127.0.0.1:8808", True),
        ("127.0.0.1", "LOCALHOST:8808", True),
        ("127.0.0.1", "localhost.:8808", True),
        ("127.0.0.1", "[0:0::1]:8808", True),  # ::1 written differently
        ("127.0.0.1", "127.0.0.1:8809", False),
        ("127.0.0.1", "127.0.0.1", False),  # port 80 implied
        ("127.0.0.1", "attacker.example:8808", False),
        ("127.0.0.1", "localhost:8808@attacker.example", False),
        ("127.0.0.1", "", False),
        ("::1", "[::1]:8808", True),
        ("::1", "::1:8808", False),  # IPv6 without brackets is not a Host
        ("0.0.0.0", "192.0.2.7:8808", True),  # any IP literal on a wildcard bind
        ("0.0.0.0", "[2001:db8::1]:8808", True),
        ("0.0.0.0", "192.0.2.7:9999", False),
        ("0.0.0.0", "myhost.lan:8808", False),  # names need --allow-host
        ("192.0.2.7", "192.0.2.8:8808", False),  # a specific bind: only its own address
        ("127.0.0.1", "mcp.example.com", True),  # --allow-host mcp.example.com: any port or none
        ("127.0.0.1", "mcp.example.com:443", True),
        ("127.0.0.1", "proxy.example.com:8443", True),  # --allow-host proxy.example.com:8443
        ("127.0.0.1", "proxy.example.com", False),
    ],
)
def test_host_rules(bind: str, host: str, allowed: bool) -> None:
    from toolcode.server import HTTPGuard

    guard = HTTPGuard(_app, host=bind, port=8808, allowed_hosts=["mcp.example.com", "Proxy.Example.com:8443"])
    assert guard.host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("origin", "host", "allowed"),
    [
        ("http://127.0.0.1:8808", "127.0.0.1:8808", True),
        ("https://mcp.example.com", "mcp.example.com", True),
        ("https://mcp.example.com:443", "mcp.example.com", True),
        ("http://mcp.example.com:8443", "mcp.example.com", False),
        ("http://localhost:8808", "127.0.0.1:8808", False),  # another name is another origin
        ("https://app.example.com", "127.0.0.1:8808", True),  # --allow-origin
        ("HTTPS://APP.example.com:443", "127.0.0.1:8808", True),
        ("https://app.example.com.attacker.example", "127.0.0.1:8808", False),
        ("null", "127.0.0.1:8808", False),
        ("http://127.0.0.1:8808/path", "127.0.0.1:8808", False),
    ],
)
def test_origin_rules(origin: str, host: str, allowed: bool) -> None:
    from toolcode.server import HTTPGuard

    guard = HTTPGuard(_app, host="127.0.0.1", port=8808, allowed_origins=["https://app.example.com"])
    assert guard.origin_allowed(origin, host) is allowed


# ------------------------------------------------------------------------------ a session is its caller's


def test_a_session_answers_only_the_token_that_opened_it(public: Door) -> None:
    # Another valid token holding a session's id (a leak) used it, ended it, and answered the
    # approval questions asked in it, which were then logged as the session's caller's.
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

    def send(token: str, sid: str | None, body: str | None, method: str = "POST") -> httpx2.Response:
        headers = {**base, "authorization": f"Bearer {token}", "mcp-protocol-version": "2025-11-25"}
        if sid is not None:
            headers["mcp-session-id"] = sid
        return httpx2.request(method, public.endpoint(), headers=headers, content=body, timeout=20)

    opened = send(ALICE, None, INITIALIZE)
    assert opened.status_code == 200, opened.text
    sid = opened.headers["mcp-session-id"]
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    answer = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"decision": "approve"}}})
    assert send(UNNAMED, sid, ping).status_code == 404
    assert send(UNNAMED, sid, answer).status_code == 404
    assert send(UNNAMED, sid, None, "DELETE").status_code == 404
    assert send(ALICE, sid, ping).status_code == 200  # still hers, still open
    assert send(ALICE, sid, None, "DELETE").status_code in (200, 204)
    assert send(ALICE, sid, ping).status_code == 404  # ended
    assert send(UNNAMED, "f" * 32, ping).status_code == 404  # a session nobody opened


@pytest.mark.anyio
async def test_no_caller_pushes_another_callers_sessions_out() -> None:
    # The guard kept every session id the server named, errors included (the SDK names a new one on
    # a refused request and drops it), in one list for all callers: another token's cheap bad
    # requests pushed a caller's live session out. The sessions it forgets, it ends in the server.
    import itertools

    from toolcode.server import BearerTokens, HTTPGuard

    ids = itertools.count()
    ended: set[bytes] = set()

    async def app(scope: Any, receive: Any, send: Any) -> None:  # the SDK's answers, in short
        named = [v for k, v in scope["headers"] if k == b"mcp-session-id"]
        ok = bool(named) or scope["headers"][-1] == (b"x-initialize", b"1")
        headers = [] if named else [(b"mcp-session-id", f"s{next(ids)}".encode())]
        status = 404 if named and named[0] in ended else 200 if ok else 400  # the server's idle timeout
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def call(token: str, sid: str | None = None, initialize: bool = False) -> tuple[int, str | None]:
        headers = [(b"host", b"127.0.0.1:8808"), (b"authorization", f"Bearer {token}".encode())]
        if sid is not None:
            headers.append((b"mcp-session-id", sid.encode()))
        if initialize:
            headers.append((b"x-initialize", b"1"))
        got: dict[str, Any] = {}

        async def send(message: Any) -> None:
            if message["type"] == "http.response.start":
                got["status"], got["headers"] = message["status"], dict(message.get("headers") or [])

        async def receive() -> Any:
            return {"type": "http.request", "body": b""}

        await guard({"type": "http", "method": "POST", "path": "/mcp", "headers": headers}, receive, send)
        sid_out = got["headers"].get(b"mcp-session-id")
        return got["status"], sid_out.decode() if sid_out else None

    async def end(sid: str) -> None:
        ended.add(sid.encode())

    tokens = BearerTokens({"alice": ALICE, "bob": BOB})
    guard = HTTPGuard(
        app, host="127.0.0.1", port=8808, tokens=tokens, end_session=end, sessions_per_caller=5, max_sessions=50
    )
    _, sid = await call(ALICE, initialize=True)
    assert sid is not None and (await call(ALICE, sid))[0] == 200
    for _ in range(60):
        await call(BOB)  # refused by the server: no session anyone holds
    for _ in range(60):
        await call(BOB, initialize=True)  # sessions of bob's own: only his oldest make room
    assert (await call(ALICE, sid))[0] == 200  # alice's session is still hers
    assert len(ended) == 55  # bob's oldest, ended in the server as the guard forgot them
    ended.add(sid.encode())  # the server ends it: the guard forgets it too
    assert (await call(ALICE, sid))[0] == 404
    assert sid not in guard._sessions  # pyright: ignore[reportPrivateUsage]
