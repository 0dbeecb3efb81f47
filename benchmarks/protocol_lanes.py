"""A protocol over many price seeds played by a local policy: wall time and the batch a policy is given.

verl-agent's validation plays 256 episodes on 128 shops (one per price seed).  ``eval`` plays
them in lanes (``webshop_gym/evaluation/lanes.py``), as many shops' vector envs in flight as
``--num-envs`` slots hold.  This times ``evaluate`` on that plan with the rule and oracle
policies and with a batch policy (the rule policy behind ``act_batch``, as ``hf:`` is a batch
policy), at 1 and 64 slots, and a plain eval of the 500 test goals at 16 and 64 slots (one
shop: the path a lane changes least).  Per case: the median wall time of ``--repeats`` calls
(the shop loaded and the kernels compiled before), the slots reported (``num_envs``), the env
steps, and for the batch policy its calls and the widest batch of live slots it was given.

Run it from the code before and after a change in one sitting (``--label``), e.g.::

    python benchmarks/protocol_lanes.py --shop DIR --label after
    git worktree add /tmp/before BASE && (cd /tmp/before && python ../main/benchmarks/protocol_lanes.py ...)

The 1k shop (``--shop``) is needed: the protocol pins its content.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shop", required=True, help="the 1k shop's folder (verl-agent pins its content)")
    parser.add_argument("--repeats", type=int, default=3, help="calls per case; the median is reported (default 3)")
    parser.add_argument("--label", default="now", help="a name for the code measured (before, after, ...)")
    parser.add_argument("--out", type=Path, help="JSON path (default benchmarks/results/protocol_lanes-LABEL.json)")
    args = parser.parse_args()

    from webshop_gym import load_shop
    from webshop_gym.agents.batch import SlotPolicies
    from webshop_gym.agents.policies.registry import make_policy
    from webshop_gym.evaluation.local import evaluate

    shop = load_shop(args.shop, progress=False)
    evaluate("rule", shop=shop, protocol="verl-agent", num_envs=64)  # kernels compiled, caches warm
    cases = [("verl-agent", "rule", 1), ("verl-agent", "rule", 64), ("verl-agent", "oracle", 64),
             ("verl-agent", "batch-rule", 1), ("verl-agent", "batch-rule", 64),
             ("test 500", "rule", 16), ("test 500", "rule", 64)]
    rows = []
    for plan, policy, slots in cases:
        times, batch, result = [], None, None
        for _ in range(args.repeats):
            batch = SlotPolicies(lambda: make_policy("rule"), name="batch-rule") if policy == "batch-rule" else None
            chosen = batch if batch is not None else policy
            kwargs = {"protocol": "verl-agent"} if plan == "verl-agent" else {"split": "test"}
            started = time.perf_counter()
            result = evaluate(chosen, shop=shop, num_envs=slots, keep_episodes=False, **kwargs)
            times.append(time.perf_counter() - started)
        rows.append({"plan": plan, "policy": policy, "--num-envs": slots, "num_envs": result["num_envs"],
                     "episodes": result["counts"]["episodes"], "score": round(result["score"], 3),
                     "env_steps": result["env_steps"], "wall_s": round(statistics.median(times), 3),
                     "batch calls": batch.calls if batch else "", "widest batch": batch.widest if batch else ""})
        print(table(rows[-1:], list(rows[-1])), flush=True)
    print()
    print(table(rows, list(rows[0])))
    conditions = (f"median of {args.repeats} calls of evaluate() per case, shop loaded and kernels compiled first; "
                  f"code: {args.label}")
    path = save(f"protocol_lanes-{args.label}", {"conditions": conditions, "rows": rows},
                args.out)
    print(f"json: {path}")


if __name__ == "__main__":
    main()
