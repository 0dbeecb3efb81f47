"""Ready for the package index: the wheel and sdist build and pass ``twine check``, and the wheel works with no checkout.

The wheel is installed into a new virtual environment (``--no-deps``); its dependencies come from
this environment's site-packages through a path file (the tests run offline), never the checkout.
A real ``pip install <wheel>`` from the index is docs/release.md's manual check.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``python -m build`` (no isolation: offline) of a copy of the checkout: a wheel and an sdist."""
    pytest.importorskip("build", reason="the build frontend is not installed: pip install 'webshop-gym[dev]'")
    out = tmp_path_factory.mktemp("dist")
    done = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> Path:
    """A new venv holding only the wheel (its dependencies through a path file to this environment's)."""
    home = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    dependencies = [p for p in sys.path if p in ours or (p.endswith("site-packages") and Path(p).is_dir())]
    assert dependencies and not any(Path(p).resolve() == ROOT for p in dependencies)
    (site / "zz_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    wheel = next(dist.glob("*.whl"))
    done = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)])
    assert done.returncode == 0, done.stderr[-3000:]
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
                   "webshop_gym/embedded/items_human_ins.json", "webshop_verifiers/__init__.py",
                   "webshop_gym/integrations/skyrl.py", "webshop_gym/integrations/gem.py",
                   "webshop_gym/integrations/openenv/harness.py", "webshop_gym/server/asgi.py"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("tests/", "data/", "benchmarks/"))]


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
    demo = _run([str(installed / "bin" / "webshop-gym"), "demo"], cwd=tmp_path, env=_env(tmp_path))
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "embedded" in demo.stdout and str(ROOT) not in demo.stdout + demo.stderr
    assert "reward" in demo.stdout.lower()


def test_the_installed_wheel_reads_the_real_shop_from_the_user_s_files(installed, tmp_path, real_dir):
    env = _env(tmp_path)
    env.pop("WEBSHOP_GYM_CACHE")  # the real shop's compiled cache, as the other tests use it
    if "WEBSHOP_GYM_CACHE" in os.environ:
        env["WEBSHOP_GYM_CACHE"] = os.environ["WEBSHOP_GYM_CACHE"]
    demo = _run([str(installed / "bin" / "webshop-gym"), "demo", "--shop", str(real_dir)], cwd=tmp_path, env=env)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert str(real_dir.resolve()) in demo.stdout and "products=1000" in demo.stdout


def test_the_verifiers_plugin_module_ships_and_names_its_extra_where_verifiers_is_missing(installed, tmp_path):
    probe = ("import importlib.util, sys\n"
             "if importlib.util.find_spec('verifiers') is not None: print('has verifiers'); sys.exit()\n"
             "try:\n    import webshop_verifiers\n"
             "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    done = _run([str(installed / "bin" / "python"), "-c", probe], cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    if done.stdout.strip() == "has verifiers":
        pytest.skip("verifiers is installed here: tests/integrations/test_verifiers.py resolves the plugin id itself")
    assert done.stdout.startswith("DependencyNotInstalled") and "pip install 'webshop-gym[verifiers]'" in done.stdout
