"""Train a Qwen model on WebShop with TRL's GRPOTrainer (one GPU machine, vLLM for generation).

The environment is ``webshop_gym.integrations.trl.WebShopToolEnv``: the model shops through two
function-calling tools, ``search(query)`` and ``click(label)``, and the episode's WebShop reward
(owned by the env through ``get_reward``) is the GRPO reward.  Each dataset row is one goal; TRL
repeats it ``--num-generations`` times, so a GRPO group plays one goal.

Defaults follow the published GRPO/GiGPO WebShop runs (verl-agent): Qwen2.5-1.5B-Instruct,
16 goals x 8 rollouts per step, 150 steps, learning rate 1e-6, KL coefficient 0.01, at most 15
actions per episode, an invalid-action penalty of 0.1, the real 1,000-product shop with
synthetic goals, training on every goal after the first 500 and evaluation on the test split (the
first 500 goals) every 5 steps.  How this
run differs from verl-agent's (one multi-turn completion with tool calls instead of one prompt per
step with a short history) is in docs/training.md.

Install (GPU machine):  pip install 'webshop-gym[trl]' vllm

    # vLLM inside the training process (one GPU)
    python examples/trl_grpo.py --shop /data/webshop-1k --vllm-mode colocate

    # or a vLLM server on a second GPU
    CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Qwen2.5-1.5B-Instruct &
    CUDA_VISIBLE_DEVICES=0 python examples/trl_grpo.py --shop /data/webshop-1k --vllm-mode server

    # Qwen3 (thinking off by default; --thinking turns it on)
    python examples/trl_grpo.py --model Qwen/Qwen3-1.7B --shop /data/webshop-1k

    # check every setting, the shop and the datasets without loading a model (runs on a CPU)
    python examples/trl_grpo.py --shop /data/webshop-1k --dry-run

``--shop`` is a folder with the reference's ``items_shuffle_1000.json``,
``items_ins_v2_1000.json`` and ``items_human_ins.json`` (the shop the papers use); without it,
webshop-gym's embedded 1,000-product synthetic shop is used.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse type: a number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def existing_dir(text: str) -> str:
    """An argparse type: an existing directory."""
    if not Path(text).expanduser().is_dir():
        raise argparse.ArgumentTypeError(f"no such directory: {text}")
    return text


def existing_file(text: str) -> str:
    """An argparse type: an existing file."""
    if not Path(text).expanduser().is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    return text


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="trl_grpo.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    data = parser.add_argument_group("shop and goals")
    data.add_argument("--shop", type=existing_dir, help="reference-format shop folder (default: the embedded shop)")
    data.add_argument("--goals", type=existing_file, help="a frozen goal-set file (default: goals built from the shop)")
    data.add_argument("--human-goals", action="store_true", help="human instructions instead of synthetic goals")
    data.add_argument("--price-seed", type=non_negative_int, default=0, help="seeds prices and price caps (default 0)")
    data.add_argument("--max-actions", type=positive_int, default=15, help="actions per episode (default 15)")
    data.add_argument("--train-goals", choices=["train", "not-test"], default="not-test",
                      help="goals trained on: 'not-test' = every goal after the first 500 (verl-agent's), "
                           "'train' = the reference's train split (from goal 1500)")
    data.add_argument("--eval-goals", type=non_negative_int, default=500,
                      help="test goals evaluated (the test split is the first 500; 0: no evaluation)")

    model = parser.add_argument_group("model and generation")
    model.add_argument("--model", default="Qwen/Qwen2.5-1.5B-Instruct", help="a Qwen2.5 or Qwen3 chat model")
    model.add_argument("--thinking", action="store_true", help="Qwen3 only: let the model think before each call")
    model.add_argument("--vllm-mode", choices=["colocate", "server", "off"], default="colocate",
                       help="vLLM in this process (colocate), a `trl vllm-serve` server, or plain transformers")
    model.add_argument("--vllm-server", default="http://127.0.0.1:8000", help="the server's URL (server mode)")
    model.add_argument("--vllm-gpu-memory", type=positive_float, default=0.6,
                       help="GPU memory fraction for vLLM in colocate mode (default 0.6)")
    model.add_argument("--max-completion-length", type=positive_int, default=8192,
                       help="tokens of one rollout: the model's turns and the pages (default 8192)")
    model.add_argument("--temperature", type=positive_float, default=1.0, help="sampling temperature (default 1.0)")

    train = parser.add_argument_group("GRPO")
    train.add_argument("--goals-per-step", type=positive_int, default=16, help="GRPO groups per step (default 16)")
    train.add_argument("--num-generations", type=positive_int, default=8, help="rollouts per goal (default 8)")
    train.add_argument("--per-device-batch", type=positive_int, default=8,
                       help="rollouts per forward/backward pass (default 8)")
    train.add_argument("--steps", type=positive_int, default=150, help="training steps (default 150)")
    train.add_argument("--learning-rate", type=positive_float, default=1e-6, help="default 1e-6")
    train.add_argument("--kl", type=non_negative_float, default=0.01, help="KL coefficient beta (default 0.01)")
    train.add_argument("--invalid-action-penalty", type=non_negative_float, default=0.1,
                       help="reward subtracted per inadmissible tool call (default 0.1)")
    train.add_argument("--eval-every", type=positive_int, default=5, help="steps between evaluations (default 5)")
    train.add_argument("--output-dir", default="runs/trl-grpo-webshop", help="checkpoints and logs")
    train.add_argument("--report-to", default="none", help="'none', 'wandb', 'tensorboard', ... (default none)")
    train.add_argument("--seed", type=non_negative_int, default=0, help="default 0")
    parser.add_argument("--cpu", action="store_true",
                        help="train on the CPU without vLLM (for tests of this script with a tiny local model; "
                             "far too slow for real training)")
    parser.add_argument("--dry-run", action="store_true",
                        help="build the shop, the datasets and the trainer config, print them, load no model")
    return parser


def check_settings(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Settings that depend on each other (argparse checks each alone)."""
    rollouts = args.goals_per_step * args.num_generations
    if args.num_generations < 2:
        parser.error("--num-generations must be at least 2 (GRPO compares rollouts of one goal)")
    if rollouts % args.per_device_batch:
        parser.error(f"--per-device-batch ({args.per_device_batch}) must divide the rollouts of a step "
                     f"(--goals-per-step x --num-generations = {rollouts})")
    if args.thinking and "qwen3" not in args.model.lower():
        parser.error("--thinking applies to Qwen3 models only")
    if args.cpu and args.vllm_mode != "off":
        parser.error("--cpu needs --vllm-mode off (vLLM runs on a GPU)")


def make_factory(args: argparse.Namespace):
    """The zero-argument environment factory TRL calls once per rollout slot."""
    from webshop_gym.integrations.trl import WebShopToolEnv

    # split=None: the datasets choose the goals (train rows for training, test rows for evaluation)
    return functools.partial(WebShopToolEnv, shop=args.shop, goals=args.goals, split=None,
                             human_goals=args.human_goals, price_seed=args.price_seed, max_steps=args.max_actions)


def make_datasets(args: argparse.Namespace):
    """(train, eval) datasets: the ``--train-goals`` goals; the first ``--eval-goals`` test goals (or None)."""
    from webshop_gym.integrations.trl import webshop_dataset

    common = dict(shop=args.shop, goals=args.goals, human_goals=args.human_goals, price_seed=args.price_seed,
                  as_dataset=True)
    if args.train_goals == "train":
        train = webshop_dataset("train", **common)
    else:  # the eval and train splits together: goals 500.. (verl-agent trains on these)
        import datasets

        train = datasets.concatenate_datasets([webshop_dataset("eval", **common), webshop_dataset("train", **common)])
    evaluation = webshop_dataset("test", limit=args.eval_goals, **common) if args.eval_goals else None
    return train, evaluation


def make_config(args: argparse.Namespace, on_gpu: bool):
    """The GRPOConfig of the run."""
    from trl import GRPOConfig

    rollouts = args.goals_per_step * args.num_generations
    vllm = {}
    if args.vllm_mode != "off":
        vllm = dict(use_vllm=True, vllm_mode=args.vllm_mode)
        if args.vllm_mode == "colocate":
            vllm.update(vllm_gpu_memory_utilization=args.vllm_gpu_memory)
        else:
            vllm.update(vllm_server_base_url=args.vllm_server)
    evaluation = dict(eval_strategy="steps", eval_steps=args.eval_every, num_generations_eval=1,
                      per_device_eval_batch_size=args.per_device_batch) if args.eval_goals else {}
    return GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=args.per_device_batch,
        gradient_accumulation_steps=rollouts // args.per_device_batch,  # one optimizer step per generation batch
        num_generations=args.num_generations,
        learning_rate=args.learning_rate,
        beta=args.kl,
        epsilon=0.2,
        scale_rewards="group",
        loss_type="dapo",  # token-level mean over the batch, as verl's default "token-mean"
        temperature=args.temperature,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_actions,
        chat_template_kwargs={"enable_thinking": args.thinking},
        bf16=on_gpu,  # bf16 autocast over float32 weights; a CPU dry run builds the same config without it
        use_cpu=args.cpu,
        activation_checkpointing=not args.cpu,
        logging_steps=1,
        save_steps=50,
        report_to=args.report_to,
        seed=args.seed,
        **vllm,
        **evaluation,
    )


def invalid_action_penalty(coefficient: float):
    """A reward function: minus ``coefficient`` per inadmissible tool call of the rollout."""

    def penalty(environments, **kwargs) -> list[float]:
        return [-coefficient * env.invalid_actions for env in environments]

    penalty.__name__ = "invalid_action_penalty"
    return penalty


def main(argv: list[str] | None = None) -> int:
    """Run (or, with ``--dry-run``, check) the training."""
    parser = build_parser()
    args = parser.parse_args(argv)
    check_settings(parser, args)
    try:
        import torch
        import trl  # noqa: F401
    except ImportError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc.name or 'trl'} is not installed: pip install 'webshop-gym[trl]'\n")
    from webshop_gym.error import Error

    on_gpu = torch.cuda.is_available() and not args.cpu
    if not args.dry_run and not on_gpu and not args.cpu:
        parser.exit(2, f"{parser.prog}: error: training needs a CUDA GPU; --dry-run checks the settings on a CPU\n")
    try:
        factory = make_factory(args)
        train, evaluation = make_datasets(args)
        probe = factory()
        probe.reset(**train[0])  # the env and the rows agree on the shop settings
        config = make_config(args, on_gpu)
    except (Error, ValueError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")

    plan = {
        "model": args.model,
        "shop": str(probe.shop.path),
        "goal_set": probe.shop.fingerprint()["goal_set"],
        "train_goals": len(train),
        "first_train_goal": int(train[0]["goal_index"]),
        "eval_goals": 0 if evaluation is None else len(evaluation),
        "rollouts_per_step": config.generation_batch_size,
        "goals_per_step": config.generation_batch_size // config.num_generations,
        "num_generations": config.num_generations,
        "steps": config.max_steps,
        "learning_rate": config.learning_rate,
        "beta": config.beta,
        "max_completion_length": config.max_completion_length,
        "max_actions": args.max_actions,
        "invalid_action_penalty": args.invalid_action_penalty,
        "vllm": args.vllm_mode,
        "device": "gpu" if on_gpu else "cpu",
        "bf16": config.bf16,
    }
    print(json.dumps(plan, indent=1))
    if args.dry_run:
        print("dry run: settings, shop and datasets are valid; no model was loaded")
        return 0

    import os
    import warnings

    from trl import GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16
    # TRL 1.16 reads a property that transformers 5.24 deprecates, once per generation: not ours to fix
    warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    reward_funcs = [invalid_action_penalty(args.invalid_action_penalty)] if args.invalid_action_penalty else None
    trainer = GRPOTrainer(
        model=args.model,
        reward_funcs=reward_funcs,
        args=config,
        train_dataset=train,
        eval_dataset=evaluation,
        environment_factory=factory,
    )
    trainer.train()
    trainer.save_model(args.output_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
