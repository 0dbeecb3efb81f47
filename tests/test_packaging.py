"""Ready for the package index: the wheel and sdist build and pass ``twine check``, and the wheel works with no checkout.

Two distributions: ``webshop-gym`` (the checkout's root) and ``webshop-verifiers``
(``environments/webshop_verifiers``, the verifiers Environments Hub's distribution of the id
``vf-eval webshop-verifiers`` resolves).  Each wheel is installed into a new virtual environment
(``--no-deps``); its dependencies come from an existing environment's site-packages through a path
file (the tests run offline), never the checkout: this one's for webshop-gym, ``.venv-verifiers``'s
for webshop-verifiers (verifiers cannot share an environment with OpenEnv).  A real ``pip install``
from the index is docs/release.md's manual check.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HUB_ENV = ROOT / "environments" / "webshop_verifiers"
"""The verifiers Environments Hub's distribution (``prime env push webshop-verifiers`` pushes this folder)."""
VERIFIERS_VENV = ROOT / ".venv-verifiers"
NO_PYSERINI = "WEBSHOP_GYM_TEST_NO_PYSERINI"


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)


def _build(source: Path, out: Path) -> Path:
    """``python -m build`` (no isolation: offline) of ``source``: a wheel and an sdist in ``out``."""
    pytest.importorskip("build", reason="the build frontend is not installed: pip install 'webshop-gym[dev]'")
    done = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def _checkout_copy(destination: Path) -> Path:
    """The checkout's files, without environments, caches and build output (setuptools writes its
    egg-info and build folders into the source: each pytest worker builds its own copy)."""
    skip = {".git", ".venv", ".venv-verifiers", "__pycache__", ".pytest_cache", ".ruff_cache"}

    def ignored(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == ROOT
        return {n for n in names if n in skip or n.endswith(".egg-info") or (top and n in ("build", "dist"))}

    shutil.copytree(ROOT, destination, ignore=ignored, symlinks=True)
    return destination


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """webshop-gym's wheel and sdist, built from a copy of the checkout."""
    source = _checkout_copy(tmp_path_factory.mktemp("checkout") / "webshop-gym")
    return _build(source, tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def hub_dist(tmp_path_factory) -> Path:
    """webshop-verifiers' wheel and sdist (hatchling, the backend the Hub's scaffold uses)."""
    pytest.importorskip("hatchling", reason="hatchling builds environments/webshop_verifiers: "
                                            "pip install 'webshop-gym[dev]'")
    return _build(HUB_ENV, tmp_path_factory.mktemp("hub_dist"))


def _new_venv(home: Path, dependencies: list[str], base: str = sys.executable) -> Path:
    """A new venv (made by the interpreter ``base``) that sees ``dependencies`` through a path file; its python."""
    done = _run([base, "-m", "venv", "--without-pip", str(home)], cwd=home.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    python = home / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    assert dependencies and not any(Path(p).resolve() == ROOT for p in dependencies)
    (site / "zz_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    return python


def _install(python: Path, *wheels: Path) -> None:
    done = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", *map(str, wheels)])
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> Path:
    """A new venv holding only the wheel (its dependencies through a path file to this environment's)."""
    home = tmp_path_factory.mktemp("venv")
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    dependencies = [p for p in sys.path if p in ours or (p.endswith("site-packages") and Path(p).is_dir())]
    python = _new_venv(home, dependencies)
    _install(python, next(dist.glob("*.whl")))
    # Pyserini is no dependency of the wheel (it requires torch): a test that plays as a plain
    # `pip install webshop-gym` does sets NO_PYSERINI, and the venv then imports none
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "zz_no_pyserini.pth").write_text(
        f'import os, sys; os.environ.get("{NO_PYSERINI}") and sys.modules.setdefault("pyserini", None)\n')
    return home


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.setdefault("WEBSHOP_GYM_CACHE", str(tmp / "cache"))
    return env


def test_the_wheel_and_sdist_pass_twine_check(dist):
    pytest.importorskip("twine", reason="twine is not installed: pip install 'webshop-gym[dev]'")
    files = sorted(dist.iterdir())
    assert sorted(f.suffix for f in files) == [".gz", ".whl"]
    done = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)])
    assert done.returncode == 0 and done.stdout.count("PASSED") == 2, done.stdout + done.stderr
    names = zipfile.ZipFile(next(dist.glob("*.whl"))).namelist()
    for needed in ("webshop_gym/embedded/items_shuffle.json", "webshop_gym/embedded/items_ins_v2.json",
                   "webshop_gym/embedded/items_human_ins.json", "webshop_gym/embedded/search-postings/source.json",
                   "webshop_gym/embedded/search-postings/docs.npy", "webshop_gym/integrations/verifiers.py",
                   "webshop_gym/integrations/skyrl.py", "webshop_gym/integrations/gem.py",
                   "webshop_gym/integrations/openenv/harness.py", "webshop_gym/server/asgi.py"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("tests/", "data/", "benchmarks/", "environments/"))]
    # the verifiers id's module has one owner, the webshop-verifiers distribution
    assert not [n for n in names if n.startswith("webshop_verifiers")]


def test_the_installed_wheel_plays_the_demo_on_the_embedded_shop_with_no_checkout(installed, tmp_path):
    python = installed / "bin" / "python"
    where = _run([str(python), "-c", "import webshop_gym, importlib.metadata as m; "
                                     "print(webshop_gym.__file__); print(m.version('webshop-gym'))"], cwd=tmp_path,
                 env=_env(tmp_path))
    location, version = where.stdout.split()
    assert Path(location).is_relative_to(installed), location  # the wheel's copy, not the checkout
    import webshop_gym

    assert version == webshop_gym.__version__
    shown = _run([str(installed / "bin" / "webshop-gym"), "--version"], cwd=tmp_path, env=_env(tmp_path))
    assert shown.returncode == 0 and shown.stdout.strip() == f"webshop-gym {version}"
    # with a fresh cache and no Pyserini (no JVM): the embedded shop's search postings come with the wheel
    bare = {**_env(tmp_path), NO_PYSERINI: "1"}
    hidden = _run([str(python), "-c", "import importlib.util; print(importlib.util.find_spec('pyserini'))"], env=bare)
    assert hidden.stdout.strip() == "None", hidden.stdout + hidden.stderr
    demo = _run([str(installed / "bin" / "webshop-gym"), "demo"], cwd=tmp_path, env=bare)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "embedded" in demo.stdout and str(ROOT) not in demo.stdout + demo.stderr
    assert "reward" in demo.stdout.lower()
    assert not list((tmp_path / "cache").glob("catalogs/*/index-v1")), "a Lucene index was built: the JVM ran"


def test_the_installed_wheel_reads_the_real_shop_from_the_user_s_files(installed, tmp_path, real_dir):
    env = _env(tmp_path)
    env.pop("WEBSHOP_GYM_CACHE")  # the real shop's compiled cache, as the other tests use it
    if "WEBSHOP_GYM_CACHE" in os.environ:
        env["WEBSHOP_GYM_CACHE"] = os.environ["WEBSHOP_GYM_CACHE"]
    demo = _run([str(installed / "bin" / "webshop-gym"), "demo", "--shop", str(real_dir)], cwd=tmp_path, env=env)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert str(real_dir.resolve()) in demo.stdout and "products=1000" in demo.stdout


def test_the_main_wheel_leaves_the_verifiers_id_to_its_own_distribution(installed, tmp_path):
    probe = ("import importlib.util, sys\n"
             "print(importlib.util.find_spec('webshop_verifiers'))\n"
             "if importlib.util.find_spec('verifiers') is not None: print('has verifiers'); sys.exit()\n"
             "try:\n    import webshop_gym.integrations.verifiers\n"
             "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    done = _run([str(installed / "bin" / "python"), "-c", probe], cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    spec, answer = done.stdout.strip().split("\n", 1)
    assert spec == "None"  # webshop-gym alone has no module named webshop_verifiers
    if answer == "has verifiers":
        pytest.skip("verifiers is installed here: test_after_a_plain_install_vf_eval_finds_the_hub_environment "
                    "covers the module")
    assert answer.startswith("DependencyNotInstalled") and "pip install webshop-verifiers" in answer


# -- webshop-verifiers: the verifiers Environments Hub's distribution --------------------------------


def _hub_project() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+")
    return tomllib.loads((HUB_ENV / "pyproject.toml").read_text())


def _plugin_id() -> str:
    """``PLUGIN_ID`` of webshop_gym.integrations.verifiers, read without importing verifiers."""
    source = (ROOT / "webshop_gym" / "integrations" / "verifiers.py").read_text()
    return next(node.value.value for node in ast.parse(source).body if isinstance(node, ast.Assign)
                and [getattr(t, "id", None) for t in node.targets] == ["PLUGIN_ID"])


def test_the_hub_environment_has_the_layout_and_metadata_the_hub_reads():
    """What ``prime env push`` and verifiers' loader take from the folder (prime CLI, commit 66fb4b7,
    packages/prime/src/prime_cli/commands/env.py, ``push``: ``[project]`` name, a static version,
    description, tags, license, dependencies, requires-python, README.md, a package; verifiers 0.4,
    verifiers/v1/utils/loaders.py, ``_import_plugin``/``_plugin_class``: the id's name, dashes to
    underscores, imported as a top-level module whose ``__all__`` names the Taskset and the Env)."""
    import webshop_gym

    project = _hub_project()["project"]
    name = project["name"]
    assert name == _plugin_id() == "webshop-verifiers"
    module = name.replace("-", "_")
    assert HUB_ENV.name == module  # `prime env push webshop-verifiers` pushes ./environments/webshop_verifiers
    assert "version" not in project.get("dynamic", []) and project["version"] == webshop_gym.__version__
    assert project["dependencies"] == [f"webshop-gym[verifiers]=={webshop_gym.__version__}"]
    assert project["description"] and project["license"] == "MIT" and project["requires-python"] == ">=3.11"
    assert project["tags"] and all(isinstance(t, str) and t == t.lower() for t in project["tags"])
    assert project["readme"] == "README.md" and (HUB_ENV / "README.md").read_text().startswith(f"# {name}\n")
    init = ast.parse((HUB_ENV / module / "__init__.py").read_text())
    exported = next(ast.literal_eval(n.value) for n in init.body if isinstance(n, ast.Assign)
                    and [getattr(t, "id", None) for t in n.targets] == ["__all__"])
    imported = {a.name for n in init.body if isinstance(n, ast.ImportFrom)
                and n.module == "webshop_gym.integrations.verifiers" for a in n.names}
    assert set(exported) == imported == {"WebShopTaskset", "WebShopVerifiersEnv", "load_environment"}
    assert (HUB_ENV / module / "__init__.py").is_file()  # the package the wheel ships (and the Hub's page shows)


def test_the_hub_environment_builds_a_wheel_and_sdist_that_pass_twine_check(hub_dist):
    pytest.importorskip("twine", reason="twine is not installed: pip install 'webshop-gym[dev]'")
    import webshop_gym

    files = sorted(hub_dist.iterdir())
    version = webshop_gym.__version__
    assert [f.name for f in files] == [f"webshop_verifiers-{version}-py3-none-any.whl",
                                       f"webshop_verifiers-{version}.tar.gz"]
    done = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)])
    assert done.returncode == 0 and done.stdout.count("PASSED") == 2, done.stdout + done.stderr
    wheel = zipfile.ZipFile(files[0])
    assert [n for n in wheel.namelist() if ".dist-info/" not in n] == ["webshop_verifiers/__init__.py"]
    metadata = wheel.read(f"webshop_verifiers-{version}.dist-info/METADATA").decode()
    fields = dict(line.split(": ", 1) for line in metadata.split("\n\n", 1)[0].splitlines())
    assert fields["Name"] == "webshop-verifiers" and fields["Version"] == version
    assert fields["Requires-Dist"] == f"webshop-gym[verifiers]=={version}"
    assert fields["Requires-Python"] == ">=3.11" and fields["License-Expression"] == "MIT"
    assert metadata.split("\n\n", 1)[1].strip() == (HUB_ENV / "README.md").read_text().strip()


def _verifiers_site_packages() -> list[str]:
    """The site directories of ``.venv-verifiers`` (verifiers and the rest of webshop-gym[verifiers]'s dependencies)."""
    python = VERIFIERS_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(".venv-verifiers is absent: ./install.sh --all (or --verifiers) builds it; "
                    "verifiers needs its own environment (mcp 2 vs OpenEnv's mcp < 2)")
    done = _run([str(python), "-c", "import json, sys; print(json.dumps(sys.path))"], cwd="/",
                env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")})
    return [p for p in json.loads(done.stdout) if p.endswith("site-packages") and Path(p).is_dir()]


@pytest.mark.slow
def test_after_a_plain_install_vf_eval_finds_the_hub_environment(dist, hub_dist, tmp_path, default_shop):
    import webshop_gym
    from tests.openai_server import ChatServer

    dependencies = _verifiers_site_packages()
    base = str(VERIFIERS_VENV / "bin" / "python")
    python = _new_venv(tmp_path / "venv", dependencies, base=base)
    env = _env(tmp_path)
    env["PATH"] = f"{VERIFIERS_VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"  # uv, for verifiers' chat program
    version = webshop_gym.__version__

    def probe(code: str) -> str:
        done = _run([str(python), "-c", code], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip()

    # webshop-gym[verifiers] alone: verifiers cannot resolve the id, and our loader says what to install
    _install(python, next(dist.glob("*.whl")))
    if not any((Path(d) / "webshop_verifiers").is_dir() for d in dependencies):
        alone = probe("import verifiers.v1 as vf\n"
                      "try:\n    vf.import_taskset('webshop-verifiers')\n"
                      "except ModuleNotFoundError as exc:\n    print('not found:', exc)\n"
                      "from webshop_gym.integrations.verifiers import load_environment\n"
                      "try:\n    load_environment()\n"
                      "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
        assert "not found: taskset 'webshop-verifiers' not found" in alone
        assert "DependencyNotInstalled" in alone and "pip install webshop-verifiers" in alone
    # + webshop-verifiers: the id, bare or as the Hub names it, is our env, from the installed wheels
    _install(python, next(hub_dist.glob("*.whl")))
    found = json.loads(probe(
        "import json, importlib.metadata as m, verifiers.v1 as vf, webshop_gym, webshop_verifiers\n"
        "from verifiers.v1.utils.loaders import taskset_class\n"
        "ids = ['webshop-verifiers', f'someone/webshop-verifiers@{m.version(\"webshop-verifiers\")}']\n"
        "env = webshop_verifiers.load_environment(limit=2)\n"
        "print(json.dumps({'env': [vf.environment_class(i).__module__ for i in ids],\n"
        "                  'taskset': [taskset_class(i).__name__ for i in ids],\n"
        "                  'files': [webshop_gym.__file__, webshop_verifiers.__file__],\n"
        "                  'versions': [m.version('webshop-gym'), m.version('webshop-verifiers')],\n"
        "                  'goals': [t.data.goal_index for t in env.taskset], 'id': env.config.taskset.id}))\n"))
    assert found["env"] == ["webshop_gym.integrations.verifiers"] * 2
    assert found["taskset"] == ["WebShopTaskset"] * 2
    assert all(Path(f).is_relative_to(tmp_path / "venv") for f in found["files"]), found["files"]
    assert found["versions"] == [version, version]
    assert found["goals"] == [0, 1] and found["id"] == "webshop-verifiers"
    # vf-eval itself (verifiers' console entry point) plays an episode through the installed wheels
    with ChatServer(models=["scripted"]) as server:
        command = [str(python), "-c", "import sys; from verifiers.v1.cli.eval.main import main; main()",
                   "webshop-verifiers", "-m", "scripted", "--client.base-url", server.url, "--no-push", "--no-rich",
                   "-n", "1", "-r", "1", "-o", str(tmp_path / "runs")]
        done = _run(command, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        assert server.requests
    traces = [json.loads(line) for f in (tmp_path / "runs").glob("*/traces.jsonl") for line in f.read_text().splitlines()
              if line.strip()]
    assert len(traces) == 1 and traces[0]["ok"] and len(traces[0]["traces"]) == 1
    trace = traces[0]["traces"][0]
    actions = trace["info"]["webshop"]["actions"]
    assert trace["task"]["data"]["goal_index"] == 0 and actions[-1] == "click[buy now]"
    played = webshop_gym.WebShopEnv(shop=default_shop, split=None)  # the same actions here: the same reward
    played.reset(options={"goal_index": 0})
    for action in actions:
        _, reward, terminated, _, _ = played.step(action)
    assert terminated and trace["rewards"]["webshop_reward"]["score"] == pytest.approx(reward)
