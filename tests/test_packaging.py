"""Cross-package checks: public API, error roots, typing markers and the layering rule."""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import re
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ["toolindex", "tooldocs", "toolrun", "toolcode"]
ROOTS = {
    "toolindex": "ToolIndexError",
    "tooldocs": "ToolDocsError",
    "toolrun": "ToolRunError",
    "toolcode": "ToolCodeError",
}
# Which workspace packages each package may import (toolindex ← tooldocs ← toolrun ← toolcode).
ALLOWED = {
    "toolindex": set[str](),
    "tooldocs": {"toolindex"},
    "toolrun": {"toolindex", "tooldocs"},
    "toolcode": {"toolindex", "tooldocs", "toolrun"},
}


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    mod = importlib.import_module(name)
    exported = set(mod.__all__)
    assert len(exported) == len(mod.__all__), f"{name}.__all__ has duplicates"
    missing = [n for n in exported if not hasattr(mod, n)]
    assert not missing, f"{name}.__all__ names missing attributes: {missing}"
    public = {
        n
        for n, v in vars(mod).items()
        if not n.startswith("_") and not inspect.ismodule(v) and n not in {"annotations", "TYPE_CHECKING"}
    }
    assert public - exported == set(), f"{name} has public names not in __all__: {sorted(public - exported)}"


@pytest.mark.parametrize("name", PACKAGES)
def test_every_error_derives_from_the_package_root(name: str) -> None:
    exc_mod = importlib.import_module(f"{name}.exceptions")
    root = getattr(exc_mod, ROOTS[name])
    assert getattr(importlib.import_module(name), ROOTS[name]) is root
    assert exc_mod.__doc__ and ROOTS[name] in exc_mod.__doc__, "the module docstring draws the error tree"
    for obj in vars(exc_mod).values():
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == exc_mod.__name__:
            assert issubclass(obj, root), f"{obj.__qualname__} does not derive from {root.__name__}"
            assert obj.__name__ in exc_mod.__doc__ or obj.__name__.startswith("_"), (
                f"{obj.__name__} is missing from the error tree in {name}.exceptions' docstring"
            )


@pytest.mark.parametrize("name", PACKAGES)
def test_package_ships_py_typed_and_readme(name: str) -> None:
    pkg = ROOT / "packages" / name
    assert (pkg / "src" / name / "py.typed").is_file()
    assert (pkg / "README.md").read_text().strip().count("\n") >= 3, f"{name}/README.md is too thin"


@pytest.mark.parametrize("name", PACKAGES)
def test_layering_imports_point_one_way(name: str) -> None:
    src = ROOT / "packages" / name / "src" / name
    forbidden = set(PACKAGES) - ALLOWED[name] - {name}
    offenders: list[str] = []
    for path in src.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            mods: list[str] = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {m}" for m in mods if m.split(".")[0] in forbidden
            ]
    assert not offenders, "\n".join(offenders)


def test_toolindex_does_not_pull_in_mcp_or_toolrun() -> None:
    code = (
        "import sys, toolindex; "
        "print(sorted(m for m in ('mcp', 'toolrun', 'tooldocs', 'toolcode') if m in sys.modules))"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "withs", "absent"),
    [
        ("toolindex", ["toolindex"], ["mcp", "toolrun", "jsonschema_rs", "pydantic_monty"]),
        ("tooldocs", ["toolindex", "tooldocs"], ["mcp", "toolrun", "jsonschema_rs", "pydantic_monty"]),
        ("toolrun", ["toolindex", "toolrun"], ["tooldocs", "pydantic_monty", "rich", "tiktoken"]),
        ("toolcode", ["toolindex", "tooldocs", "toolrun", "toolcode"], ["rich", "tiktoken", "mcp_server_time"]),
    ],
)
def test_package_installs_and_imports_on_its_own(
    name: str, withs: list[str], absent: list[str], tmp_path: pathlib.Path
) -> None:
    import shutil
    import subprocess

    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (the README assumes `pip install uv`)")
    cmd = [uv, "run", "--isolated", "--no-project", "--quiet"]
    for w in withs:
        cmd += ["--with", str(ROOT / "packages" / w)]
    # Imports the package (for toolcode its server too, and its testing module, which reads the escape-probe
    # catalogue shipped as package data) and lists which unwanted modules are installed.
    extra = "import toolcode.server, toolcode.testing; assert toolcode.testing.PROBES; " if name == "toolcode" else ""
    probe = (
        f"import importlib.util, {name}; {extra}"
        f"print({name}.__name__, [m for m in {absent!r} if importlib.util.find_spec(m) is not None])"
    )
    proc = subprocess.run([*cmd, "python", "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == f"{name} []", proc.stdout
    if name == "toolcode":
        # The command needs the cli extra, and says so (configuration error, exit code 3).
        cli = subprocess.run([*cmd, "python", "-m", "toolcode.cli", "tools", "--demo"], capture_output=True, text=True)
        assert cli.returncode == 3 and "toolcode[cli]" in cli.stderr, cli.stderr[-2000:]


# Where a module's distribution is not the one a package declares, because the declared one
# pulls it in by design (pydantic-monty ships its bindings as pydantic-monty-client).
_DIST_ALIASES = {"pydantic-monty-client": "pydantic-monty"}
# Modules only the named extra's code paths import (the CLI renderer, token counts, the demo).
_EXTRA_MODULES = {
    "rich": "cli",
    "tiktoken": "tokens",
    "typing_extensions": "demo",
    "pytest": "testing",
    "redis": "redis",
    "opentelemetry": "otel",
    "yaml": "openapi",
    "referencing": "openapi",
    "orjson": "openapi",
    "pydantic_ai": "pydantic-ai",
    "safetensors": "semantic",
    "tokenizers": "semantic",
    "agents": "openai-agents",
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(name: str) -> tuple[set[str], dict[str, set[str]]]:
    data = tomllib.loads((ROOT / "packages" / name / "pyproject.toml").read_text())["project"]
    base = {_norm(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) for d in data.get("dependencies", [])}
    extras = {
        extra: {_norm(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) for d in deps}
        for extra, deps in data.get("optional-dependencies", {}).items()
    }
    return base, extras


def _third_party_imports(name: str) -> dict[str, set[str]]:
    """Top-level modules imported by the package's code, with the files importing each."""
    src = ROOT / "packages" / name / "src" / name
    found: dict[str, set[str]] = {}
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods = [node.module]
            else:
                continue
            for m in mods:
                top = m.split(".")[0]
                if top in sys.stdlib_module_names or top in PACKAGES or top == "__future__":
                    continue
                found.setdefault(top, set()).add(str(path.relative_to(src)))
    return found


@pytest.mark.parametrize("name", PACKAGES)
def test_declared_dependencies_match_the_imports(name: str) -> None:
    from importlib.metadata import packages_distributions

    dists = packages_distributions()
    base, extras = _declared(name)
    workspace = {_norm(p) for p in PACKAGES}
    imported_dists: set[str] = set()
    problems: list[str] = []
    for module, files in sorted(_third_party_imports(name).items()):
        owners = {_norm(_DIST_ALIASES.get(d, d)) for d in dists.get(module, [module])}
        imported_dists |= owners
        extra = _EXTRA_MODULES.get(module)
        if owners & base:
            continue
        if extra is not None and owners & extras.get(extra, set()):
            continue
        problems.append(f"{module} (imported by {sorted(files)[0]}) is not a declared dependency")
    unused = base - imported_dists - workspace
    problems += [f"{d} is declared but never imported" for d in sorted(unused)]
    imported_workspace: set[str] = set()
    for path in (ROOT / "packages" / name / "src" / name).rglob("*.py"):
        text = path.read_text()
        imported_workspace |= {p for p in PACKAGES if p != name and re.search(rf"^\s*(from|import) {p}\b", text, re.M)}
    unused_workspace = base & workspace - {_norm(p) for p in imported_workspace}
    problems += [f"{p} is declared but never imported" for p in sorted(unused_workspace)]
    assert not problems, "\n".join(problems)
