"""Prompt builders: batched == unbatched, chat messages, history windows, idle slots."""

from __future__ import annotations

import numpy as np
import pytest

from webshop_gym import WebShopVectorEnv
from webshop_gym.agents import (
    EpisodeHistory,
    ReActPrompt,
    ThinkAnswerPrompt,
    Turn,
    VerlAgentPrompt,
    admissible_actions,
    make_prompt,
    strip_instruction,
    unbatch_infos,
)
from webshop_gym.agents.policies import RulePolicy

FORMATS = [ThinkAnswerPrompt, VerlAgentPrompt, ReActPrompt]


@pytest.fixture(scope="module")
def rollout_steps(default_shop):
    """Three steps of 4 rule-policy slots: [(observations, batched infos)], plus histories."""
    env = WebShopVectorEnv(4, shop=default_shop, split="test", eval_mode=True)
    obs, infos = env.reset(seed=0)
    policies = [RulePolicy() for _ in range(4)]
    history = EpisodeHistory(4)
    steps = []
    for _ in range(3):
        per = unbatch_infos(infos, 4)
        history.observe(infos)
        for p, info in zip(policies, per, strict=True):
            if info["steps"] == 0:
                p.reset(info)
        steps.append((obs, infos, [list(history[i]) for i in range(4)]))
        actions = [p.act(o, i) for p, o, i in zip(policies, obs, per, strict=True)]
        for i in range(4):
            history.record(i, obs[i], actions[i], None, per[i]["valid_actions"])
        obs, _, _, _, infos = env.step(actions)
    env.close()
    return steps


def test_unbatch_infos_respects_masks():
    infos = {
        "steps": np.array([0, 2, 0]), "_steps": np.array([True, True, False]),
        "idle": np.array([False, False, True]), "_idle": np.array([False, False, True]),
        "available_actions": {"clickables": np.array([["a"], ["b"], None], dtype=object),
                              "_clickables": np.array([True, True, False])},
        "_available_actions": np.array([True, True, False]),
    }
    per = unbatch_infos(infos)
    assert per == [{"steps": 0, "available_actions": {"clickables": ["a"]}},
                   {"steps": 2, "available_actions": {"clickables": ["b"]}},
                   {"idle": True}]
    assert type(per[0]["steps"]) is int
    assert unbatch_infos(per) == per and unbatch_infos(per) is not per


@pytest.mark.parametrize("cls", FORMATS)
def test_batched_equals_unbatched(cls, rollout_steps):
    prompt = cls()
    for obs, infos, histories in rollout_steps:
        per = unbatch_infos(infos, len(obs))
        batch = prompt.build_batch(obs, infos, histories)
        assert batch == [prompt.build(o, i, h) for o, i, h in zip(obs, per, histories, strict=True)]
        assert batch == prompt.build_batch(obs, per, histories)
        chats = prompt.messages_batch(obs, infos, histories)
        assert chats == [prompt.messages(o, i, h) for o, i, h in zip(obs, per, histories, strict=True)]
        for chat, text in zip(chats, batch, strict=True):
            assert text == "\n\n".join(m["content"] for m in chat)


@pytest.mark.parametrize("cls", FORMATS)
def test_chat_messages_shape(cls, rollout_steps):
    prompt = cls()
    obs, infos, histories = rollout_steps[-1]
    per = unbatch_infos(infos)
    for o, info, history in zip(obs, per, histories, strict=True):
        messages = prompt.messages(o, info, history)
        assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in messages)
        roles = [m["role"] for m in messages]
        assert roles[-1] == "user"
        if cls is VerlAgentPrompt:
            assert roles == ["user"]
            assert f"Your task is to: {info['instruction']}." in messages[0]["content"]
        else:
            assert roles[0] == "system" and prompt.describe() in messages[0]["content"]
            assert roles[1:] == ["user", "assistant"] * len(history) + ["user"]
            assert f"Instruction: {info['instruction']}" in messages[1]["content"]
        for action in admissible_actions(info):
            shown = prompt.search_display if action == "search[<query>]" else action
            assert shown in messages[-1]["content"]


def test_think_answer_transcripts_extend_step_by_step(rollout_steps):
    prompt = ThinkAnswerPrompt()
    (o1, i1, h1), (o2, i2, h2) = rollout_steps[0], rollout_steps[1]
    p1, p2 = unbatch_infos(i1), unbatch_infos(i2)
    for slot in range(4):
        first = prompt.messages(o1[slot], p1[slot], h1[slot])
        second = prompt.messages(o2[slot], p2[slot], h2[slot])
        assert second[: len(first)] == first
        assert second[len(first)]["role"] == "assistant"
        assert prompt.parse(second[len(first)]["content"], p1[slot]["valid_actions"]) == h2[slot][-1].action.lower()


def test_history_windows():
    info = {"instruction": "i need bacon", "valid_actions": ["click[buy now]"], "steps": 5}
    turns = [Turn(f"Instruction: [SEP] i need bacon [SEP] page {k}", f"click[{k}]") for k in range(5)]
    verl = VerlAgentPrompt()  # history 2 by default
    text = verl.build("Instruction: [SEP] i need bacon [SEP] now", info, turns)
    assert "[Observation 4: ''page 3'', Action 4: 'click[3]']" in text
    assert "[Observation 5: ''page 4'', Action 5: 'click[4]']" in text
    assert "page 2" not in text and "already taken 5 step(s)" in text and "at step 6" in text
    assert "'search[<your query>]'," in VerlAgentPrompt().build("x", {"instruction": "y", "valid_actions": ["search[<query>]"]})
    assert "Prior to this step" not in VerlAgentPrompt(history=0).build("x", info, turns)
    think = ThinkAnswerPrompt(history=1)
    messages = think.messages("Instruction: [SEP] i need bacon [SEP] now", info, turns)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"].startswith("Instruction: i need bacon\nObservation: page 4")
    assert messages[2]["content"] == "<think></think><answer>click[4]</answer>"
    assert len(ThinkAnswerPrompt().messages("x", info, turns)) == 2 + 2 * 5
    with pytest.raises(ValueError):
        ThinkAnswerPrompt(history=-2)


def test_idle_slots_and_reference_infos():
    for cls in FORMATS:
        assert cls().build("", {"idle": True}) == ""
        assert cls().messages("", {"idle": True}) == []
    reference_info = {"instruction": "x", "available_actions": {"has_search_bar": True, "clickables": ["search"]}}
    assert admissible_actions(reference_info) == ["search[<query>]"]
    reference_info = {"available_actions": {"has_search_bar": False, "clickables": ["back to search", "b0abc"]}}
    assert admissible_actions(reference_info) == ["click[back to search]", "click[b0abc]"]


def test_strip_instruction_and_make_prompt():
    obs = "WebShop [SEP] Instruction: [SEP] i need bacon [SEP] Search"
    assert strip_instruction(obs, "i need bacon") == "Search"
    assert strip_instruction("Back to Search [SEP] i need bacon", "i need bacon") == "Back to Search [SEP] i need bacon"
    assert ThinkAnswerPrompt(keep_instruction=True).observation(obs, {"instruction": "i need bacon"}) == obs
    assert isinstance(make_prompt("verl-agent"), VerlAgentPrompt)
    assert make_prompt("react", history=3).history == 3
    with pytest.raises(ValueError, match="did you mean"):
        make_prompt("think-answr")
    assert ThinkAnswerPrompt(system="Be brief.").messages(obs, {"instruction": "i need bacon"})[0]["content"] == "Be brief."
    assert ThinkAnswerPrompt().stop == ("</answer>",) and VerlAgentPrompt().stop == ("</action>",) and ReActPrompt().stop == ()


def test_episode_history_resets_on_new_episodes():
    history = EpisodeHistory(2)
    history.record(0, "o", "click[a]")
    history.record(1, "o", "click[b]")
    history.observe([{"steps": 0}, {"steps": 1}])
    assert history[0] == [] and [t.action for t in history[1]] == ["click[b]"]
    history.record(3, "o", "click[c]")  # grows on demand
    assert len(history) == 4
    history.reset()
    assert all(not history[i] for i in range(4))


def test_adapters_import_no_torch():
    import json
    import subprocess
    import sys

    code = ("import sys, json; import webshop_gym.agents, webshop_gym.evaluation.local, webshop_gym.evaluation.demos; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []
