"""The README's "Use it" shell commands work when copied line by line (issue 20, G5).

The commands are read from README.md's code block, so this test follows the README.  They run in
order, in one bash process, in a temporary copy of the repository whose ``.venv`` is this
checkout's (install.sh made it; the test does not reinstall).  ``serve`` lines run in the
background until the server prints its URL and are then stopped with SIGTERM; they get
``--port 0`` so that a server already listening on 3000 elsewhere on the machine cannot interfere.
Any non-zero exit status or traceback fails the test.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def use_it_commands(readme: str) -> list[str]:
    """The lines of the shell block in the README's "Use it" section, comments removed."""
    section = readme.split("\n## Use it", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the Use it section has no ```bash block"
    return [shlex.join(shlex.split(line, comments=True)) for line in block.group(1).splitlines()
            if shlex.split(line, comments=True)]


def _script(commands: list[str]) -> str:
    lines = ["set -eo pipefail"]
    for n, command in enumerate(commands):
        words = shlex.split(command)
        lines.append(f"echo {shlex.quote(f'>>> {command}')}")
        if words[:2] == ["webshop-gym", "serve"]:
            log = f".serve-{n}.log"
            lines += [
                f"{command} --port 0 > {log} 2>&1 &",
                "pid=$!",
                "for i in $(seq 1200); do",
                f"  grep -q 'play at' {log} && break",
                f"  kill -0 $pid 2>/dev/null || {{ cat {log}; echo 'serve ended early' >&2; exit 1; }}",
                "  sleep 0.1",
                "done",
                f"grep -q 'play at' {log} || {{ cat {log}; kill $pid; echo 'serve did not start' >&2; exit 1; }}",
                "kill -TERM $pid",
                "wait $pid",
                f"cat {log}",
            ]
        else:
            lines.append(command)
    return "\n".join(lines) + "\n"


def test_commands_are_found():
    commands = use_it_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert commands[0] == "source .venv/bin/activate"
    assert any(c.startswith("webshop-gym eval") for c in commands)
    assert all(c.startswith(("webshop-gym", "source")) for c in commands)
    # install.sh ends by printing exactly the README's first command
    last = [line for line in (ROOT / "install.sh").read_text().splitlines() if line.strip()][-1]
    assert shlex.split(last) == ["echo", commands[0]]


@pytest.mark.slow
def test_use_it_commands_run_in_a_copy(tmp_path):
    if not (ROOT / ".venv" / "bin" / "activate").is_file():
        pytest.skip("no .venv in this checkout (run ./install.sh first)")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode()
    copy = tmp_path / "webshop-gym"
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    (copy / ".venv").symlink_to(ROOT / ".venv")
    commands = use_it_commands((copy / "README.md").read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if Path(p).resolve() != (Path(sys.prefix) / "bin").resolve())
    done = subprocess.run(["bash", "-c", _script(commands)], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=1500)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
    # each of the two servers says it stopped exactly once (the message shows every server line, to tell which)
    server_lines = [line for line in done.stdout.splitlines() if line.startswith(("webshop-gym:", ">>> webshop-gym serve"))]
    assert done.stdout.count("webshop-gym: stopped") == 2, "\n".join(server_lines)
    assert (copy / "runs" / "rule.jsonl").is_file() and (copy / "report.html").is_file()
    assert (copy / "demos.jsonl").is_file()
    assert subprocess.run(["git", "diff", "--no-index", "--quiet", str(ROOT / "data"), str(copy / "data")]).returncode == 0
