"""Every import the README and docs/ show works as written (issue 28: a documented class had moved)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IMPORT = re.compile(r"^\s*((?:from webshop_gym[\w.]* import [\w, ()]+)|(?:import webshop_gym[\w.]*))", re.M)
CHECK = """
import importlib, json, sys
failed = []
for line in json.loads(sys.argv[1]):
    try:
        exec(line, {})
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("webshop_gym"):
            failed.append(f"{line}: {exc}")
        # else: an optional extra that is not installed here (verifiers goes in its own environment)
    except ImportError as exc:
        if type(exc).__name__ != "DependencyNotInstalled":  # ours: an extra missing here (gem on Python 3.12)
            failed.append(f"{line}: {type(exc).__name__}: {exc}")
    except Exception as exc:
        failed.append(f"{line}: {type(exc).__name__}: {exc}")
print(json.dumps(failed))
"""


def documented_imports() -> list[str]:
    """The import statements of the pages' code (code blocks and inline code)."""
    found = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        code = re.findall(r"```.*?\n(.*?)```", text, re.S) + re.findall(r"`([^`\n]+)`", text)
        for chunk in code:
            for part in re.split(r";|\n", chunk):
                match = IMPORT.match(part)
                if match:
                    found.add(re.sub(r"\s+#.*$", "", match.group(1)).strip().rstrip(",").replace("(", "").replace(")", ""))
    return sorted(found)


def test_every_documented_import_works():
    lines = documented_imports()
    assert len(lines) >= 15 and "from webshop_gym.wrappers import RecordTrajectory" in lines
    out = subprocess.run([sys.executable, "-c", CHECK, json.dumps(lines)], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_the_scan_would_catch_a_moved_name(tmp_path):
    out = subprocess.run([sys.executable, "-c", CHECK, json.dumps(["from webshop_gym.runs.log import Nope",
                                                                    "import webshop_gym.nowhere"])],
                         capture_output=True, text=True, cwd=ROOT, timeout=300, check=True).stdout
    assert len(json.loads(out.strip().splitlines()[-1])) == 2
