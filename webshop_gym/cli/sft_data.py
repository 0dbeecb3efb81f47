"""``webshop-gym sft-data`` (old name ``demos``): SFT-ready demonstrations, written by :func:`webshop_gym.evaluation.demos.make_demos`."""

from __future__ import annotations

import argparse
import json
import sys

from webshop_gym.evaluation.demos import make_demos, write_demos


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``webshop-gym demos``."""
    from webshop_gym.cli import argtypes as types
    from webshop_gym.cli.app import add_shop_arguments

    parser.add_argument("--policy", default="oracle", type=_teacher, metavar="POLICY",
                        help="teacher policy: oracle (default), rule, or openai:MODEL (a served model: its trajectories "
                             "that reach --min-reward are kept)")
    parser.add_argument("-n", "--num-goals", type=types.at_most(types.positive_int, types.MAX_COUNT), metavar="N",
                        help=f"the first N goals of the split (default: all; at most {types.MAX_COUNT:,})")
    parser.add_argument("--format", default="think-answer", choices=["think-answer", "react", "verl-agent"],
                        help="transcript format (default think-answer)")
    parser.add_argument("--out", required=True, metavar="FILE", type=types.output_file,
                        help="output JSONL file (missing folders are created below the working directory)")
    add_shop_arguments(parser)
    parser.add_argument("--split", default="train", choices=["train", "eval", "test", "all"], help="goals to demonstrate (default train)")
    parser.add_argument("--eval-fraction", type=types.fraction, default=0.1, metavar="F",
                        help="share in [0, 1) of target products held out as the demos' eval split (default 0.1)")
    parser.add_argument("--min-reward", type=types.probability, default=1.0, metavar="R",
                        help="keep trajectories scoring at least this, in [0, 1] (default 1.0)")
    parser.add_argument("--history", type=_history, default=-1, metavar="N",
                        help="earlier turns shown per prompt (default -1: the format's own; at most 1,000)")
    parser.add_argument("--num-envs", type=types.at_most(types.positive_int, types.MAX_ENVS), default=32, metavar="N",
                        help=f"parallel slots (default 32; at most {types.MAX_ENVS:,})")
    parser.add_argument("--max-steps", type=types.at_most(types.positive_int, types.MAX_STEPS), default=15, metavar="N",
                        help=f"step cap (default 15; at most {types.MAX_STEPS:,})")
    parser.add_argument("--seed", type=types.seed, default=0, metavar="SEED",
                        help="run seed and product-split seed (default 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    served = parser.add_argument_group("openai:MODEL teachers (the prompt is --format)")
    served.add_argument("--base-url", metavar="URL", type=types.base_url,
                        help="the API's root (default $OPENAI_BASE_URL; one of the two is required)")
    served.add_argument("--api-key-env", metavar="NAME", default="OPENAI_API_KEY",
                        help="environment variable holding the API key (default OPENAI_API_KEY)")
    served.add_argument("--timeout", metavar="SECONDS", type=types.timeout, default=60.0,
                        help=f"the deadline of one request in seconds: connecting, interim heads and the whole answer "
                             f"(default 60; at most {types.MAX_SECONDS:,})")
    served.add_argument("--max-retries", metavar="K", type=types.at_most(types.non_negative_int, types.MAX_RETRIES),
                        default=5, help="retries of a failing request (default 5; at most 100)")
    served.add_argument("--max-new-tokens", metavar="N", type=types.at_most(types.positive_int, types.MAX_TOKENS),
                        default=128, help=f"tokens per answer (default 128; at most {types.MAX_TOKENS:,})")


def _teacher(text: str) -> str:
    if text in ("oracle", "rule") or (text.startswith("openai:") and text[len("openai:"):].strip()):
        return text
    raise argparse.ArgumentTypeError(f"must be oracle, rule or openai:MODEL, got {text!r}")


def _history(text: str) -> int:
    from webshop_gym.cli.argtypes import MAX_STEPS

    value = int(text) if text.lstrip("-").isdigit() else None
    if value is None or value < -1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, or -1 for the format's own, got {text!r}")
    if value > MAX_STEPS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_STEPS:,} (turns of an episode), got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run ``webshop-gym demos``."""
    served = args.policy.startswith("openai:")
    kwargs = {}
    if served:
        kwargs = {"base_url": args.base_url, "api_key_env": args.api_key_env, "prompt": args.format,
                  "timeout": args.timeout, "max_retries": args.max_retries, "max_new_tokens": args.max_new_tokens}
    elif args.base_url is not None:
        from webshop_gym.error import Error

        raise Error(f"--base-url applies to openai:MODEL teachers only, not {args.policy!r}")
    demos = make_demos(
        shop=args.shop, policy=args.policy, n=args.num_goals, split=args.split, fmt=args.format,
        eval_fraction=args.eval_fraction, seed=args.seed, num_envs=args.num_envs, max_steps=args.max_steps,
        min_reward=args.min_reward, history=args.history, goals=args.goals, human_goals=args.human_goals,
        price_seed=args.price_seed, progress=not args.quiet, **kwargs,
    )
    write_demos(args.out, demos.records)
    counts = dict(demos.counts, out=str(args.out))
    if args.num_goals is not None and args.num_goals > counts["goals_available"]:
        print(f"note: the {counts['split']} split holds {counts['goals_available']} goals; all of them were used",
              file=sys.stderr)
    print(json.dumps(counts, indent=1))
    return 0
