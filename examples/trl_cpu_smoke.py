"""GRPO on WebShop with TRL, on a CPU in about a minute, with nothing downloaded: the smoke test of a set-up.

    pip install 'webshop-gym[trl]'
    python examples/trl_cpu_smoke.py --steps 2

It trains ``GRPOTrainer(environment_factory=WebShopToolEnv)`` for a few steps, exactly as
``examples/trl_grpo.py`` does on a GPU, but with a model small enough for a CPU: a byte-level BPE
tokenizer trained here on the shop's own strings, a 1-layer Qwen2 with random weights, the Qwen2.5
chat template that TRL ships (so TRL attaches its tool-call parser), and constrained sampling (a
logits processor that lets the random model emit only well-formed WebShop tool calls: search the
instruction, open a product, buy).  It prints the logged rewards of each step: the WebShop reward
and ``unfinished_episodes``, the share of rollouts whose completion budget ran out before the
episode ended (logged with weight 0).  The test suite trains with the same pieces.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile

import torch

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ASSISTANT_START = "<|im_start|>assistant\n"
TOOL_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.S)
LABELS = re.compile(r"click\(label\) with label one of (\[.*\])")
INSTRUCTION = re.compile(r"Instruction: (.*)")


def corpus(shop, extra: list[str]) -> list[str]:
    """Strings the tokenizer learns merges from: instructions, titles and the fixed prompt texts."""
    texts = list(extra)
    texts += list(shop.goals.instruction[:400])
    texts += list(shop.catalog.title[:400])
    texts += [asin.lower() for asin in shop.catalog.asin[:400]]
    return texts


def build_tokenizer(texts: list[str], chat_template: str, vocab_size: int = 2000):
    """A byte-level BPE tokenizer (lossless on any text) with Qwen's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left",
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def candidate_calls(context: str) -> list[str]:
    """The tool calls the scripted policy may make next, from the text the model has seen.

    The latest page is the last tool response, else the user message that ``reset`` extended.
    Search with the instruction's words on the start page; click any product on a results page;
    click "buy now" on a product page; once the episode is over, only end the turn.
    """
    responses = TOOL_RESPONSE.findall(context)
    page = responses[-1] if responses else context
    if "The episode is over" in page or "not admissible" in page:
        return []
    if "Admissible actions: search(query)" in page:
        instruction = INSTRUCTION.search(context).group(1)
        words = re.sub(r"[^a-z0-9 ]", " ", instruction.lower()).split()
        return [_call("search", query=" ".join(words[:8]))]
    labels = json.loads(LABELS.search(page).group(1))
    if "buy now" in labels:
        return [_call("click", label="buy now")]
    products = [label for label in labels if re.fullmatch(r"b0[a-z0-9]{8}", label)]
    return [_call("click", label=label) for label in products]


def _call(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


class ToolCallConstraint:
    """A logits processor: only tokens that keep the turn a prefix of an allowed tool call, then EOS.

    It re-reads each row's text at every step (the rows are the trainer's rollouts, in whatever
    order it batches them), so it needs no bookkeeping of which rollout is which.
    """

    def __init__(self, tokenizer):
        self.decode = tokenizer.backend_tokenizer.decode  # the Rust decoder: no per-id Python checks
        self.eos = tokenizer.eos_token_id
        self.im_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
        self.by_first: dict[str, list[tuple[str, int]]] = {}
        for token_id in range(len(tokenizer)):
            piece = self.decode([token_id], skip_special_tokens=False)
            if piece and token_id not in tokenizer.all_special_ids and "\ufffd" not in piece:
                self.by_first.setdefault(piece[0], []).append((piece, token_id))
        self.calls = 0
        self._calls: dict[tuple, list[str]] = {}  # page tokens -> allowed calls (a page is re-read every token)

    def allowed(self, calls: list[str], turn: str) -> list[int]:
        """Token ids that keep ``turn`` (this turn's text so far) a prefix of one of ``calls``, or EOS after one."""
        out = set()
        for call in calls:
            if not call.startswith(turn):
                continue
            rest = call[len(turn):]
            if not rest:
                out.add(self.eos)
                continue
            out.update(token_id for piece, token_id in self.by_first.get(rest[0], ()) if rest.startswith(piece))
        return sorted(out) or [self.eos]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Mask every token but those that keep each row's turn on an allowed tool call."""
        self.calls += 1
        mask = torch.full_like(scores, float("-inf"))
        for row, ids in enumerate(input_ids.tolist()):
            # Only the last two messages matter: the page (a tool response, or the user message that
            # reset() extended, which holds the instruction) and the assistant turn being generated.
            turn_start = page_start = None
            for i in range(len(ids) - 1, -1, -1):
                if ids[i] == self.im_start:
                    if turn_start is None:
                        turn_start = i
                    else:
                        page_start = i
                        break
            key = tuple(ids[page_start:turn_start])
            calls = self._calls.get(key)
            if calls is None:
                calls = self._calls[key] = candidate_calls(self.decode(list(key), skip_special_tokens=False))
            turn = self.decode(ids[turn_start:], skip_special_tokens=False).removeprefix(ASSISTANT_START)
            mask[row, self.allowed(calls, turn)] = 0.0
        return scores + mask


def build_model(tokenizer, constraint: ToolCallConstraint | None, seed: int = 0):
    """A 1-layer Qwen2 with random weights whose ``generate`` always applies ``constraint`` (if any)."""
    from transformers import LogitsProcessorList, Qwen2Config, Qwen2ForCausalLM

    class ConstrainedQwen2(Qwen2ForCausalLM):
        def generate(self, *args, **kwargs):
            kwargs["logits_processor"] = LogitsProcessorList([constraint])
            return super().generate(*args, **kwargs)

    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192, tie_word_embeddings=True,
        bos_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = (Qwen2ForCausalLM if constraint is None else ConstrainedQwen2)(config)
    finally:
        torch.random.set_rng_state(state)
    return model


def tokenizer_for(shop):
    """The tokenizer, trained on the shop's strings and the texts TRL will show the model."""
    from transformers.utils import get_json_schema
    from trl.chat_template_utils import qwen2_5_chat_template

    from webshop_gym.integrations.trl import TASK_PROMPT, WebShopToolEnv

    env = WebShopToolEnv()
    texts = [TASK_PROMPT, qwen2_5_chat_template, json.dumps([get_json_schema(env.search), get_json_schema(env.click)]),
             env.reset(goal_index=1500), env.search("bird feeder")]
    return build_tokenizer(corpus(shop, texts), qwen2_5_chat_template)


def main(argv: list[str] | None = None) -> list[dict]:
    """Train ``--steps`` GRPO steps on the train split; print and return the logged rewards of each step."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps (default 2)")
    parser.add_argument("--goals", type=int, default=2, help="train goals, one GRPO group each (default 2)")
    parser.add_argument("--out", default=None, help="the trainer's output folder (default: a temporary one)")
    args = parser.parse_args(argv)
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from webshop_gym.integrations.trl import (
        WebShopToolEnv,
        shared_shop,
        unfinished_episodes,
        webshop_dataset,
    )

    torch.set_num_threads(1)
    tokenizer = tokenizer_for(shared_shop())
    logged: list[dict] = []

    class Rewards(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            rewards = {k: v for k, v in (logs or {}).items() if k.startswith("rewards/") and k.endswith("/mean")}
            if rewards:
                logged.append(rewards)
                print(f"step {state.global_step}: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(rewards.items())))

    with tempfile.TemporaryDirectory() as scratch:
        config = GRPOConfig(
            output_dir=args.out or scratch, per_device_train_batch_size=4, num_generations=4, max_steps=args.steps,
            max_completion_length=2048, max_tool_calling_iterations=6, learning_rate=1e-3, logging_steps=1,
            report_to="none", use_cpu=True, bf16=False, activation_checkpointing=False, save_strategy="no",
            disable_tqdm=True, seed=0, reward_weights=[0.0],
        )
        trainer = GRPOTrainer(model=build_model(tokenizer, ToolCallConstraint(tokenizer)), args=config,
                              train_dataset=webshop_dataset("train", limit=args.goals), processing_class=tokenizer,
                              environment_factory=WebShopToolEnv, reward_funcs=[unfinished_episodes],
                              callbacks=[Rewards()])
        trainer.train()
    return logged


if __name__ == "__main__":
    main()
