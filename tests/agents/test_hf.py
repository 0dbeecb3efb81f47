"""The Hugging Face policy: a tiny random GPT-2 and a local tokenizer, run through the vector env.

Skipped when torch/transformers are missing (``pip install 'webshop-gym[hf]'``).
"""

from __future__ import annotations

import sys

import pytest

from webshop_gym import WebShopVectorEnv
from webshop_gym.error import DependencyNotInstalled
from webshop_gym.evaluation.local import evaluate, rollout

START_INFO = {"instruction": "i need a red soap", "valid_actions": ["search[<query>]"], "steps": 0, "page": "start"}
START_OBS = "WebShop [SEP] Instruction: [SEP] i need a red soap [SEP] Search"


def test_missing_torch_raises_with_the_pip_line(monkeypatch):
    from webshop_gym.agents.hf import require_torch

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'webshop-gym\[hf\]'"):
        require_torch()


def test_left_padding(make_tiny_model, tiny_tokenizer):
    from webshop_gym.agents import HFPolicy

    policy = HFPolicy(make_tiny_model(), tiny_tokenizer, device="cpu", max_new_tokens=4)
    enc = policy.encode(["i need a red soap and bacon", "red soap"])
    ids, mask = enc["input_ids"], enc["attention_mask"]
    assert ids.shape == mask.shape and ids.shape[0] == 2
    assert mask[0].all() and not mask[1, 0] and mask[1, -1]
    assert (ids[1][mask[1] == 0] == tiny_tokenizer.pad_token_id).all()
    assert tiny_tokenizer.padding_side == "right"  # restored after encoding
    truncated = HFPolicy(make_tiny_model(), tiny_tokenizer, device="cpu", max_prompt_tokens=3).encode(["a b c d e f"])
    assert truncated["input_ids"].shape[1] == 3


def test_greedy_batch_matches_single_prompts(make_tiny_model, tiny_tokenizer):
    from webshop_gym.agents import HFPolicy

    policy = HFPolicy(make_tiny_model(), tiny_tokenizer, device="cpu", max_new_tokens=6)
    prompts = ["i need a red soap", "Instruction : find me gluten free bacon with size : 4 ounce , and price lower than 40.00 dollars"]
    together = policy.generate(prompts)
    alone = [policy.generate([p])[0] for p in prompts]
    assert together == alone  # left padding with position ids: each row continues its own prompt
    assert policy.generate(prompts) == together  # greedy decoding is deterministic


def test_sampling_is_seeded(make_tiny_model, tiny_tokenizer):
    from webshop_gym.agents import HFPolicy

    def sample(seed):
        policy = HFPolicy(make_tiny_model(), tiny_tokenizer, device="cpu", max_new_tokens=12, do_sample=True, seed=seed)
        return policy.generate(["i need a red soap"] * 4)

    assert sample(1) == sample(1)
    assert sample(1) != sample(2)
    with pytest.raises(ValueError):
        HFPolicy(make_tiny_model(), tiny_tokenizer, do_sample=True, temperature=0)


def test_full_batch_of_episodes_through_the_vector_env(make_tiny_model, tiny_tokenizer, default_shop):
    from webshop_gym.agents import HFPolicy

    def run():
        policy = HFPolicy(make_tiny_model(), tiny_tokenizer, device="cpu", max_new_tokens=8, max_prompt_tokens=256)
        env = WebShopVectorEnv(4, shop=default_shop, split="test", max_steps=3, eval_mode=True)
        try:
            episodes = rollout(env, policy, seed=0, num_goals=6, record=True)
        finally:
            env.close()
        return policy, episodes

    policy, episodes = run()
    assert [e["goal_index"] for e in episodes] == list(range(6))
    for episode in episodes:
        assert 1 <= episode["steps"] <= 3 and (episode["purchased"] or episode["truncated"])
        assert len(episode["trajectory"]) == episode["steps"]
        assert all(isinstance(step["action"], str) for step in episode["trajectory"])
    assert len(policy.last) == 4 and any(p is not None for p in policy.last)
    shown = [p for p in policy.last_prompts if p is not None]
    assert shown and all(p.startswith("You are a shopping agent") for p in shown)
    _, again = run()
    assert [[s["action"] for s in e["trajectory"]] for e in again] == [[s["action"] for s in e["trajectory"]] for e in episodes]


class _Output:
    def __init__(self, logits, cache):
        self.logits = logits
        self.cache = cache

    def __contains__(self, key):
        return key == "cache"

    def __getitem__(self, key):
        return getattr(self, key)


def _scripted_model(torch, tokenizer, text):
    """A stand-in LM that writes ``text`` (then EOS) whatever the prompt is."""
    script = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] * 64

    class Scripted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.anchor = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids=None, attention_mask=None, position_ids=None, cache=None, use_cache=True):
            done = 0 if cache is None else cache
            logits = torch.full((input_ids.shape[0], input_ids.shape[1], len(tokenizer)), -1e4)
            logits[:, -1, script[done]] = 0.0
            return _Output(logits, done + 1)

    return Scripted()


@pytest.mark.parametrize(
    ("prompt", "answer", "expected"),
    [
        ("think-answer", "<think> the search box </think> <answer> search [ red soap ] </answer> click [ buy now ]", "search[red soap]"),
        ("verl-agent", "<think> ok </think> <action> search [ red soap ] </action> search", "search[red soap]"),
        ("react", "Thought : search Action : search [ red soap ]", "search[red soap]"),
    ],
)
def test_answers_are_cut_at_the_stop_tag_and_parsed(hf_stack, tiny_tokenizer, prompt, answer, expected):
    torch, _ = hf_stack
    from webshop_gym.agents import HFPolicy

    policy = HFPolicy(_scripted_model(torch, tiny_tokenizer, answer), tiny_tokenizer, prompt=prompt, device="cpu", max_new_tokens=40)
    actions = policy.act_batch([START_OBS, "", START_OBS], [START_INFO, {"idle": True}, START_INFO])
    assert actions == [expected, "", expected]
    assert policy.last[1] is None and policy.last[0].valid
    if prompt != "react":
        assert policy.last_responses[0].replace(" ", "").endswith(f"</{policy.prompt.answer_tag}>")
        assert policy.last_responses[0].count("search") == 1 + (prompt == "think-answer")
    assert [t.action for t in policy.history[0]] == [expected]
    policy.act_batch([START_OBS], [dict(START_INFO, steps=1)])
    assert len(policy.history[0]) == 2
    policy.act_batch([START_OBS], [START_INFO])  # steps == 0: a new episode
    assert len(policy.history[0]) == 1
    policy.reset()
    assert policy.act(START_OBS, START_INFO) == expected


def test_chat_template_and_local_loading(make_tiny_model, tiny_tokenizer, tmp_path, default_shop):
    from webshop_gym.agents import HFPolicy

    model = make_tiny_model()
    tiny_tokenizer.save_pretrained(tmp_path)
    model.save_pretrained(tmp_path)
    policy = HFPolicy.from_pretrained(tmp_path, device="cpu", max_new_tokens=3, dtype="float32")
    assert not policy.chat
    policy.tokenizer.chat_template = "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}<assistant>"
    chat_policy = HFPolicy(policy.model, policy.tokenizer, device="cpu", max_new_tokens=3)
    assert chat_policy.chat
    rendered = chat_policy.render(START_OBS, START_INFO)
    assert rendered.startswith("<system> You are a shopping agent") and rendered.endswith("<assistant>")
    assert len(chat_policy.act_batch([START_OBS], [START_INFO])) == 1
    result = evaluate(f"hf:{tmp_path}", shop=default_shop, num_envs=2, num_goals=2, max_steps=2,
                      max_new_tokens=3, max_prompt_tokens=128, device="cpu")
    assert result["counts"]["episodes"] == 2 and result["policy"] == f"hf:{tmp_path}"
    with pytest.raises(FileNotFoundError):
        HFPolicy.from_pretrained(tmp_path / "missing")


def _ragen_small(goals: int = 1):
    import copy

    from webshop_gym.protocols import Protocol, get_protocol

    data = copy.deepcopy(get_protocol("ragen-small").data)
    data["test"] = {"list": {"shuffle_seed": 233, "permutation_seed": 42}, "indices": {"range": [0, goals]}}
    data.pop("train", None)
    return Protocol(data, "")


@pytest.mark.parametrize(("answer", "steps", "turns", "truncated", "ended"), [
    ("<think> red soap </think>", 0, 12, False, "out of turns"),  # no answer: every reply spends a turn, no action
    ("<think> red soap </think> <answer> search [ red soap ] </answer>", 9, 9, True, None),  # the 9 actions end it first
])
def test_an_hf_policy_plays_ragen_turns_in_the_local_loop(hf_stack, tiny_tokenizer, real_dir, answer, steps, turns,
                                                          truncated, ended):
    """Issue 53 item 2: the local lanes read the model's replies as RAGEN's turns (ragen-small: 12 turns, 9 actions)."""
    torch, _ = hf_stack
    from webshop_gym.agents import HFPolicy

    # decoding as ragen-small's (sampling at 0.5, 400 new tokens): the script's logits leave one token possible
    policy = HFPolicy(_scripted_model(torch, tiny_tokenizer, answer), tiny_tokenizer, device="cpu", do_sample=True,
                      temperature=0.5, max_new_tokens=400)
    result = evaluate(policy, shop=str(real_dir), protocol=_ragen_small(), num_envs=1)
    episode, = result["episodes_detail"]
    assert (episode["steps"], episode["turns"], episode["truncated"], episode["reward"]) == (steps, turns, truncated, 0.0)
    assert episode.get("ended") == ended
    assert result["protocol_record"]["deviations"] == []
    # the replies without an action were asked again at step 0: the episode's history was kept
    assert len(policy.history[0]) == turns
