"""``webshop-gym eval``: evaluate a policy over a split (Score, SR, steps, breakdown), locally or served.

The flags and their checks live here; the work is :func:`webshop_gym.evaluation.local.evaluate`
(and :func:`webshop_gym.evaluation.served.evaluate_served` for ``openai:MODEL`` policies).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from webshop_gym.analysis.taxonomy import TAGS
from webshop_gym.error import Error
from webshop_gym.evaluation.local import evaluate, format_table
from webshop_gym.evaluation.plan import parse_shard
from webshop_gym.protocols import get_protocol


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``webshop-gym eval``."""
    from webshop_gym.cli import argtypes as types
    from webshop_gym.cli.app import add_shop_arguments

    parser.add_argument("--policy", default="rule", metavar="NAME", type=policy_spec,
                        help="random, rule, oracle, hf:PATH (a local Hugging Face model folder) or openai:MODEL "
                             "(a model behind an OpenAI-compatible chat endpoint: vLLM, SGLang, llama.cpp, a hosted "
                             "API) (default rule)")
    add_shop_arguments(parser)
    parser.add_argument("--split", choices=["test", "eval", "train", "all"], help="goal split (default test)")
    parser.add_argument("--num-envs", type=types.at_most(types.positive_int, types.MAX_ENVS), default=16, metavar="N",
                        help=f"parallel slots in all (default 16; at most {types.MAX_ENVS:,}); a protocol over many "
                             "price seeds keeps as many of their shops in flight as these slots hold")
    parser.add_argument("-n", "--num-goals", type=types.at_most(types.positive_int, types.MAX_COUNT), metavar="N",
                        help=f"only the first N goals of the split (at most {types.MAX_COUNT:,})")
    parser.add_argument("--seed", type=types.seed, default=0, metavar="SEED",
                        help="run seed (default 0); with --protocol also the protocol's seed when it takes one "
                             "(verl-agent: the run's env.seed; ragen: seed.val)")
    parser.add_argument("--max-steps", type=types.at_most(types.positive_int, types.MAX_STEPS), metavar="N",
                        help=f"step cap per episode (default 15; at most {types.MAX_STEPS:,})")
    from webshop_gym.protocols import protocol_names

    protocol = parser.add_argument_group("evaluation protocols (webshop-gym protocols; docs/protocols.md)")
    protocol.add_argument("--protocol", metavar="NAME", type=_protocol_name,
                          help="play a named protocol exactly: its goals, price seeds, step cap, reward transform and "
                               f"metrics ({', '.join(protocol_names())}); --split, --goals, --num-goals, --max-steps, "
                               "--human-goals and --price-seed are the protocol's")
    protocol.add_argument("--validation", type=types.at_most(types.non_negative_int, 10_000), metavar="K",
                          help="the K-th validation of a protocol that draws goals per validation (verl-agent; default 0; at most 10,000)")
    protocol.add_argument("--protocol-file", metavar="FILE", type=types.existing_file,
                          help="the protocol's goal-id file in its family's format (seed-fairness, agentboard; agentgym: "
                               "your copy instead of the shipped one)")
    protocol.add_argument("--samples", type=types.at_most(types.positive_int, 1000), default=1, metavar="K",
                          help="play every goal K times, each with its own recorded seed (sampling policies); "
                               "reports mean@K and pass@K beside Score and SR, every 95%% interval over goals, not "
                               "episodes (default 1; at most 1,000)")
    parser.add_argument("--num-workers", type=types.at_most(types.non_negative_int, types.MAX_WORKERS), default=0,
                        metavar="N", help="processes stepping the vector env: W >= 2 steps one shard here and the "
                                          "others in W - 1 spawned workers (default 0: all in this process; at most "
                                          f"{types.MAX_WORKERS})")
    parser.add_argument("--json", metavar="FILE", type=_json_target,
                        help="write the result as JSON ('-': to stdout, the table goes to stderr)")
    parser.add_argument("--episodes", action="store_true", help="include per-goal records in the JSON")
    parser.add_argument("--out", metavar="FILE", type=types.output_file,
                        help="write the run to this file: settings, shop fingerprint, every episode and step "
                             "(observations, model outputs, rewards); view with `serve --runs`, check with "
                             "`replay`, summarise with `report`")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    hf = parser.add_argument_group("hf:PATH and openai:MODEL policies")
    hf.add_argument("--prompt", choices=["think-answer", "verl-agent", "react", "tools"],
                    help="prompt format (default: with --protocol, the protocol's own family format, e.g. verl-agent "
                         "for verl-agent, react for AgentGym/AgentBench/ETO, think-answer for RAGEN; else "
                         "think-answer); another format than the protocol's is recorded and shown as not its "
                         "published setting; tools: chat completions with the search/click tools of the TRL "
                         "environment (openai:MODEL policies only)")
    hf.add_argument("--max-new-tokens", type=types.at_most(types.positive_int, types.MAX_TOKENS), metavar="N",
                    help=f"tokens per answer (default: the protocol's, else 128; at most {types.MAX_TOKENS:,})")
    decode = hf.add_mutually_exclusive_group()
    decode.add_argument("--sample", action="store_true", default=None,
                        help="sample instead of greedy decoding (default: with --protocol, the protocol's decoding, "
                             "e.g. sampling at temperature 0.4 for verl-agent; else greedy); another decoding than "
                             "the protocol's is recorded and shown as not its published setting")
    decode.add_argument("--greedy", dest="sample", action="store_false",
                        help="greedy decoding, whatever the protocol's")
    hf.add_argument("--temperature", type=types.temperature, metavar="T",
                    help="sampling temperature > 0, at most 100 (default: the protocol's, else 1.0)")
    hf.add_argument("--top-p", type=types.probability, metavar="P",
                    help="nucleus sampling mass in [0, 1] (default: the protocol's, else 1.0)")
    hf.add_argument("--top-k", type=types.at_most(types.non_negative_int, types.MAX_TOKENS), default=0, metavar="K",
                    help=f"sample among the k likeliest tokens (default 0: all; at most {types.MAX_TOKENS:,})")
    hf.add_argument("--closest", action="store_true", help="map inadmissible answers to the closest admissible action")
    hf.add_argument("--device", metavar="DEVICE", help="cuda, cpu, ... (default: cuda when available)")
    hf.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32", "none"],
                    help="weights' dtype (default auto)")
    hf.add_argument("--max-prompt-tokens", type=types.at_most(types.positive_int, types.MAX_TOKENS), metavar="N",
                    help=f"left-truncate prompts to N tokens (at most {types.MAX_TOKENS:,})")
    hf.add_argument("--batch-size", type=types.at_most(types.positive_int, types.MAX_ENVS), metavar="N",
                    help=f"prompts per forward batch (default: all slots; at most {types.MAX_ENVS:,})")
    add_served_arguments(parser)


def policy_spec(text: str) -> str:
    """``--policy``: a baseline name or ``hf:PATH`` with PATH a local folder (checked at the parser)."""
    from webshop_gym.agents.policies.registry import BASELINES
    from webshop_gym.error import close_match

    if text.startswith("openai:"):
        if not text[len("openai:"):].strip():
            raise argparse.ArgumentTypeError("openai:MODEL needs the served model's name, e.g. openai:Qwen/Qwen2.5-7B-Instruct")
        return text
    if text.startswith("hf:"):
        from webshop_gym.cli import argtypes as types

        types.model_dir(text[3:])  # says what the folder lacks
        return text
    if text not in BASELINES:
        hint = close_match(text, BASELINES)
        raise argparse.ArgumentTypeError(
            f"unknown policy {text!r}; expected one of {', '.join(BASELINES)}, hf:PATH or openai:MODEL"
            + (f" (did you mean {hint!r}?)" if hint else ""))
    return text


def _protocol_name(text: str) -> str:
    """``--protocol``: a shipped protocol's name (an unknown one lists them)."""
    from webshop_gym.error import UnknownProtocol

    try:
        get_protocol(text)
    except UnknownProtocol as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


#: eval's flags a protocol decides, with their defaults (a flag given with --protocol is refused).
PROTOCOL_FIXED = (("--split", "split", None), ("--goals", "goals", None), ("--num-goals", "num_goals", None),
                  ("--max-steps", "max_steps", None), ("--human-goals", "human_goals", False),
                  ("--price-seed", "price_seed", 0))


def check_protocol_arguments(args: argparse.Namespace) -> None:
    """Refuse flags that contradict ``--protocol`` (one line), and protocol flags without it."""
    if args.protocol is None:
        given = [flag for flag, value in (("--validation", args.validation), ("--protocol-file", args.protocol_file))
                 if value is not None]
        if given:
            raise Error(f"{' and '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to --protocol NAME only")
        return
    clash = [flag for flag, key, default in PROTOCOL_FIXED if getattr(args, key) != default]
    if clash:
        raise Error(f"{', '.join(clash)} contradict{'s' if len(clash) == 1 else ''} --protocol {args.protocol}: the "
                    "protocol fixes its goals, price seeds, step cap and shop (see `webshop-gym protocols show "
                    f"{args.protocol}`); drop {'it' if len(clash) == 1 else 'them'}")


def _json_target(text: str) -> str:
    from webshop_gym.cli import argtypes as types

    return text if text == "-" else types.output_file(text)


def run(args: argparse.Namespace) -> int:
    """Run ``webshop-gym eval``."""
    hf_kwargs: dict[str, Any] = {}
    check_served_arguments(args)
    check_protocol_arguments(args)
    if args.protocol is None:  # the plain defaults (with --protocol these are the protocol's)
        args.split, args.max_steps = args.split or "test", args.max_steps or 15
    if args.policy.startswith("openai:"):
        hf_kwargs = served_kwargs(args)
    elif args.policy.startswith("hf:"):
        hf_kwargs = dict(prompt=args.prompt, max_new_tokens=args.max_new_tokens, do_sample=args.sample,
                         temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,  # None: the protocol's
                         closest=args.closest, device=args.device, dtype=None if args.dtype == "none" else args.dtype,
                         max_prompt_tokens=args.max_prompt_tokens, batch_size=args.batch_size)
    result = evaluate(
        args.policy, shop=args.shop, split=args.split, num_envs=args.num_envs, seed=args.seed,
        max_steps=args.max_steps or 15, goals=args.goals, human_goals=args.human_goals, price_seed=args.price_seed,
        num_goals=args.num_goals, num_workers=args.num_workers, progress=not args.quiet,
        keep_episodes=args.episodes, out=args.out, run_settings={"arguments": _arguments(args)},
        protocol=args.protocol, validation=args.validation or 0, protocol_file=args.protocol_file,
        samples=args.samples, **hf_kwargs,
    )
    if "tokens" in result and (args.price_input is not None or args.price_output is not None):
        from webshop_gym.analysis.figures import cost

        result["cost"] = cost(result["tokens"], args.price_input, args.price_output)
        if result.get("billed"):
            result["cost_billed"] = cost(result["billed"]["tokens"], args.price_input, args.price_output)
    if args.out:
        result["tags"] = _tag_counts(args.out)
    table = format_table(result)
    text = json.dumps(result, indent=1, default=_json_default)
    status = _unscored_status(result)
    if args.json == "-":
        print(table, file=sys.stderr)
        print(text)
        return status
    print(table)
    summary = {k: result[k] for k in ("policy", "split", "score", "sr", "intervals", "intervals_withheld", "sr_reachable", "unreachable",
                                      "mean_steps", "valid_rate", "breakdown", "errored", "tokens", "requests",
                                      "retries", "cost", "billed", "cost_billed", "tags", "protocol") if k in result}
    print("json: " + json.dumps(_rounded(summary), default=_json_default))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return status


def _tag_counts(path: str) -> dict[str, int]:
    """Episodes per failure tag of the run just written (the viewer's and the report's taxonomy, read from the file)."""
    from webshop_gym.runs.index import RunIndex

    index = RunIndex(path)
    index.refresh()
    counts = index.tag_counts()
    return {tag: counts[tag] for tag in ("solved", *TAGS) if counts.get(tag)}


#: Digits of the printed ``json:`` line, as the table rounds (the --json file keeps every digit).
_DIGITS = {"score": 1, "sr": 1, "sr_reachable": 1, "valid_rate": 1, "mean_steps": 2, "purchase_rate": 1, "low": 1,
           "high": 1, "per_episode": 0, "cost": 4}


def _rounded(value, key: str = ""):
    if isinstance(value, dict):
        return {k: _rounded(v, k) for k, v in value.items()}
    if isinstance(value, float):
        return round(value, _DIGITS.get(key, 3))
    return value


def _unscored_status(result: dict) -> int:
    """1 (and one line on stderr) when every episode errored: the run has no figure to report."""
    errored = int(result.get("errored") or 0)
    if errored and not result["counts"]["episodes"]:
        print(f"webshop-gym eval: no episode could be scored: all {errored} errored (the model's calls failed; "
              "see the run file's 'error' fields, then --resume)", file=sys.stderr)
        return 1
    return 0


def _arguments(args: argparse.Namespace) -> dict:
    """The command's parsed arguments (JSON-ready) for the run file."""
    return {k: v for k, v in sorted(vars(args).items()) if k not in ("func", "debug") and not callable(v)}


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _shard_type(text: str) -> tuple[int, int]:
    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _concurrency_type(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if not 1 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"must be an integer in 1-1024, got {text!r}")
    return value


def add_served_arguments(parser) -> None:
    """``webshop-gym eval``'s arguments of ``openai:MODEL`` policies."""
    from webshop_gym.cli import argtypes as types

    group = parser.add_argument_group("openai:MODEL policies (also --prompt, --max-new-tokens, --sample, "
                                      "--temperature, --top-p, --closest)")
    group.add_argument("--base-url", metavar="URL", type=types.base_url,
                       help="the API's root, e.g. http://127.0.0.1:8000/v1 or https://api.openai.com/v1 (default "
                            "$OPENAI_BASE_URL; one of the two is required: the API key is sent only there)")
    group.add_argument("--max-completion-tokens", metavar="N", type=types.at_most(types.positive_int, types.MAX_TOKENS),
                       help="send max_completion_tokens=N instead of max_tokens (APIs that refuse max_tokens, "
                            f"e.g. OpenAI's reasoning models); replaces --max-new-tokens; at most {types.MAX_TOKENS:,}")
    group.add_argument("--api-key-env", metavar="NAME",
                       help="environment variable holding the API key (default OPENAI_API_KEY; a local server "
                            "needs none)")
    group.add_argument("--concurrency", metavar="N", type=_concurrency_type,
                       help="episodes (and model requests) in flight, 1-1024 (default 8)")
    group.add_argument("--timeout", metavar="SECONDS", type=types.timeout,
                       help=f"the deadline of one request in seconds: connecting, interim heads and the whole answer "
                            f"(default 60; at most {types.MAX_SECONDS:,})")
    group.add_argument("--max-retries", metavar="K", type=types.at_most(types.non_negative_int, types.MAX_RETRIES),
                       help="retries of a failing request: 429, 5xx, timeouts, dropped connections, malformed "
                            "bodies; exponential backoff with jitter, Retry-After honoured (default 5; at most 100)")
    group.add_argument("--http-client", choices=["builtin", "openai"], default="builtin",
                       help="how requests travel: builtin (pooled asyncio HTTP/1.1 with keep-alive, ~0.1 ms of CPU "
                            "per request; the default) or openai (the official client, one thread per request in "
                            "flight, 1.3-2.2 ms per request); both retry and record alike (an endpoint behind an HTTP "
                            "proxy always goes through openai)")
    group.add_argument("--no-stop", action="store_true",
                       help="do not send the format's closing tag as a stop sequence (APIs that refuse `stop`)")
    group.add_argument("--resume", action="store_true",
                       help="continue the run in --out: check its settings (and protocol), play only its missing and "
                            "errored episodes, rewrite it in goal order (a protocol's plan order)")
    group.add_argument("--shard", metavar="SHARD", type=_shard_type,
                       help="I/N: play only block I of N (0-based) of the goals (with --protocol or --samples: of the "
                            "plan's episodes); `report` reads the N shard files as one run")
    group.add_argument("--price-input", metavar="USD", type=types.price,
                       help="price per million prompt tokens, at most 1,000,000 (the summary shows the cost)")
    group.add_argument("--price-output", metavar="USD", type=types.price,
                       help="price per million completion tokens")


def check_served_arguments(args) -> None:
    """Refuse ``openai:MODEL`` flags given to another policy, and sampling flags without ``--sample``."""
    served = str(args.policy).startswith("openai:")
    if getattr(args, "prompt", None) == "tools" and not served:
        raise Error(f"--prompt tools needs a served model (openai:MODEL) that calls tools, not {args.policy!r}")
    if not served:
        given = [flag for flag, value in (("--base-url", args.base_url), ("--concurrency", args.concurrency),
                                          ("--resume", args.resume), ("--shard", args.shard),
                                          ("--price-input", args.price_input), ("--price-output", args.price_output),
                                          ("--no-stop", args.no_stop), ("--timeout", args.timeout),
                                          ("--max-retries", args.max_retries), ("--api-key-env", args.api_key_env),
                                          ("--http-client", args.http_client != "builtin" or None),
                                          ("--max-completion-tokens", args.max_completion_tokens)) if value is not None and value is not False]
        if given:
            raise Error(f"{', '.join(given)} apply to openai:MODEL policies only, not {args.policy!r}")
        return
    _check_sampling_flags(args)
    if args.top_k:
        raise Error("--top-k is not part of the OpenAI API; openai:MODEL policies take --temperature and --top-p")
    if args.resume and not args.out:
        raise Error("--resume needs --out RUN.jsonl (the run to continue)")


def _check_sampling_flags(args) -> None:
    """Sampling flags need sampling: ``--sample``, or a protocol that samples (``--greedy`` refuses them)."""
    sampling = args.sample
    if sampling is None and getattr(args, "protocol", None) is not None:
        sampling = bool((get_protocol(args.protocol).data.get("decoding") or {}).get("do_sample"))
    given = [flag for flag, value in (("--temperature", args.temperature), ("--top-p", args.top_p),
                                      ("--top-k", args.top_k or None)) if value is not None]
    if given and not sampling:
        why = ("--greedy asks for greedy decoding" if args.sample is False else
               f"protocol {args.protocol}'s decoding is greedy" if args.protocol else "without it, decoding is greedy")
        raise Error(f"{', '.join(given)} need --sample ({why}: temperature 0)")


def served_kwargs(args) -> dict:
    """:func:`~webshop_gym.evaluation.local.evaluate` keyword arguments of an ``openai:MODEL`` policy."""
    return {"base_url": args.base_url, "api_key_env": args.api_key_env or "OPENAI_API_KEY", "prompt": args.prompt,
            "max_new_tokens": args.max_new_tokens, "do_sample": args.sample, "temperature": args.temperature,
            "top_p": args.top_p, "closest": args.closest,  # None: the protocol's (evaluation.plan.choose_decoding)
            "timeout": 60.0 if args.timeout is None else args.timeout,
            "max_retries": 5 if args.max_retries is None else args.max_retries, "stop": not args.no_stop,
            "http_client": args.http_client,
            "concurrency": args.concurrency or 8, "resume": args.resume, "shard": args.shard,
            **({"request_options": {"max_completion_tokens": args.max_completion_tokens}}
               if args.max_completion_tokens else {})}
