"""Cross-package checks: public API, error roots, typing markers and the layering rule."""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import sys

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
    ("name", "withs"),
    [
        ("toolindex", ["toolindex"]),
        ("tooldocs", ["toolindex", "tooldocs"]),
    ],
)
def test_package_installs_and_imports_on_its_own(name: str, withs: list[str], tmp_path: pathlib.Path) -> None:
    import shutil
    import subprocess

    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (the README assumes `pip install uv`)")
    cmd = [uv, "run", "--isolated", "--no-project", "--quiet"]
    for w in withs:
        cmd += ["--with", str(ROOT / "packages" / w)]
    probe = f"import sys, {name}; print({name}.__name__, 'mcp' in sys.modules)"
    proc = subprocess.run([*cmd, "python", "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [name, "False"]
