"""The `toolcode` command line: help, exit codes, JSON output, the demo catalog."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolcode._settings import DEFAULT_TOOLS
from toolcode.cli import EXIT_CODES, main

SUBCOMMANDS = [
    "demo", "serve", "exec", "resume", "paused", "audit", "search", "describe", "tools", "namespaces", "run", "chain",
    "report",
]  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", [None, *SUBCOMMANDS])
def test_help_everywhere_lists_exit_codes(capsys: pytest.CaptureFixture[str], command: str | None) -> None:
    argv = ["--help"] if command is None else [command, "--help"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out
    for code in EXIT_CODES:
        assert f"  {code} " in out
    if command is None:
        for sub in SUBCOMMANDS:
            assert sub in out


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys)
    assert code == 2
    assert "usage: toolcode" in out


def test_exec_json_value_stdout_and_trace(capsys: pytest.CaptureFixture[str]) -> None:
    snippet = (
        'offices = run_tool("helpdesk:list_offices", {})\n'
        "println(len(offices))\n"
        '__out = sorted(o["city"] for o in offices)[:2]'
    )
    code, out, _ = run(capsys, "exec", "--demo", "--json", "-c", snippet)
    assert code == 0
    doc = json.loads(out)
    assert doc["ok"] is True
    assert doc["value"] == ["Nairobi", "New York"]
    assert doc["stdout"] == "6\n"
    assert doc["calls"] == {"count": 1, "failed": 0, "failures": []} and "trace" not in doc
    code, out, _ = run(capsys, "exec", "--demo", "--json", "--trace", "full", "-c", snippet)
    assert [c["tool_id"] for c in json.loads(out)["trace"]] == ["helpdesk:list_offices"]


def test_exec_reads_file_and_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "snippet.py"
    f.write_text('__out = input["a"] * 2')
    code, out, _ = run(capsys, "exec", str(f), "--input", '{"a": 21}', "--json")
    assert code == 0
    assert json.loads(out)["value"] == 42


def test_exec_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("__out = sum(range(5))"))
    code, out, _ = run(capsys, "exec", "--json")
    assert code == 0
    assert json.loads(out)["value"] == 10


def test_exec_output_has_value_stdout_and_trace_table(capsys: pytest.CaptureFixture[str]) -> None:
    snippet = 'println("hi")\nrun_tool("helpdesk:on_call", {"office": "Paris"})\n7'
    code, out, err = run(capsys, "exec", "--demo", "--trace", "full", "-c", snippet)
    assert code == 0
    assert out == "7\nhi\n"  # not a terminal: the value's JSON, then what the snippet printed
    assert "helpdesk:on_call" in err and "trace (1 call)" in err and "1 tool call," in err


@pytest.mark.parametrize(
    ("snippet", "extra", "expected"),
    [
        ("x = (", [], 1),  # syntax error
        ("1 / 0", [], 1),  # runtime error
        ('run_tool("helpdesk:list_tickets", {"office": "Atlantis"})', ["--demo"], 1),  # uncaught tool failure
        ("while True:\n    pass", ["--timeout", "1"], 4),  # limit
        (
            'for c in ["Paris", "Tokyo", "Sydney"]:\n    run_tool("helpdesk:on_call", {"office": c})',
            ["--demo", "--max-tool-calls", "2"],
            4,
        ),
    ],
)
def test_exec_failures_map_to_documented_exit_codes(
    capsys: pytest.CaptureFixture[str], snippet: str, extra: list[str], expected: int
) -> None:
    code, _, err = run(capsys, "exec", "-c", snippet, *extra)
    assert code == expected
    assert "error [" in err


def test_exec_failure_json_carries_error_and_partial_trace(capsys: pytest.CaptureFixture[str]) -> None:
    snippet = 'run_tool("helpdesk:list_offices", {})\nrun_tool("helpdesk:list_tickts", {"office": "Paris"})'
    code, out, _ = run(capsys, "exec", "--demo", "--json", "--trace", "full", "--no-type-check", "-c", snippet)
    assert code == 1
    doc = json.loads(out)
    assert doc["ok"] is False and doc["value"] is None
    err = doc["error"]
    assert set(err) == {"code", "message", "line", "column", "tool_id", "hint", "diagnostics"}
    assert err["diagnostics"] is None
    assert err["code"] == "unknown_tool" and err["tool_id"] == "helpdesk:list_tickts" and err["line"] == 2
    assert "helpdesk:list_tickets" in err["hint"]  # nearest name suggested
    assert [c["tool_id"] for c in doc["trace"]][:1] == ["helpdesk:list_offices"]
    assert doc["calls"]["count"] == 2 and doc["calls"]["failed"] == 1


def test_exec_type_error_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    # The same snippet, checked (the default): the misspelt id is found before the first call.
    snippet = 'run_tool("helpdesk:list_offices", {})\nrun_tool("helpdesk:list_tickts", {"office": "Paris"})'
    code, out, _ = run(capsys, "exec", "--demo", "--json", "--trace", "full", "-c", snippet)
    assert code == 1
    doc = json.loads(out)
    err = doc["error"]
    assert err["code"] == "type_error" and (err["line"], err["column"]) == (2, 10)
    [diag] = err["diagnostics"]
    assert (diag["line"], diag["column"]) == (2, 10)
    assert diag["message"].startswith("unknown tool 'helpdesk:list_tickts'; nearest tools: helpdesk:list_tickets")
    assert diag["code"] == "unknown_tool"  # what the run would have failed with
    assert doc["calls"]["count"] == 0 and doc["trace"] == []


def test_bad_input_json_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["exec", "-c", "1", "--input", "{nope"])
    assert exc.value.code == 2
    assert "--input" in capsys.readouterr().err


def test_missing_config_file_is_a_configuration_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "tools", "--config", str(tmp_path / "nope.json"))
    assert code == 3
    assert "nope.json" in err.replace("\n", "")  # the terminal may wrap a long path


def test_invalid_config_names_the_server(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"broken": {"args": ["x"]}}}))
    code, _, err = run(capsys, "namespaces", "--config", str(cfg))
    assert code == 3
    assert "broken" in err


def test_catalog_commands_without_config_explain(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLCODE_CONFIG", raising=False)
    code, _, err = run(capsys, "search", "tickets")
    assert code == 3
    assert "--config" in err


def test_search_describe_tools_namespaces_on_demo_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", "--demo", "--json", "open help-desk tickets of an office")
    assert code == 0
    assert json.loads(out)["hits"][0]["id"] == "helpdesk:list_tickets"

    code, out, _ = run(capsys, "describe", "--demo", "helpdesk:list_tickets")
    assert code == 0
    assert "def list_tickets" in out and "office: str" in out

    code, out, _ = run(capsys, "describe", "--demo", "helpdesk:list_tickets", "--level", "summary", "--json")
    assert code == 0
    assert json.loads(out)["docs"][0]["id"] == "helpdesk:list_tickets"

    code, out, _ = run(capsys, "tools", "--demo", "--json")
    assert code == 0
    ids = {t["id"] for t in json.loads(out)["tools"]}
    assert {"helpdesk:list_offices", "time:get_current_time", "time:convert_time"} <= ids

    code, out, _ = run(capsys, "namespaces", "--demo", "--json")
    assert code == 0
    assert {n["name"]: n["tool_count"] for n in json.loads(out)["namespaces"]} == {"helpdesk": 4, "time": 2}

    code, _, err = run(capsys, "describe", "--demo", "helpdesk:list_tikets")
    assert code == 1
    assert "unknown_tool" in err and "helpdesk:list_tickets" in err


def test_report_counts_definitions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "report", "--demo", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["encoding"] == "cl100k_base"
    assert doc["direct"]["tools"] == 6
    assert doc["codemode"]["tools"] == len(DEFAULT_TOOLS)
    assert doc["direct"]["tokens"] == sum(n["tokens"] for n in doc["namespaces"])
    assert doc["codemode"]["tokens"] > 200


def test_demo_json_runs_the_loop_and_compares_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "demo", "--json")
    assert code == 0
    doc = json.loads(out)
    assert len(doc["value"]) == 6
    assert {r["office"] for r in doc["value"]} == {"Paris", "New York", "Tokyo", "Sydney", "Sao Paulo", "Nairobi"}
    assert doc["tool_calls"] == 13  # 1 list_offices + 6 x (get_current_time + list_tickets)
    assert doc["progress_notifications"] == 27  # each call as it starts and as it ends, and the printed line
    tokens = doc["tokens"]
    assert tokens["codemode"]["total"] < tokens["direct"]["total"]
    assert tokens["direct"]["tool_calls"] == 13 and tokens["codemode"]["tool_calls"] == 3


def test_console_script_demo_runs_as_a_person_sees_it() -> None:
    exe = Path(sys.executable).with_name("toolcode")
    done = subprocess.run([str(exe), "demo"], capture_output=True, text=True, timeout=300)  # a hang bound
    assert done.returncode == 0, done.stderr
    for step in ("search_tools", "describe_tool", "execute_code", "trace (13 calls)", "context tokens"):
        assert step in done.stdout


def test_unreachable_server_is_reported_and_strict_fails_with_5(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cfg = tmp_path / "mcp.json"
    servers = {
        "nope": {"command": str(tmp_path / "no-such-server")},
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
    }
    cfg.write_text(json.dumps({"mcpServers": servers}))
    code, out, _ = run(capsys, "namespaces", "--config", str(cfg), "--json")
    assert code == 0
    doc = json.loads(out)
    assert [(n["name"], n["tool_count"]) for n in doc["namespaces"]] == [("nope", 0), ("time", 2)]
    assert "no-such-server" in doc["namespaces"][0]["unavailable"] and doc["namespaces"][1]["unavailable"] is None
    code, out, _ = run(capsys, "namespaces", "--config", str(cfg))
    assert code == 0 and "unavailable: cannot start" in out
    code, _, err = run(capsys, "namespaces", "--config", str(cfg), "--strict")
    assert code == 5
    assert "nope" in err


@pytest.mark.parametrize(
    "snippet", ['__out = run_tool("nope:x", {})', "from tools import nope\n__out = nope.x()"], ids=["id", "module"]
)
def test_exec_calling_a_server_that_failed_to_start_says_so_and_exits_5(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, snippet: str
) -> None:
    cfg = tmp_path / "mcp.json"
    servers = {
        "nope": {"command": str(tmp_path / "no-such-server")},
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
    }
    cfg.write_text(json.dumps({"mcpServers": servers}))
    code, out, _ = run(capsys, "exec", "--config", str(cfg), "--no-state", "--json", "-c", snippet)
    assert code == 5
    error = json.loads(out)["error"]
    assert error["code"] == "server_unavailable"
    assert "server 'nope' is unavailable" in error["message"] and "command not found" in error["message"]
    code, _, err = run(capsys, "exec", "--config", str(cfg), "--no-state", "-c", snippet)
    assert code == 5 and "server_unavailable" in err and "server 'nope' is unavailable" in err


def test_any_json_value_is_an_input(capsys: pytest.CaptureFixture[str]) -> None:
    snippet = "input[0] + input[1] if isinstance(input, list) else input * 2"
    for text, expected in (("[1, 2]", 3), ('"ab"', "abab"), ("3.5", 7.0)):
        code, out, _ = run(capsys, "exec", "--json", "--input", text, "-c", snippet)
        assert code == 0 and json.loads(out)["value"] == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "tickets", "--demo", "--limit", "0"],
        ["search", "tickets", "--demo", "--limit", "51"],
        ["tools", "--demo", "--limit", "0"],
        ["exec", "-c", "1", "--timeout", "-1"],
        ["exec", "-c", "1", "--max-tool-calls", "-3"],
    ],
)
def test_out_of_range_values_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    assert "invalid_arguments" in err and err.count("\n") <= 4


@pytest.mark.parametrize(
    ("argv", "abbreviation"),
    [
        (["serve", "--http", ":0", "--token", "abc123"], "--token"),  # not --token-file: no token on a command line
        (["exec", "-c", "1", "--js"], "--js"),
        (["search", "tickets", "--dem"], "--dem"),
    ],
)
def test_an_abbreviated_option_is_refused_not_completed(
    capsys: pytest.CaptureFixture[str], argv: list[str], abbreviation: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert f"unrecognized arguments: {abbreviation}" in capsys.readouterr().err


def test_a_code_file_that_is_not_utf8_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "latin1.py"
    f.write_bytes("__out = 'café'".encode("latin-1"))
    with pytest.raises(SystemExit) as exc:
        main(["exec", str(f)])
    assert exc.value.code == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_the_unsandboxed_engine_is_loud(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "exec", "--engine", "inprocess", "--json", "-c", "6 * 7")
    assert code == 0 and json.loads(out)["value"] == 42
    assert "WITHOUT a sandbox" in err
    code, _, err = run(capsys, "exec", "--json", "-c", "6 * 7")
    assert code == 0 and "sandbox" not in err


def test_upstream_text_cannot_drive_the_terminal() -> None:
    from toolcode._cli._render import safe

    hostile = "ok\x1b[2J\x1b]8;;http://evil\x07link\x1b]8;;\x07 [/] [link=x]y\u202eevil\x07\r\n"
    cleaned = safe(hostile)
    assert "\x1b" not in cleaned and "\x07" not in cleaned and "\u202e" not in cleaned and "\r" not in cleaned
    assert "[/]" in cleaned and "link" in cleaned and cleaned.endswith("\n")


def _toolcode(
    *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script as a shell runs it, its output piped."""
    exe = Path(sys.executable).with_name("toolcode")
    return subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


_WIDE_AND_LONG = '__out = {"wide": "x" * 300, "rows": list(range(400))}'


def test_piped_exec_prints_the_whole_value_as_json() -> None:
    done = _toolcode("exec", "-c", _WIDE_AND_LONG)
    assert done.returncode == 0, done.stderr
    # Nothing cropped at any width, no frame: the value is its JSON, whole.
    assert json.loads(done.stdout) == {"wide": "x" * 300, "rows": list(range(400))}
    printed = _toolcode("exec", "-c", 'println("y" * 250)\n__out = 1')
    assert printed.stdout == "1\n" + "y" * 250 + "\n"


def _on_a_terminal(*argv: str, columns: int = 60) -> str:
    """What the console script writes to a terminal (a pseudo-terminal ``columns`` wide), colours removed."""
    import os
    import pty
    import re

    main_fd, child_fd = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "40", "TERM": "xterm"}
    exe = Path(sys.executable).with_name("toolcode")
    proc = subprocess.Popen([str(exe), *argv], stdin=subprocess.DEVNULL, stdout=child_fd, stderr=child_fd, env=env)
    os.close(child_fd)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal (EIO)
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main_fd)
    assert proc.wait(timeout=120) == 0
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))


def test_on_a_terminal_a_value_wraps_and_is_cut_only_with_a_marker_saying_how_to_see_it_all() -> None:
    from toolcode._cli._render import TERMINAL_LINES

    shown = _on_a_terminal("exec", "-c", _WIDE_AND_LONG)
    assert shown.count("x") == 300  # the wide string wraps inside the panel: nothing is cropped
    left = 1 + 400 + 4 - TERMINAL_LINES  # the JSON has 405 lines (braces, keys, one per row)
    assert (
        f"… {left:,} more lines of value not shown: add --json, or pipe the output (| less), to see all of it" in shown
    )
    short = _on_a_terminal("exec", "-c", '__out = "z" * 150')
    assert short.count("z") == 150 and "not shown" not in short


def test_a_tools_invalid_arguments_inside_a_snippet_exit_1_and_the_commands_own_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    snippet = 'x = 1\nrun_tool("helpdesk:list_tickets", {"bogus": 1})'
    code, _, err = run(capsys, "exec", "--demo", "--no-type-check", "-c", snippet)
    assert code == 1 and "error [invalid_arguments] at line 2" in err
    code, _, _ = run(capsys, "run", "helpdesk:list_tickets", "--demo", "--args", '{"bogus": 1}')
    assert code == 2  # the command's own --args
    code, _, _ = run(capsys, "exec", "-c", "1", "--timeout", "-1")
    assert code == 2


def test_the_resume_hint_is_a_command_that_works_as_pasted(tmp_path: Path) -> None:
    import os
    import shlex

    config = tmp_path / "mcp.json"
    servers = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}}
    policy = {"rules": [{"tools": "time:*", "decision": "ask"}]}
    config.write_text(json.dumps({"mcpServers": servers, "toolcode": {"policy": policy}}))
    snippet = 'now = run_tool("time:get_current_time", {"timezone": "Asia/Tokyo"})\n__out = now["timezone"]'
    # As a person runs it: `toolcode` on PATH, not under `uv run`, no state folder in the environment.
    env = {k: v for k, v in os.environ.items() if k not in ("UV_RUN_RECURSION_DEPTH", "TOOLCODE_STATE_DIR")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    argv = ("exec", "--config", "mcp.json", "--state-dir", "my state", "-c", snippet)
    paused = _toolcode(*argv, env=env, cwd=tmp_path)
    assert paused.returncode == 6, paused.stderr
    hint = next(line for line in paused.stderr.splitlines() if line.startswith("continue with: "))
    command = shlex.split(hint.removeprefix("continue with: "))
    assert command[:2] == ["toolcode", "resume"] and command[3:] == [
        "approve", "--config", "mcp.json", "--state-dir", "my state"
    ]  # fmt: skip
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == "Asia/Tokyo"
    # Under `uv run`, the hint says so; with --no-state nothing is kept to resume, and the hint says that instead.
    under_uv = _toolcode(*argv, env={**env, "UV_RUN_RECURSION_DEPTH": "1"}, cwd=tmp_path)
    assert "continue with: uv run toolcode resume " in under_uv.stderr
    gone = _toolcode("exec", "--config", "mcp.json", "--no-state", "-c", snippet, env=env, cwd=tmp_path)
    assert gone.returncode == 6 and "continue with" not in gone.stderr
    assert "--no-state keeps no paused run after this command" in gone.stderr


def test_a_paused_exec_names_its_console_page_when_the_console_is_on(tmp_path: Path) -> None:
    servers = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}}
    section = {"policy": {"rules": [{"tools": "time:*", "decision": "ask"}]}, "console": {"url": "https://ops.test"}}
    snippet = 'run_tool("time:get_current_time", {"timezone": "UTC"})'
    for enabled in (False, True):
        config = {"mcpServers": servers, "toolcode": {**section, "console": {**section["console"], "enabled": enabled}}}
        (tmp_path / "mcp.json").write_text(json.dumps(config))
        paused = _toolcode("exec", "--config", "mcp.json", "--state-dir", "state", "-c", snippet, cwd=tmp_path)
        assert paused.returncode == 6, paused.stderr
        links = [line for line in paused.stderr.splitlines() if "https://ops.test/console/runs/" in line]
        assert len(links) == enabled, paused.stderr
    assert links[0].startswith("or decide in the console: https://ops.test/console/runs/")


def test_the_next_page_hint_is_a_command_that_works_as_pasted(capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    code, out, _ = run(capsys, "tools", "--demo", "--limit", "2")
    assert code == 0
    hint = next(line for line in out.splitlines() if line.startswith("more: "))
    argv = shlex.split(hint.removeprefix("more: "))
    assert argv[argv.index("toolcode") + 1 :][:2] == ["tools", "--cursor"] and "--demo" in argv
    code, more, _ = run(capsys, *argv[argv.index("toolcode") + 1 :])
    assert code == 0 and "2 tools" in more


def test_every_command_reports_a_failure_as_one_json_document_with_json(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["snippets", "show", "nope"], ["describe", "helpdesk:nope"], ["result", "r-nope"]):
        code, out, _ = run(capsys, *argv, "--demo", "--no-state", "--json")
        doc = json.loads(out)
        assert code != 0 and doc["ok"] is False and doc["error"]["code"] in ("invalid_arguments", "unknown_tool"), argv


def test_the_terminal_asks_only_about_what_it_showed_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The prompt cut the arguments at 500 characters, unmarked, and offered approval of them whole.
    from toolcode._cli._common import ask_terminal
    from toolcode.models import PendingCallInfo

    def call(content: str) -> PendingCallInfo:
        args = {"content": content, "path": "/home/alice/.ssh/authorized_keys"}
        return PendingCallInfo(tool_id="fs:write_file", args=args, tier="write", reason="the preset asks about writes")

    answers = iter(["y"])
    monkeypatch.setattr("builtins.input", lambda: next(answers))
    assert ask_terminal([call("x" * 3_000)], 1, "run_tool('fs:write_file', content=c, path=where)") == "approve"
    shown = capsys.readouterr().err
    assert "authorized_keys" in shown and "x" * 3_000 in shown.replace("\n", "")
    assert "[y] approve once" in shown and "[l] leave paused" in shown  # the keys, not taken for markup
    answers = iter(["y", "r", "l"])  # approving is not offered: asked again until an offered answer
    assert ask_terminal([call("x" * 30_000)], None, "") is None
    shown = capsys.readouterr().err
    assert "too long to show here in full" in shown and "[y]" not in shown and "[n] deny" in shown
