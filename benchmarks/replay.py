"""Cold replay: the golden trajectories of the real shop, each run in a fresh process.

The realistic load for LLM agents: mostly unique searches, cold caches.  Replays every
trajectory of ``../shared/webshop-small/golden/trajectories.jsonl`` (the reference's rule, target
and random policies on test goals 0-149) through the public envs and checks every observation
and reward against the golden ones.  Each measurement starts a new Python process, so the
query cache, the page caches and the JVM are cold; the phases are timed separately:

* ``import_s``: ``import webshop_gym``;
* ``load_s``: ``load_shop`` (memory-mapped catalog, goals, the reward kernel, the search
  backend's files), of which ``reward_kernel_s`` loads the reward kernel (numba cache);
* ``prepare_s``: the search backend made ready: ``bm25`` maps its postings and loads its kernel,
  ``pyserini`` starts the JVM and opens the Lucene index (reported as ``jvm_s`` too);
* ``start_s``: the env built (``num_workers=2``: the workers spawned and their shops loaded);
* ``replay_s``: every action of every trajectory, stepped; ``steps_per_s`` = actions / replay_s.

Mode ``first`` times a new user's first step instead: from ``import webshop_gym`` through
``gym.make`` and ``reset`` to the observation after a search, on the cached embedded shop
(target: 1.5 s), and lists the heavy packages that ``import webshop_gym`` alone loads.

Modes: ``single`` (``WebShopEnv``), ``vector`` (``WebShopVectorEnv``, 256 slots, each slot
plays one trajectory after another, slots without one left play an invalid no-op that is not
counted), ``workers`` (the same with ``num_workers=2``), each with ``-pyserini`` for the JVM path,
and ``vector-html``/``workers-html`` with ``observation_mode="html"`` (rewards checked; the golden
pages are text, so pages are not).

``--reference DIR`` (a checkout of princeton-nlp/WebShop, set up as docs/benchmarks.md says)
first replays the same trajectories in the reference's own ``WebAgentTextEnv``, in a fresh process
(``--reference-python``: the interpreter with the reference's requirements) right before ours,
under the same conditions: cold caches, its JVM started and its index opened outside the timing,
every observation and reward checked against the golden ones.  The JSON then holds its figure
(``reference``) and, for every mode, ``x_reference``: our steps/s divided by the reference's.
``--reference-python`` may name several interpreters, one per set-up of the reference (its pinned
``thefuzz==0.19.0`` on difflib's pure-Python matcher, and today's ``thefuzz`` 0.22 on rapidfuzz):
each replays in its own fresh process, ``x_reference`` is quoted against the fastest
(``reference``) and ``x_reference_each`` against each (``references``).
Without ``--reference`` there is no ratio: a ratio to a figure from another run is not one a
user can reproduce.  The reference's code is never part of this repository; it is imported
from DIR (benchmarks/_reference.py).

    python benchmarks/replay.py                   # every mode, 3 fresh processes each
    python benchmarks/replay.py --modes single vector --repeat 5
    python benchmarks/replay.py --reference ~/WebShop --reference-python ~/WebShop/.venv/bin/python
    python benchmarks/replay.py --modes single vector workers --reference ~/WebShop \
        --reference-python ~/webshop-ref-venv/bin/python ~/webshop-ref-venv-thefuzz022/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import rss_mb, save, table  # noqa: E402
from _reference import ReferenceSetupError, locate  # noqa: E402
from _reference import run as run_reference  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "webshop-small"
MODES = ("first", "single", "vector", "workers", "single-pyserini", "vector-pyserini", "workers-pyserini", "vector-html",
         "workers-html")
NOOP = "noop"  # an invalid action: a no-op for slots that have no trajectory left


def load_trajectories(real: Path) -> list[dict]:
    with open(real / "golden" / "trajectories.jsonl") as handle:
        return [json.loads(line) for line in handle]


def first_observation() -> dict:
    """From ``import webshop_gym`` to the observation after a search (embedded shop, cached)."""
    t0 = time.perf_counter()
    import webshop_gym  # noqa: F401

    import_s = time.perf_counter() - t0
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"numba", "jnius", "pyserini", "spacy", "ray", "torch",
                                                             "flask", "transformers"})
    import gymnasium as gym

    env = gym.make("webshop_gym:WebShop-v0")
    make_s = time.perf_counter() - t0 - import_s
    env.reset(seed=0, options={"goal_index": 0})
    obs, *_ = env.step("search[gluten free vegetarian smoked bacon, 4 ounce]")
    total = time.perf_counter() - t0
    from webshop_gym.search import java as _java

    return {"mode": "first", "import_s": round(import_s, 3), "make_s": round(make_s, 3),
            "first_obs_s": round(total, 3), "heavy_modules_at_import": heavy, "jvm_started": _java.is_started(),
            "results_page": obs.startswith("Instruction:") and "Page 1 (Total results:" in obs,
            "load_average_1min": round(os.getloadavg()[0], 2)}


def child(mode: str, real: Path, num_envs: int) -> dict:
    """One measurement, in this (fresh) process."""
    if mode == "first":
        return first_observation()
    t0 = time.perf_counter()
    import webshop_gym  # noqa: F401

    import_s = time.perf_counter() - t0
    from webshop_gym.search import java as _java
    from webshop_gym.shop import load_shop

    backend = "pyserini" if mode.endswith("-pyserini") else "bm25"
    kind = mode.split("-")[0]
    html = mode.endswith("-html")  # html observations: rewards checked, pages not (the golden ones are text)

    def page(text: str) -> str | None:
        return None if html else text
    trajectories = load_trajectories(real)
    t = time.perf_counter()
    shop = load_shop(real, goals=real / "golden" / "goals.json", progress=False, search_backend=backend)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    shop.engine.prepare()
    prepare_s = time.perf_counter() - t
    jvm_in_load = _java.is_started()
    actions = [s["action"] for tr in trajectories for s in tr["steps"][1:]]
    searches = [a for a in actions if a.startswith("search[")]
    mismatches = 0
    t = time.perf_counter()
    if kind == "single":
        from webshop_gym import WebShopEnv

        env = WebShopEnv(shop=shop, max_steps=None)
        start_s = time.perf_counter() - t
        got = []
        t = time.perf_counter()
        for tr in trajectories:
            obs, _ = env.reset(options={"goal_index": tr["goal_index"]})
            got.append((obs, 0.0))
            for step in tr["steps"][1:]:
                obs, reward, terminated, truncated, _ = env.step(step["action"])
                got.append((obs, reward))
                if terminated:
                    break
        replay_s = time.perf_counter() - t
        expected = [(s["obs_text"], s["reward"]) for tr in trajectories for s in tr["steps"][: _played(tr)]]
        mismatches = sum(a != b for a, b in zip(got, expected)) + abs(len(got) - len(expected))
        env.close()
    else:
        import numpy as np

        from webshop_gym import WebShopVectorEnv

        envs = WebShopVectorEnv(num_envs, shop=shop, max_steps=None, autoreset_mode="disabled",
                                num_workers=2 if kind == "workers" else 0, observation_mode="html" if html else "text")
        start_s = time.perf_counter() - t
        # what each slot plays, prepared before the clock starts; the outputs are kept as they
        # come and compared with the golden ones after it stops (the env's work alone is timed)
        plays = [[s["action"] for s in tr["steps"][1:]] for tr in trajectories]
        lengths = [len(actions) for actions in plays]
        outputs = []  # (slots' trajectories, their positions, observations, rewards) per step
        t = time.perf_counter()
        queue = list(range(len(trajectories)))
        queue.reverse()  # popped from the end: trajectories in order
        current: list[int | None] = [None] * num_envs
        position = [0] * num_envs
        goals = [0] * num_envs
        for i in range(num_envs):
            if queue:
                current[i] = queue.pop()
                goals[i] = trajectories[current[i]]["goal_index"]
        live = sum(c is not None for c in current)
        obs, _ = envs.reset(options={"goal_index": goals})
        outputs.append((list(current), None, obs, None))
        while live:
            acts = [NOOP if c is None else plays[c][position[i]] for i, c in enumerate(current)]
            obs, rewards, terminated, truncated, _ = envs.step(acts)
            ended = terminated.tolist()
            outputs.append((list(current), list(position), obs, rewards.tolist()))
            mask = None
            for i, c in enumerate(current):
                if c is None:
                    continue
                position[i] += 1
                if ended[i] or position[i] >= lengths[c]:
                    if mask is None:
                        mask, new_goals = np.zeros(num_envs, bool), [0] * num_envs
                    mask[i] = True
                    current[i] = queue.pop() if queue else None
                    position[i] = 0
                    if current[i] is None:
                        live -= 1
                    else:
                        new_goals[i] = trajectories[current[i]]["goal_index"]
            if mask is not None:
                obs, _ = envs.reset(options={"goal_index": new_goals, "reset_mask": mask})
                outputs.append(([c if mask[i] else None for i, c in enumerate(current)], None, obs, None))
        replay_s = time.perf_counter() - t
        checks = []
        for slots, positions, observations, rewards in outputs:
            for i, c in enumerate(slots):
                if c is None:
                    continue
                if positions is None:  # a reset: the trajectory's first page
                    checks.append((page(observations[i]), page(trajectories[c]["steps"][0]["obs_text"])))
                else:
                    step = trajectories[c]["steps"][positions[i] + 1]
                    checks.append(((page(observations[i]), rewards[i]), (page(step["obs_text"]), step["reward"])))
        mismatches = sum(a != b for a, b in checks) + abs(len(checks) - sum(map(_played, trajectories)))
        workers_with_jvm = _children_with_jvm()
        envs.close()
    out = {
        "mode": mode,
        "backend": backend,
        "trajectories": len(trajectories),
        "steps": len(actions),
        "searches": len(searches),
        "unique_searches": len({s.lower() for s in searches}),
        "mismatches": mismatches,
        "import_s": round(import_s, 3),
        "load_s": round(load_s, 3),
        "reward_kernel_s": round(shop.rewards.jit_seconds or 0.0, 3),
        "prepare_s": round(prepare_s, 3),
        "jvm_s": round(prepare_s, 3) if backend == "pyserini" else None,
        "start_s": round(start_s, 3),
        "replay_s": round(replay_s, 6),  # (milliseconds would quantise a 60 ms replay by 1.7%)
        "steps_per_s": round(len(actions) / replay_s),
        "jvm_started": _java.is_started(),
        "jvm_started_by_load": jvm_in_load,
        "rss_mb": round(rss_mb(), 1),
        "load_average_1min": round(os.getloadavg()[0], 2),  # other work on the machine while measuring
    }
    if kind == "workers":
        out["workers_with_jvm"] = workers_with_jvm
    return out


def _played(tr: dict) -> int:
    """Steps of a trajectory that the env plays (it stops at the first purchase)."""
    for i, step in enumerate(tr["steps"][1:], start=1):
        if step["done"]:
            return i + 1
    return len(tr["steps"])


def _children_with_jvm() -> int:
    """How many child processes have the JVM loaded."""
    import psutil

    count = 0
    for proc in psutil.Process().children(recursive=True):
        try:
            if any("libjvm" in m.path for m in proc.memory_maps()):
                count += 1
        except (psutil.Error, OSError):
            pass
    return count


def fail(message: str) -> None:
    """A bad argument or setup: one line on stderr, exit status 2."""
    print(f"replay.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def reference_replay(ref: str, python: str, real: Path, repeat: int) -> dict:
    """The reference's text env on the golden trajectories, ``repeat`` fresh processes (median)."""
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(run_reference(python, "replay", ["--reference", ref, "--shop", str(real)], tmp, "replay", fail))
    row = dict(runs[len(runs) // 2])
    for key in ("import_s", "load_s", "replay_s", "rss_mb"):
        row[key] = round(statistics.median(r[key] for r in runs), 3)
    row["steps_per_s"] = round(row["steps"] / row["replay_s"], 1)
    row["steps_per_s_runs"] = [r["steps_per_s"] for r in runs]
    row["mismatches"] = max(r["mismatches"] for r in runs)
    row["load_average_1min_runs"] = [r["load_average_1min"] for r in runs]
    row["python"] = python
    versions = row.get("versions", {})
    row["setup"] = f"thefuzz {versions.get('thefuzz', '?')} ({versions.get('thefuzz_matcher', '?')})"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="what to measure")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per mode (median reported)")
    parser.add_argument("--num-envs", type=int, default=256, help="vector env slots (default 256)")
    parser.add_argument("--shop", default=str(REAL), help="the real shop with its golden/ folder")
    parser.add_argument("--reference", metavar="DIR",
                        help="a checkout of princeton-nlp/WebShop: replay in its text env first and report the ratio")
    parser.add_argument("--reference-python", metavar="PYTHON", nargs="+", default=[sys.executable],
                        help="the interpreter(s) with the reference's requirements, one per reference setup (e.g. "
                             "thefuzz 0.19.0 as pinned and thefuzz 0.22); each is replayed and the ratio is "
                             "quoted against the fastest (default: this interpreter)")
    parser.add_argument("--reference-repeat", type=int, default=1,
                        help="fresh processes for the reference (median; default 1: one replay takes minutes)")
    parser.add_argument("--json", metavar="FILE", help="write the JSON here (default benchmarks/results/replay.json)")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    real = Path(args.shop)
    if args.child:
        result = child(args.child, real, args.num_envs)
        Path(args.out).write_text(json.dumps(result))
        return
    if args.repeat < 1 or args.reference_repeat < 1:
        fail("--repeat and --reference-repeat must be at least 1")
    if not (real / "golden" / "trajectories.jsonl").is_file():
        sys.exit(f"no golden trajectories under {real}")
    reference, references = None, []
    if args.reference is not None:
        try:
            reference_files = locate(args.reference, real)
        except ReferenceSetupError as exc:
            fail(str(exc))
        for python in args.reference_python:
            if not (os.path.isfile(python) and os.access(python, os.X_OK)):
                fail(f"--reference-python {python}: not an executable file")
        references = []
        for python in args.reference_python:
            print(f"the reference ({args.reference}, index {reference_files['index']}, {python}): replaying the golden "
                  f"trajectories in its WebAgentTextEnv ({args.reference_repeat} fresh process(es); minutes)...",
                  flush=True)
            row = reference_replay(args.reference, python, real, args.reference_repeat)
            references.append(row)
            print({k: row[k] for k in ("setup", "steps_per_s", "mismatches", "import_s", "load_s", "replay_s",
                                       "load_average_1min")}, flush=True)
        reference = max(references, key=lambda r: r["steps_per_s"])  # ratios are quoted against the fastest
    rows = []
    firsts: list[dict] = []
    for mode in args.modes:
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "result.json"
                cmd = [sys.executable, __file__, "--child", mode, "--shop", str(real), "--num-envs", str(args.num_envs),
                       "--out", str(out)]
                proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
                if proc.returncode != 0:
                    sys.exit(f"{mode} failed:\n{proc.stderr[-3000:]}")
                if proc.stderr.strip():
                    print(f"[{mode}] stderr: {proc.stderr.strip()[-500:]}", flush=True)
                runs.append(json.loads(out.read_text()))
        if mode == "first":
            row = dict(runs[len(runs) // 2])
            for key in ("import_s", "make_s", "first_obs_s"):
                row[key] = round(statistics.median(r[key] for r in runs), 3)
            row["first_obs_s_runs"] = [r["first_obs_s"] for r in runs]
            firsts.append(row)
            print(row, flush=True)
            continue
        row = dict(runs[len(runs) // 2])
        for key in ("import_s", "load_s", "reward_kernel_s", "prepare_s", "start_s", "rss_mb"):
            row[key] = round(statistics.median(r[key] for r in runs), 3)
        row["replay_s"] = round(statistics.median(r["replay_s"] for r in runs), 6)
        row["steps_per_s"] = round(row["steps"] / row["replay_s"])
        row["steps_per_s_runs"] = [r["steps_per_s"] for r in runs]
        row["mismatches"] = max(r["mismatches"] for r in runs)
        if reference is not None:
            row["x_reference"] = round(row["steps_per_s"] / reference["steps_per_s"])
            row["x_reference_each"] = {r["setup"]: round(row["steps_per_s"] / r["steps_per_s"]) for r in references}
        rows.append(row)
        print({k: row[k] for k in ("mode", "steps_per_s", "steps_per_s_runs", "mismatches", "load_s", "prepare_s",
                                    "start_s", "jvm_started")}, flush=True)
    columns = ["mode", "steps", "searches", "unique_searches", "mismatches", "import_s", "load_s", "reward_kernel_s",
               "prepare_s", "start_s", "replay_s", "steps_per_s", "jvm_started", "rss_mb"]
    if reference is not None:
        columns.append("x_reference")
    shown = (references if reference is not None else []) + rows
    if reference is not None:
        columns.insert(1, "setup")
    if shown:
        print(table(shown, columns))
    payload = {
        "rows": rows,
        "first_observation": firsts,
        "conditions": f"fresh process per run ({args.repeat} runs, medians), cold query and page caches, warm OS file "
                      f"cache, shop compiled and index/postings exported beforehand; vector env {args.num_envs} slots; "
                      f"load_average_1min: the machine's load when a run ended (2 cores shared)",
    }
    if reference is not None:
        payload["reference"] = reference
        payload["references"] = references
        payload["reference_conditions"] = (
            f"the reference's WebAgentTextEnv (princeton-nlp/WebShop from {args.reference}) replayed the same "
            f"trajectories in a fresh process ({args.reference_repeat} run(s), median) right before ours: its JVM "
            f"started, spaCy model, products, goals and Lucene index loaded outside the timing (import_s, load_s), "
            f"random seeded 0 as for the golden outputs; each --reference-python is one set-up of the reference "
            f"(references: e.g. its pinned thefuzz 0.19.0 on difflib, and thefuzz 0.22 on rapidfuzz), reference is "
            f"the fastest of them; x_reference = our steps/s / the fastest reference's steps/s, x_reference_each "
            f"the ratio to each set-up, all from this run")
    path = save("replay", payload, Path(args.json) if args.json else None)
    print("wrote", path)
    if any(not r["results_page"] for r in firsts):
        sys.exit("the first search did not show a results page")
    if any(r["mismatches"] for r in rows) or (reference is not None and any(r["mismatches"] for r in references)):
        sys.exit("MISMATCHES against the golden trajectories")


if __name__ == "__main__":
    main()
