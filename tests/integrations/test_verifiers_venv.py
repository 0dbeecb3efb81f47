"""The verifiers tests, run in ``.venv-verifiers`` (``./install.sh --all`` builds it) from the main suite.

verifiers 0.4 needs mcp 2 and OpenEnv 0.10 needs mcp < 2, so ``webshop-gym[verifiers]`` lives in
an environment of its own and tests/integrations/test_verifiers.py skips its verifiers tests in the
main one.  This test runs that file with ``.venv-verifiers``'s Python, so the README's single test
command covers them: all must pass, none skipped.  The child run keeps to itself: no pytest cache,
its own temporary directory, ports chosen by the OS; it needs no network (install.sh prepared and
locked verifiers' chat program).
"""

from __future__ import annotations

import ast
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-verifiers"
TESTS = "tests/integrations/test_verifiers.py"


@pytest.mark.slow
def test_the_verifiers_tests_all_pass_in_the_verifiers_environment(tmp_path):
    python = VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(".venv-verifiers is absent: ./install.sh --all (or --verifiers) builds it; "
                    "verifiers needs its own environment (mcp 2 vs OpenEnv's mcp < 2)")
    report = tmp_path / "report.xml"
    env = dict(os.environ, PATH=f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    # the id's module comes with the webshop-verifiers distribution (environments/webshop_verifiers)
    has_plugin = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('webshop_verifiers'))"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert has_plugin.stdout.strip() not in ("", "None"), (
        "webshop-verifiers is not installed in .venv-verifiers, so vf-eval cannot resolve webshop-verifiers: "
        "./install.sh --verifiers (or .venv-verifiers/bin/python -m pip install -e environments/webshop_verifiers)"
        + has_plugin.stderr[-1000:])
    done = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "tmp"),
         f"--junitxml={report}", TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    suite = ET.parse(report).getroot().find("testsuite")
    counts = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    ran = [case.get("name") for case in suite.iter("testcase")]
    assert counts == {"tests": len(ran), "failures": 0, "errors": 0, "skipped": 0}, done.stdout[-4000:]
    # every test the file defines ran (the tools format's among them), the parametrized ones once per case
    defined = {node.name for node in ast.parse((ROOT / TESTS).read_text()).body
               if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    assert {name.split("[")[0] for name in ran} == defined
    assert len(ran) >= len(defined) + 1  # the conversations test runs in two formats
