"""Steps per second of the local vector env vs the Ray vector env with 1, 2 and 4 actors.

Every setup runs the same seeded batch with the same realistic action mix (searches built from
the instruction, so repeated queries hit the search cache; result clicks, option clicks, sub
pages, buys, ``< prev``/``next >``, invalid actions), chosen from each step's observations and
infos, so all setups see identical episodes (the script checks that their rewards agree).
Only ``env.step`` is timed: first ``--warmup`` steps from cold search caches (every actor has
its own cache), then ``--steps`` in the steady state, which the table reports.  The Ray hop's per-step overhead is reported two ways: the Ray env
with one actor minus the local env (ms per batch step), and the round trip of an empty Ray
actor call.  A local Ray cluster is started unless ``--address`` names one.

    python benchmarks/ray_scaling.py                  # 256 envs, text obs, 1/2/4 actors
    python benchmarks/ray_scaling.py --num-envs 64 --steps 100 --actors 1 2

Writes ``benchmarks/results/ray_scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import time
from pathlib import Path

import numpy as np

from webshop_gym import WebShopVectorEnv, load_shop

HERE = Path(__file__).resolve().parent
SUB_PAGES = ("click[description]", "click[features]", "click[reviews]")


def choose_actions(rng: np.random.Generator, infos: dict, n: int) -> list[str]:
    """A fixed, realistic mix of actions, drawn per slot from its page and valid actions."""
    actions = []
    for i in range(n):
        if not infos.get("_valid_actions", np.zeros(n, bool))[i]:
            actions.append("click[back to search]")  # an idle slot: never stepped anyway
            continue
        valid = list(infos["valid_actions"][i])
        page = infos["page"][i]
        u = rng.random()
        if page == "start" or (page == "results" and u > 0.95):
            words = str(infos["instruction"][i]).split()
            actions.append(f"search[{' '.join(words[: int(rng.integers(3, 7))])}]")
        elif u < 0.08:
            actions.append(str(rng.choice(["click[nothing here]", "buy[it]", "search[]", "click[]"])))
        elif page == "results":
            products = [a for a in valid if a not in ("click[back to search]", "click[next >]", "click[< prev]")]
            if products and u < 0.8:
                actions.append(str(rng.choice(products)))
            else:
                actions.append(str(rng.choice(valid)))
        elif page == "item":
            options = [a for a in valid if a not in ("click[back to search]", "click[< prev]", "click[buy now]", *SUB_PAGES)]
            if options and u < 0.45:
                actions.append(str(rng.choice(options)))
            elif u < 0.6:
                actions.append(str(rng.choice(SUB_PAGES)))
            elif u < 0.85:
                actions.append("click[buy now]")
            else:
                actions.append("click[< prev]")
        else:  # a sub page
            actions.append("click[< prev]" if u < 0.85 else "click[back to search]")
    return actions


def run(env, steps: int, warmup: int, seed: int) -> dict:
    """Step ``env`` with the action mix: ``warmup`` steps from cold caches, then ``steps`` timed ones.

    Both phases are timed.  Each process (the local env, every actor) has its own search cache,
    so the first phase shows the cost of cold caches and the second the steady state.
    """
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    obs, infos = env.reset(seed=seed)
    reset_ms = (time.perf_counter() - started) * 1000
    cold = elapsed = 0.0
    total_reward = 0.0
    episodes = 0
    payload = []
    for t in range(warmup + steps):
        actions = choose_actions(rng, infos, env.num_envs)
        started = time.perf_counter()
        obs, rewards, terminations, truncations, infos = env.step(actions)
        took = time.perf_counter() - started
        total_reward += float(rewards.sum())
        episodes += int((terminations | truncations).sum())
        if t < warmup:
            cold += took
            continue
        elapsed += took
        if t % 20 == 0:
            payload.append(len(pickle.dumps((obs, infos), protocol=5)))
    return {
        "reset_ms": round(reset_ms, 1),
        "cold_ms_per_step": round(cold / warmup * 1000, 2) if warmup else None,
        "ms_per_step": round(elapsed / steps * 1000, 2),
        "batch_steps_per_s": round(steps / elapsed, 1),
        "env_steps_per_s": round(steps * env.num_envs / elapsed, 0),
        "episodes": episodes,
        "reward_sum": round(total_reward, 6),
        "result_kb_per_step": round(float(np.mean(payload)) / 1024, 1) if payload else None,
    }


def empty_round_trip_ms(ray, calls: int = 300) -> float:
    """Round trip of an empty call to a Ray actor (the bare Ray hop)."""

    @ray.remote(num_cpus=0)
    class Echo:
        def ping(self, x=None):
            return x

    actor = Echo.remote()
    ray.get(actor.ping.remote())
    started = time.perf_counter()
    for _ in range(calls):
        ray.get(actor.ping.remote())
    took = (time.perf_counter() - started) / calls * 1000
    ray.kill(actor)
    return round(took, 3)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, default=256, help="slots in the batch (default 256)")
    parser.add_argument("--steps", type=int, default=150, help="steady-state batch steps per setup (default 150)")
    parser.add_argument("--warmup", type=int, default=100, help="batch steps from cold search caches first, timed apart (default 100)")
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4], help="Ray actor counts (default 1 2 4)")
    parser.add_argument("--observation-mode", default="text", help="text, text_rich, html or url (default text)")
    parser.add_argument("--shop", default=None, help="shop directory (default: the embedded 1,000-product shop)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--address", default=None, help="an existing Ray cluster (default: start a local one)")
    parser.add_argument("--num-cpus", type=int, default=4, help="logical CPUs of the local cluster (default 4)")
    parser.add_argument("--out", default=str(HERE / "results" / "ray_scaling.json"), help="JSON output file")
    args = parser.parse_args(argv)

    import ray

    from webshop_gym import WebShopRayVectorEnv, init_ray

    if args.address:
        init_ray(address=args.address, log_to_driver=False)
    else:
        init_ray(num_cpus=args.num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    load_before = os.getloadavg()
    shop = load_shop(args.shop, progress=False)
    shop.search("warm up")  # the driver's own JVM is not timed
    rows = []
    try:
        started = time.perf_counter()
        local = WebShopVectorEnv(args.num_envs, shop=shop, observation_mode=args.observation_mode)
        row = {"setup": "local vector env", "actors": 0, "start_s": round(time.perf_counter() - started, 2)}
        row.update(run(local, args.steps, args.warmup, args.seed))
        local.close()
        rows.append(row)
        print(f"local: {row['env_steps_per_s']:.0f} env-steps/s", flush=True)
        for n in args.actors:
            started = time.perf_counter()
            env = WebShopRayVectorEnv(args.num_envs, num_actors=n, shop=shop, observation_mode=args.observation_mode)
            row = {"setup": f"Ray, {n} actor{'s' if n > 1 else ''}", "actors": n, "start_s": round(time.perf_counter() - started, 2)}
            row.update(run(env, args.steps, args.warmup, args.seed))
            env.close()
            rows.append(row)
            print(f"ray x{n}: {row['env_steps_per_s']:.0f} env-steps/s", flush=True)
        hop_ms = empty_round_trip_ms(ray)
    finally:
        ray.shutdown()

    base = rows[0]
    identical = all(r["reward_sum"] == base["reward_sum"] and r["episodes"] == base["episodes"] for r in rows)
    one = next((r for r in rows if r["actors"] == 1), None)
    overhead = round(one["ms_per_step"] - base["ms_per_step"], 2) if one else None
    for r in rows:
        r["speedup_vs_local"] = round(r["env_steps_per_s"] / base["env_steps_per_s"], 2)

    header = f"{'setup':<18} {'env-steps/s':>11} {'ms/step':>8} {'x local':>8} {'cold ms/step':>12} {'start s':>8} {'KB/step':>8}"
    print()
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['setup']:<18} {r['env_steps_per_s']:>11.0f} {r['ms_per_step']:>8.2f} {r['speedup_vs_local']:>8.2f} "
            f"{r['cold_ms_per_step'] or 0:>12.2f} {r['start_s']:>8.2f} {r['result_kb_per_step'] or 0:>8.1f}"
        )
    print(f"(steady state over {args.steps} steps after {args.warmup} from cold search caches: 'cold ms/step')")
    print(f"\nRay hop: +{overhead} ms per batch step ({args.num_envs} envs, 1 actor vs local); "
          f"empty actor call {hop_ms} ms round trip")
    print(f"identical episodes and rewards in every setup: {identical}")
    print(f"1-min load average before/after: {load_before[0]:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    cores = os.cpu_count()
    if max(args.actors) > (cores or 1):
        print(f"note: this machine has {cores} cores; {max(args.actors)} actors (plus the driver) oversubscribe it")

    result = {
        "config": {k: getattr(args, k) for k in ("num_envs", "steps", "warmup", "actors", "observation_mode", "seed", "num_cpus")}
        | {"shop": str(shop.path), "products": len(shop.catalog), "cluster": args.address or "local"},
        "machine": {
            "cores": cores,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "ray": ray.__version__,
            "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        },
        "rows": rows,
        "ray_overhead_ms_per_step": overhead,
        "empty_actor_call_ms": hop_ms,
        "identical": identical,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
