"""Reset and step time through Gymnasium's own wrappers and vector envs, where the spaces are used.

The env's spaces are touched by ``gym.make``'s checker, ``SyncVectorEnv``'s batching and
``AsyncVectorEnv``'s pipes or shared memory.  Each row plays the same fixed script (search, open
the first result, buy) from ``--episodes`` resets and reports the median time per reset and per
step; ``AsyncVectorEnv`` is timed with ``shared_memory=False`` and, where the spaces allow it,
Gymnasium's default ``shared_memory=True``.

    python benchmarks/spaces.py --episodes 30 --label after
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import gymnasium as gym

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402

import webshop_gym  # noqa: E402,F401  (registers WebShop-v0)


def _action(obs: str, info: dict) -> str:
    actions = info["available_actions"] if isinstance(info, dict) and "available_actions" in info else None
    if actions is None or actions.get("has_search_bar"):
        return "search[" + info["instruction"].split(", and price")[0][:60] + "]"
    clickables = actions["clickables"]
    if "buy now" in clickables:
        return "click[buy now]"
    return "click[" + next(c for c in clickables if c.startswith("b0")) + "]"


def single(episodes: int) -> dict:
    env = gym.make("webshop_gym:WebShop-v0")
    resets, steps = [], []
    for k in range(episodes):
        t = time.perf_counter()
        obs, info = env.reset(seed=k)
        resets.append(time.perf_counter() - t)
        done = False
        while not done:
            action = _action(obs, info)
            t = time.perf_counter()
            obs, _, terminated, truncated, info = env.step(action)
            steps.append(time.perf_counter() - t)
            done = terminated or truncated
    env.close()
    return {"reset_ms": 1e3 * statistics.median(resets), "step_ms": 1e3 * statistics.median(steps)}


def vector(mode: str, n: int, episodes: int, **kwargs) -> dict:
    envs = gym.make_vec("webshop_gym:WebShop-v0", num_envs=n, vectorization_mode=mode, vector_kwargs=kwargs)
    resets, steps = [], []
    for k in range(episodes):
        t = time.perf_counter()
        obs, infos = envs.reset(seed=k)
        resets.append(time.perf_counter() - t)
        for _ in range(3):  # search, open, buy: every slot ends together (and autoresets)
            available = infos["available_actions"]
            slot_infos = [{"instruction": infos["instruction"][i],
                           "available_actions": {"has_search_bar": available["has_search_bar"][i],
                                                 "clickables": available["clickables"][i]}} for i in range(n)]
            actions = tuple(_action(obs[i], slot_infos[i]) for i in range(n))
            t = time.perf_counter()
            obs, _, _, _, infos = envs.step(actions)
            steps.append(time.perf_counter() - t)
    envs.close()
    return {"reset_ms": 1e3 * statistics.median(resets), "step_ms": 1e3 * statistics.median(steps)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--label", default="", help="a name for this code state (before/after)")
    args = parser.parse_args(argv)
    rows = [{"run": "gym.make (checker)", **single(args.episodes)},
            {"run": f"sync x{args.num_envs}", **vector("sync", args.num_envs, args.episodes)},
            {"run": f"async x{args.num_envs} shared_memory=False",
             **vector("async", args.num_envs, args.episodes, shared_memory=False)}]
    try:
        rows.append({"run": f"async x{args.num_envs} shared_memory=True (default)",
                     **vector("async", args.num_envs, args.episodes)})
    except Exception as exc:  # noqa: BLE001 - the spaces may not support it: say so in the table
        rows.append({"run": f"async x{args.num_envs} shared_memory=True (default)", "reset_ms": type(exc).__name__})
    print(table(rows, ["run", "reset_ms", "step_ms"]))
    save(f"spaces{'-' + args.label if args.label else ''}", {"label": args.label, "episodes": args.episodes, "rows": rows})


if __name__ == "__main__":
    main()
