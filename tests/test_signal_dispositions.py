"""Every test that signals a child process sets the disposition the child relies on.

A shell starts background jobs (``python -m pytest -q &``) with SIGINT ignored, and children
inherit that: a child started without restoring SIGINT then never sees Ctrl-C, and a test that
sends it one fails only when the suite runs in the background.  This scans the test modules: in a
module that sends a child SIGINT (by name or through a parametrized variable), every
``subprocess.Popen`` must pass ``preexec_fn=default_sigint`` (or ``ignore_sigint``, for a child
that is meant to start as a background job does, or a conditional choosing between the two).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SENDERS = {"send_signal", "kill", "killpg"}
HARMLESS = {"SIGKILL", "SIGSTOP", "SIGCONT"}  # cannot be ignored, or not a stop request
DISPOSITIONS = {"default_sigint", "ignore_sigint"}  # tests/helpers.py: each sets SIGINT explicitly


def _signal_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _sends_signals(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SENDERS:
            if node.args and _signal_name(node.args[-1]) not in HARMLESS:
                return True
    return False


def _popens_without_disposition(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Popen":
            keywords = {k.arg: k.value for k in node.keywords}
            if not _sets_disposition(keywords.get("preexec_fn")):
                lines.append(node.lineno)
    return lines


def _sets_disposition(value: ast.expr | None) -> bool:
    if isinstance(value, ast.IfExp):
        return _sets_disposition(value.body) and _sets_disposition(value.orelse)
    return isinstance(value, ast.Name) and value.id in DISPOSITIONS


def offenders(root: Path = TESTS) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _sends_signals(tree):
            found += [f"{path.relative_to(root)}:{line}" for line in _popens_without_disposition(tree)]
    return found


def test_every_child_that_gets_a_signal_is_started_with_its_disposition_restored():
    assert offenders() == []


def test_the_scan_finds_a_child_started_without_it(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import signal, subprocess\n"
        "def test_a():\n"
        "    proc = subprocess.Popen(['x'])\n"
        "    proc.send_signal(signal.SIGINT)\n"
        "def test_b():\n"
        "    proc = subprocess.Popen(['x'], preexec_fn=default_sigint)\n"
        "    proc.send_signal(signal.SIGKILL)\n"
        "def test_c(flag):\n"
        "    subprocess.Popen(['x'], preexec_fn=default_sigint if flag else ignore_sigint)\n"
        "    subprocess.Popen(['x'], preexec_fn=default_sigint if flag else other)\n")
    assert offenders(tmp_path) == ["test_x.py:3", "test_x.py:10"]
