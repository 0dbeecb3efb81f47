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


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(node: ast.AST, name: str, is_package: bool) -> list[str]:
    """The modules an import statement names (relative imports resolved against module ``name``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            module = ".".join(base + ([module] if module else []))
        return [f"{module}.{a.name}" for a in node.names] + [module]
    return []


def _imports(package: Path = PACKAGE, root: Path = ROOT, function_level: bool = True) -> dict[str, set[str]]:
    """Each module's imports of other webshop_gym modules: at module level, and (by default) inside functions too.

    ``if TYPE_CHECKING:`` blocks are left out (they never run).
    """
    modules = {_module_name(p, root): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
                for n in ast.walk(node)}
        nodes = ast.walk(tree) if function_level else iter(tree.body)
        deps: set[str] = set()
        for node in nodes:
            if id(node) in skip:
                continue
            for target in _targets(node, name, path.name == "__init__.py"):
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name and target.startswith(package.name):
                    deps.add(target)
        graph[name] = deps
    return graph


def _module_level_imports() -> dict[str, set[str]]:
    return _imports(function_level=False)


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


def _circles(graph: dict[str, set[str]], package: Path = PACKAGE) -> list[list[str]]:
    # a package's __init__ importing its own submodules (re-exports) is not a circle between modules
    graph = {m: {d for d in deps if not (d.startswith(m + ".") and package.joinpath(*m.split(".")[1:]).is_dir())}
             for m, deps in graph.items()}
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
    return _cycles(graph)


def test_no_import_circles_at_module_or_function_level():
    # a function-level import that only dodges a circle is still a circle
    assert _circles(_imports()) == [], "these modules import each other (a function-level import counts too)"


def test_a_planted_function_level_circle_is_found(tmp_path):
    pkg = tmp_path / "webshop_gym"
    (pkg / "runs").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "runs" / "__init__.py").write_text("")
    (pkg / "runs" / "a.py").write_text("from webshop_gym.runs.b import g\n\ndef f():\n    return g()\n")
    (pkg / "runs" / "b.py").write_text("def g():\n    from webshop_gym.runs import a  # hides the circle\n    return a\n")
    assert _circles(_imports(pkg, tmp_path, function_level=False), pkg) == []
    assert _circles(_imports(pkg, tmp_path), pkg) == [["webshop_gym.runs.a", "webshop_gym.runs.b"]]


#: The function-level imports of our own modules that stay lazy, each for a heavy or optional
#: dependency the importing module must not load before it is needed.  Any other function-level
#: import of a webshop_gym module fails the test below: import it at module level (a circle it
#: would create means a layer is wrong).
LAZY = {
    "webshop_gym.agents.hf": "torch and transformers (the hf extra)",
    "webshop_gym.agents.openai": "the openai client (the openai extra)",
    "webshop_gym.integrations.openenv.app": "FastAPI, uvicorn and openenv (the openenv extra)",
    "webshop_gym.integrations.openenv.environment": "openenv (the openenv extra)",
    "webshop_gym.integrations.openenv.models": "openenv's pydantic models (the openenv extra)",
    "webshop_gym.integrations.openenv.client": "openenv's EnvClient (the openenv extra)",
    "webshop_gym.reporting.plots": "matplotlib (the report extra)",
    "webshop_gym.envs.workers": "multiprocessing workers, started only with num_workers >= 2",
    "webshop_gym.engine": "the engine with numba's kernels: a worker or Ray actor loads it in its own process",
    "webshop_gym.shop": "the shop (numba, the cache): loaded only by the commands and processes that play",
    "webshop_gym.search": "Pyserini and the JVM (search.java), numba's kernels",
    "webshop_gym.search._kernels": "numba's search kernels (compiled on first use)",
    "webshop_gym.search.lucene": "Pyserini and the JVM",
    "webshop_gym.reward": "numba's reward kernels",
    "webshop_gym.reward.tables": "numba's reward kernels",
    "webshop_gym.data.tagger_pool": "spaCy and its English model, loaded only to tag titles",
    "webshop_gym.data.title_nouns": "spaCy (title nouns are tagged only when a cache stage is built)",
    "webshop_gym.render.html": "jinja2's templates, loaded only for HTML observations",
    "webshop_gym.utils": "tqdm (utils.progress) for progress bars, drawn only by slow commands",
    "webshop_gym.utils.integrity": "the cache checks, run only when a cache folder is used",
    "webshop_gym.utils.jit": "numba (a kernel's entry point is resolved at its first call)",
}
#: Modules whose every import may be lazy: the command line loads a command's stack only when
#: that command runs (``webshop-gym --help`` must not start numba, the JVM or spaCy), and the
#: package's ``__init__``s re-export optional adapters on first use.
LAZY_SOURCES = ("webshop_gym.cli", "webshop_gym.agents.__init__", "webshop_gym.adapters.__init__",
                "webshop_gym.integrations.openenv.__init__")


def _function_level_imports(package: Path = PACKAGE, root: Path = ROOT) -> list[tuple[str, str, int]]:
    """(importing module, imported webshop_gym module, line) of every import inside a function."""
    out = []
    for path in sorted(package.rglob("*.py")):
        name = _module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                for target in _targets(node, name, path.name == "__init__.py")[-1:]:
                    if target.startswith(package.name):
                        out.append((name + (".__init__" if path.name == "__init__.py" else ""), target, node.lineno))
    return sorted(set(out))


def test_function_level_imports_are_only_the_listed_lazy_ones():
    unexplained = [f"{source}:{line} imports {target} in a function" for source, target, line in _function_level_imports()
                   if target not in LAZY and not source.startswith(LAZY_SOURCES)
                   and not (source.startswith(target + ".") or source == target)]
    assert unexplained == [], "import these at module level, or add the module to LAZY with its reason"


def test_cycle_finder_reports_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_small_top_level_and_documented_subpackages():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and "TODO" not in doc and len(doc) > 40, f"{init.parent.name}/__init__.py needs a docstring"


#: The Flask app's folder: it installs as ``webshop_gym.server``, outside import-linter's graph of webshop_gym/.
SERVER = ROOT / "server"


def _server_imports() -> dict[str, set[str]]:
    """Each server module's imports of other server modules (``webshop_gym.server.X``), at module or function level.

    The package's ``__init__`` is left out: its ``create_app`` importing the blueprints is a
    package importing its own modules.
    """
    modules = {f"webshop_gym.server.{p.stem}" for p in SERVER.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name in modules:
        tree = ast.parse((SERVER / (name.rsplit(".", 1)[1] + ".py")).read_text(encoding="utf-8"))
        graph[name] = {t for node in ast.walk(tree) for t in _targets(node, name, False) if t in modules and t != name}
    return graph


def test_no_import_circles_among_the_server_modules():
    # the run viewer is one blueprint over several modules: runs.py imports the page modules to
    # register their routes, they import the blueprint and what they share from viewer.py
    graph = _server_imports()
    assert {"webshop_gym.server.viewer", "webshop_gym.server.run_pages"} <= graph["webshop_gym.server.runs"]
    assert _cycles(graph) == [], "these server modules import each other (a function-level import counts too)"
