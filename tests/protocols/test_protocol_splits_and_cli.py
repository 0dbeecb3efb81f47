"""A protocol's train goals as the envs' split and TRL's dataset; the ``protocols`` command (issue 30)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from webshop_gym import WebShopEnv, WebShopVectorEnv
from webshop_gym.cli.app import main
from webshop_gym.error import ShopMismatch, TestGoalsRefused, UnknownProtocol
from webshop_gym.integrations.trl import WebShopToolEnv, webshop_dataset
from webshop_gym.protocols import ProtocolSplit, get_protocol, goal_ids, protocol_names


def test_a_protocols_train_goals_are_an_env_split(real_shop):
    env = WebShopEnv(shop=real_shop, split="verl-agent-500:train")
    assert env.engine.goal_range.tolist() == list(range(500, len(real_shop.goals)))
    drawn = {env.reset(seed=s)[1]["goal_index"] for s in range(40)}
    assert min(drawn) >= 500
    envs = WebShopVectorEnv(4, shop=real_shop, split="ragen:train")
    obs, infos = envs.reset(seed=0)
    assert set(infos["goal_index"].tolist()) <= set(goal_ids(real_shop, "ragen:train").tolist())


def test_test_goals_are_refused_unless_allowed(real_shop):
    with pytest.raises(TestGoalsRefused, match="pass allow_test_goals=True"):
        WebShopEnv(shop=real_shop, split="verl-agent-500:test")
    with pytest.raises(TestGoalsRefused, match=r"holds 6,910 of the 6,910 goals .* use 'verl-agent-500:train'"):
        WebShopEnv(shop=real_shop, split="verl-agent:train")
    env = WebShopEnv(shop=real_shop, split="verl-agent-500:test", allow_test_goals=True)
    assert env.engine.goal_range.tolist() == list(range(500))
    assert len(goal_ids(real_shop, ProtocolSplit("verl-agent", "train", seed=3), allow_test_goals=True)) == 6910


def test_bad_protocol_splits(real_shop, default_shop):
    with pytest.raises(UnknownProtocol, match="known protocols"):
        WebShopEnv(shop=real_shop, split="verl:train")
    with pytest.raises(ValueError, match="must be 'train' or 'test'"):
        WebShopEnv(shop=real_shop, split="verl-agent-500:eval")
    with pytest.raises(ShopMismatch, match="needs the 1k release"):
        WebShopEnv(shop=default_shop, split="verl-agent-500:train")


def test_trl_dataset_and_env_take_a_protocols_train_goals(real_shop):
    rows = webshop_dataset(protocol="verl-agent-500", shop=real_shop, as_dataset=False, limit=3)
    assert [r["goal_index"] for r in rows] == [500, 501, 502]
    with pytest.raises(TestGoalsRefused):
        webshop_dataset("test", protocol="verl-agent-500", shop=real_shop, as_dataset=False)
    rows = webshop_dataset("test", protocol="verl-agent-500", shop=real_shop, as_dataset=False, allow_test_goals=True)
    assert len(rows) == 500
    env = WebShopToolEnv(shop=real_shop, split="verl-agent-500:train")
    env.reset(goal_index=600)
    with pytest.raises(Exception, match="not in this env's split 'verl-agent-500:train' \\(6,410 goals\\)"):
        env.reset(goal_index=3)


def test_sampling_from_an_id_array_follows_the_weights(real_shop):
    ids = np.array([5, 9, 700])
    rng = np.random.default_rng(0)
    drawn = [real_shop.goals.sample(rng, ids) for _ in range(300)]
    assert set(drawn) <= {5, 9, 700} and len(set(drawn)) == 3


# -- the command ----------------------------------------------------------------------------------


def test_protocols_lists_one_line_each(capsys):
    assert main(["protocols"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len([x for x in lines if x and not x.startswith(("aliases:", " ", "[needs"))]) == len(protocol_names())
    # the presets whose goal ids come from a file the user provides are flagged, with what to pass (issue 56)
    flagged = {x.split()[0] for x in lines if x.endswith("  [needs --protocol-file]")}
    assert flagged == {name for name in protocol_names() if get_protocol(name).needs_file}
    assert not flagged or any(x.startswith("[needs --protocol-file]: ") for x in lines)
    assert lines[-1].startswith("aliases: ") and "agenttuning = agentbench" in lines[-1]
    line = next(x for x in lines if x.startswith("verl-agent "))
    for part in ("shop 1k", "synthetic", "n  256", "cap  15", "SR/Score", "langfengQ/verl-agent@796ed31"):
        assert part in line


def test_protocols_show_prints_the_card(capsys):
    assert main(["protocols", "show", "webshop-paper"]) == 0
    out = capsys.readouterr().out
    for part in ("webshop-paper (version 1)", "shop: the full release", "goal ids: 0-499", "step cap: 100",
                 "definition digest:", "fingerprint: give --shop DIR", "princeton-nlp/WebShop baseline_models/test.py:130 @ 64fa2a5c15c7",
                 "observation: text_rich", "prompt: none (the family fixes no prompt)", "decided here"):
        assert part in out
    assert main(["protocols", "show", "verl-agent", "--seed", "0", "--validation", "1", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["resolution"]["validation"] == 1 and len(card["resolution"]["episodes"]) == 256
    assert card["resolution"]["episodes"][0]["draw"] == 2
    # a card's long lines wrap (issue 56: verl-agent's 256 episodes were one 5,631-character line)
    assert main(["protocols", "show", "verl-agent"]) == 0
    card = capsys.readouterr().out
    assert max(len(line) for line in card.splitlines() if " " in line.strip()) <= 100
    episodes = re.split(r"\n  (?=\S)", card.split("  episodes (draw/worker: position -> goal @ price seed): ")[1])[0]
    assert len(" ".join(episodes.split()).split(", ")) == 256  # every episode is still there, wrapped


def test_protocols_show_with_the_shop_prints_the_fingerprint(capsys, real_dir):
    assert main(["protocols", "show", "verl-agent-500", "--shop", str(real_dir)]) == 0
    out = capsys.readouterr().out
    assert "fingerprint: " in out and "give --shop" not in out
    assert main(["protocols", "show", "webshop-paper", "--shop", str(real_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("webshop-gym protocols: error: protocol 'webshop-paper' needs the full release") and "\n" not in err


def test_protocols_show_agentgym_with_its_file(capsys, tmp_path):
    path = tmp_path / "webshop_test.json"
    first10 = [5238, 912, 204, 6074, 2253, 2006, 1828, 1143, 6033, 839]
    path.write_text(json.dumps([{"item_id": f"webshop_{i}", "conversations": None} for i in first10 + list(range(190))]))
    assert main(["protocols", "show", "agentgym", "--protocol-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "goal ids: 5238, 912, 204, 6074, 2253, 2006, 1828, 1143, 6033, 839, 0-189" in out and "file sha256" in out
    assert main(["protocols", "show", "agentgym"]) == 0  # the fork's shipped copy
    assert "HappynessI/verl-for-AgentGym AgentGym-Data/AgentEval/webshop_test.json" in capsys.readouterr().out
    path.write_text("[]")
    assert main(["protocols", "show", "agentgym", "--protocol-file", str(path)]) == 2
    assert "0 goal ids, protocol 'agentgym' expects 200" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["protocols", "show", "gigpo"], "unknown protocol 'gigpo' (did you mean 'hgpo'?); known protocols: agentbench, "),
    (["protocols", "show", "react", "--seed", "1"], "protocol 'react' plays fixed goals and takes no seed"),
    (["protocols", "show", "react", "--validation", "2"], "plays the same goals at every validation"),
])
def test_protocols_bad_input_is_one_line_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_protocols_bad_flag_values_are_rejected_by_the_parser(capsys):
    with pytest.raises(SystemExit) as info:
        main(["protocols", "show", "verl-agent", "--validation", "-1"])
    assert info.value.code == 2 and "--validation" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["verl-agent", "verl-agent-1draw", "hgpo-train"])
def test_each_verl_agent_card_says_which_validation_a_paper_reports(name, capsys):
    """Issue 56: nothing said which --validation K a paper's number is."""
    assert main(["protocols", "show", name]) == 0
    card = " ".join(capsys.readouterr().out.split())
    assert "Which --validation K a paper's number is" in card and "--validation ceil(N / test_freq)" in card
    assert "(--validation 0)" in card  # the validation before training
