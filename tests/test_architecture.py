"""Architecture rules: a pure core, and thin edges."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest


def test_core_imports_no_web_or_search_stack():
    code = (
        "import sys, json; import webshop_gym.core.sim, webshop_gym.core.actions, webshop_gym.core.pages; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('flask', 'jinja2', 'pyserini', 'jnius', 'bs4', 'spacy', 'numba'))))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert loaded == []


def test_text_observations_never_parse_html(default_shop, monkeypatch):
    import bs4

    def refuse(*args, **kwargs):
        raise AssertionError("the text path parsed HTML")

    monkeypatch.setattr(bs4, "BeautifulSoup", refuse)
    from webshop_gym import WebShopEnv

    env = WebShopEnv(shop=default_shop, observation_mode="text_rich")
    obs, info = env.reset(options={"goal_index": 0})
    env.step("search[boots]")
    env.step(f"click[{env.engine.info(0)['available_actions']['clickables'][2]}]")


# ---------------------------------------------------------------------------------------------
# Layers (issue 21): import-linter's contracts in pyproject.toml, no module-level import circles,
# a small top level, and a docstring in every subpackage saying what it owns.

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "webshop_gym"


def test_import_linter_contracts_are_kept(tmp_path):
    pytest.importorskip("importlinter", reason="pip install import-linter (in the dev extra)")
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "broken" not in result.stdout.split("Contracts:")[-1].replace("0 broken", "")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_level_imports() -> dict[str, set[str]]:
    """Each module's imports of other webshop_gym modules, at module level (not inside functions)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            for target in targets:
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name and target.startswith("webshop_gym"):
                    deps.add(target)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_level_import_circles():
    graph = _module_level_imports()
    # a package's __init__ importing its own submodules (re-exports) is not a circle between modules
    graph = {m: {d for d in deps if not (d.startswith(m + ".") and PACKAGE.joinpath(*m.split(".")[1:]).is_dir())}
             for m, deps in graph.items()}
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
    assert _cycles(graph) == [], "these modules import each other at module level"


def test_cycle_finder_reports_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_small_top_level_and_documented_subpackages():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and "TODO" not in doc and len(doc) > 40, f"{init.parent.name}/__init__.py needs a docstring"
