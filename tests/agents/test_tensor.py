"""The tensor adapter: fixed-size candidates, masks, token ids on a device, indices back to actions."""

from __future__ import annotations

import pytest

from webshop_gym import WebShopVectorEnv


@pytest.fixture(scope="module")
def item_step(default_shop):
    """A 3-slot vector env whose slots sit on a start page, a results page and an item page."""
    env = WebShopVectorEnv(3, shop=default_shop, split="test", eval_mode=True)
    obs, infos = env.reset(seed=0)
    obs, _, _, _, infos = env.step(["", "search[boots]", "search[boots]"])
    second = infos["available_actions"]["clickables"][2][2]
    obs, _, _, _, infos = env.step(["", "", f"click[{second}]"])
    env.close()
    return obs, infos


def test_candidates_mask_and_ids(hf_stack, tiny_tokenizer, item_step, default_shop):
    torch, _ = hf_stack
    from webshop_gym.agents import TensorAdapter, unbatch_infos

    obs, infos = item_step
    per = unbatch_infos(infos)
    adapter = TensorAdapter(tiny_tokenizer, num_candidates=24, max_length=12, device="cpu", observation_length=64)
    batch = adapter.encode(obs, infos)
    n, k, length = 3, 24, 12
    assert batch.mask.shape == (n, k) and batch.mask.dtype == torch.bool and batch.mask.device.type == "cpu"
    assert batch.input_ids.shape == (n, k, length) and batch.input_ids.dtype == torch.long
    assert batch.attention_mask.shape == (n, k, length)
    assert batch.observation_ids.shape == (n, 64) and batch.observation_mask.shape == (n, 64)
    query = per[0]["instruction"].split(", and price lower than")[0].lower()
    assert batch.actions[0][0] == f"search[{query}]" and batch.mask[0].tolist() == [True] + [False] * (k - 1)
    for slot in (1, 2):
        valid = per[slot]["valid_actions"]
        assert batch.actions[slot][: len(valid)] == valid
        assert batch.mask[slot].sum().item() == len(valid)
    # masked-out candidates attend to nothing; real ones to at least one token
    assert batch.attention_mask[~batch.mask].sum().item() == 0
    assert (batch.attention_mask[batch.mask].sum(-1) > 0).all()
    # the ids decode back to the candidate's words (right padding)
    words = tiny_tokenizer.decode(batch.input_ids[2, 0][batch.attention_mask[2, 0] == 1])
    assert words.replace(" ", "") == batch.actions[2][0].replace(" ", "")
    # indices back to actions
    choice = torch.tensor([0, 1, batch.actions[2].index("click[buy now]")])
    assert adapter.to_actions(batch, choice) == [f"search[{query}]", per[1]["valid_actions"][1], "click[buy now]"]
    with pytest.raises(ValueError, match="mask"):
        batch.to_actions([1, 0, 0])
    with pytest.raises(ValueError):
        batch.to_actions([0, 0])


def test_overflow_keeps_navigation(hf_stack, item_step):
    from webshop_gym.agents import TensorAdapter, unbatch_infos

    obs, infos = item_step
    info = unbatch_infos(infos)[2]
    valid = info["valid_actions"]
    adapter = TensorAdapter(num_candidates=3)
    kept, dropped = adapter.candidates(info)
    assert len(kept) == 3 and dropped == len(valid) - 3
    assert "click[buy now]" in kept and "click[< prev]" in kept and "click[back to search]" in kept
    assert kept == [a for a in valid if a in kept]  # page order
    batch = adapter.encode(obs, infos)
    assert batch.input_ids is None and batch.overflow[2] == dropped and batch.mask.shape == (3, 3)


def test_idle_slots(hf_stack):
    from webshop_gym.agents import TensorAdapter

    batch = TensorAdapter(num_candidates=4).encode(["", "x"], [{"idle": True}, {"instruction": "i need soap", "valid_actions": ["search[<query>]"]}])
    assert batch.mask.tolist() == [[False] * 4, [True, False, False, False]]
    assert batch.to_actions([0, 0]) == ["", "search[i need soap]"]
    with pytest.raises(ValueError):
        TensorAdapter(num_candidates=0)
