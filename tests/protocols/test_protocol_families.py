"""Issue 43: every family's own goal selection, re-derived here from the family's rule written out independently.

Each test states the family's rule as its code states it (file and line in the protocol's card)
and compares the protocol's resolution with it; shipped id lists are checked against the
family's own file (size, SHA-256, git blob); every preset's card cites a line for every value.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random

import numpy as np
import pytest

from webshop_gym.cli.app import main
from webshop_gym.error import ProtocolError
from webshop_gym.protocols import Protocol, get_protocol, protocol_names
from webshop_gym.protocols.definition import alias_names, goal_lookup
from webshop_gym.protocols.idlists import id_list, id_list_names
from webshop_gym.protocols.steps import step_text

N_1K = 6910


def _draws(seed: int, count: int) -> list[list[int]]:
    """verl-agent's envs.py: one RandomState(env.seed + 1000), reset k draws choice(range(500), 128, replace=False)."""
    rng = np.random.RandomState(seed + 1000)
    return [rng.choice(range(500), size=128, replace=False).tolist() for _ in range(count)]


# -- verl-agent's script families ---------------------------------------------------------------


@pytest.mark.parametrize("alias", ["verl-agent-grpo", "verl-agent-ppo", "verl-agent-dapo", "verl-agent-rloo",
                                   "verl-agent-gigpo-dynamic"])
def test_one_draw_scripts_make_one_draw_per_validation(alias):
    """examples/{grpo,ppo,dapo,rloo,gigpo_dynamic}_trainer/run_webshop.sh: val_data_size = val_batch_size = 128."""
    p = get_protocol(alias)
    assert p.name == "verl-agent-1draw"
    draws = _draws(0, 4)
    for k in range(4):
        played = p.resolve(0, validation=k).episodes
        assert [e.position for e in played] == draws[k] and {e.draw for e in played} == {k}
        assert [e.price_seed for e in played] == [1000 + w for w in range(128)]


def test_gigpo_scripts_make_two_draws_and_share_nothing_with_validation_one_of_one_draw():
    """examples/gigpo_trainer/run_webshop*.sh: --val_data_size $((val_data_size * 2)): validation K is draws 2K, 2K + 1."""
    draws = _draws(0, 4)
    gigpo = get_protocol("verl-agent-gigpo").resolve(0, validation=1).episodes
    assert [e.position for e in gigpo] == draws[2] + draws[3]
    one = get_protocol("verl-agent-1draw").resolve(0, validation=1).episodes
    shared = {(e.position, e.worker) for e in one} & {(e.position, e.worker) for e in gigpo[:128]}
    assert [e.position for e in one] == draws[1] and len(shared) < 5  # draw 1 vs draw 2: (almost) no common episode
    assert "GSPO" not in get_protocol("verl-agent").family and "gspo" not in alias_names()


def test_hgpo_evaluation_is_four_draws_at_seeds_123_456_789_with_30_steps():
    """recipe/hgpo/run_qwen2.5_1.5b_webshop_eval.sh: seeds=(123 456 789), --val_data_size $((val_data_size * 4)), step_length=30."""
    p = get_protocol("hgpo")
    assert p.step_cap == 30 and p.seed["default"] == 123 and p.prompt == {"format": "verl-agent", "history": 2}
    for seed in (123, 456, 789):
        played = p.resolve(seed).episodes
        assert len(played) == 512 and [e.position for e in played] == sum(_draws(seed, 4), [])
        assert {e.price_seed for e in played} == {seed + 1000 + w for w in range(128)}
    train = get_protocol("hgpo-train")
    assert train.step_cap == 30 and [e.position for e in train.resolve(0).episodes] == sum(_draws(0, 2), [])


# -- RAGEN's variants -----------------------------------------------------------------------------


def _ragen(seed: int, count: int, n: int) -> list[int]:
    """ragen/env/webshop/env.py: val goal_idx = seed % 1000 + 500, then random.Random(42).shuffle(list(range(n)))[goal_idx]."""
    perm = list(range(n))
    random.Random(42).shuffle(perm)
    return [perm[(seed + i) % 1000 + 500] for i in range(count)]


@pytest.mark.parametrize("name, count, cap", [("ragen", 256, 9), ("ragen-512", 512, 9), ("ragen-small", 128, 9),
                                              ("ragen-eval", 512, 9)])
def test_ragen_variants_play_their_configs_envs(name, count, cap):
    p = get_protocol(name)
    assert p.resolve().goals.tolist() == _ragen(123, count, N_1K) and p.step_cap == cap
    assert p.resolve(seed=2**63 - 1).goals.tolist() == _ragen(2**63 - 1, count, N_1K)  # no int64 overflow
    assert p.prompt["format"] == "think-answer" and p.shop["release"] == "1k"


def test_ragen_full_plays_the_full_shops_goals_with_15_turns():
    p = get_protocol("ragen-full")
    n = 50_000  # any goal count: the rule is the same permutation of the full shop's goal positions
    assert p.resolve(num_goals=n).goals.tolist() == _ragen(123, 512, n)
    assert (p.step_cap, p.shop["release"], p.goal_kind) == (15, "full", "synthetic")


# -- ETO, IPR, WKM ----------------------------------------------------------------------------


ETO_FILE_SHA256 = "0e7fa2b9646a8800761a29fe9bdfff757235bdec7597e3211525230434e2ea66"  # test_indices.json @ a2fc5da


def test_eto_plays_the_ids_of_its_test_indices_json_in_the_seed_233_human_order():
    """eval_agent/tasks/webshop.py: idxs = json.load(test_indices.json); env.reset(idx) -> goals[idx] after random.seed(233) shuffle."""
    p = get_protocol("eto")
    ids = p.resolve().goals.tolist()
    assert hashlib.sha256(json.dumps(ids).encode()).hexdigest() == ETO_FILE_SHA256  # the family's file, byte for byte
    assert (ids[:3], ids[-3:], len(ids)) == ([2853, 5934, 1642], [7378, 3944, 818], 200)
    assert (p.step_cap, p.goal_kind, p.shop["release"], p.reward["transform"]) == (10, "human", "full", "raw")
    train = p.train_ids()
    assert len(np.intersect1d(ids, train)) == 21  # 21 of its 200 test ids are in its own train list


def test_eto_success_is_any_purchase():
    """eval_agent/envs/webshop_env.py: if done: state.success = True (a purchase), whatever the reward."""
    p = get_protocol("eto")
    assert p.is_success(0.2, True) and not p.is_success(1.0, False)
    figures = p.figures([{"raw_reward": 0.25, "purchased": True}, {"raw_reward": 0.0, "purchased": False}])
    assert figures == {"average_reward": pytest.approx(12.5), "success_rate": pytest.approx(50.0)}


def test_ipr_differs_from_eto_at_one_position_and_wkm_reads_etos_file():
    eto, ipr, wkm = (get_protocol(n).resolve().goals.tolist() for n in ("eto", "ipr", "wkm"))
    differ = [(k, a, b) for k, (a, b) in enumerate(zip(eto, ipr)) if a != b]
    assert differ == [(177, 4317, 4318)]
    assert wkm == eto
    assert len(get_protocol("eto-500").resolve().goals) == 500


# -- AgentBoard ------------------------------------------------------------------------------------


def test_agentboard_goals_are_the_files_lines_matched_to_the_shops_goals(real_dir, tmp_path):
    """AgentBoard's goal.py reads test.jsonl line by line; app.py plays goals[i] for fixed_<i> (no shuffle)."""
    from webshop_gym import load_shop

    shop = load_shop(real_dir, human_goals=True, progress=False)
    goals = shop.goals
    # the 1k shop has 13 human goals: a file of each once, in another order (AgentBoard's has 251 of the full shop)
    picks = [(k * 5) % len(goals) for k in range(len(goals))]
    assert len(set(picks)) == len(goals) == 13
    lines = []
    for k in picks:
        text = goals.instruction[k].split(", and price lower than")[0] + ", and price lower than 123.00 dollars"
        lines.append(json.dumps({"goal": text, "difficulty": "easy",
                                 "additional_info": {"product_id": goals.asin[k], "price_upper": 123.0}}))
    path = tmp_path / "test.jsonl"
    path.write_text("\r\n".join(lines) + "\r\n\r\n")
    agentboard = get_protocol("agentboard")
    p = Protocol(copy.deepcopy(agentboard.data), agentboard.path)
    p.data["test"]["indices"]["file"]["count"] = len(goals)
    resolved = p.resolve(ids_file=path, goal_lookup=goal_lookup(goals))
    expected = [next(j for j in range(len(goals)) if goals.asin[j] == goals.asin[k]
                     and goals.instruction[j].split(", and price lower than")[0] == goals.instruction[k].split(", and price lower than")[0])
                for k in picks]
    assert resolved.goals.tolist() == expected
    assert any("price cap" in note for note in resolved.notes)
    # 30 iterations of its loop, the first spent on reset[]: at most 29 of the agent's actions reach the shop
    assert (p.step_cap, [m["of"] for m in p.metrics]) == (29, ["success", "progress"])
    with pytest.raises(ProtocolError, match="give the shop"):
        p.resolve(ids_file=path)
    # the same goal twice (another price phrase, another case) is refused in one line naming both lines
    repeated = lines[:12] + [lines[2].replace("123.00", "99.00").replace('"goal": "', '"goal": "  ')]
    path.write_text("\n".join(repeated))
    with pytest.raises(ProtocolError, match=r"test.jsonl, line 13: this goal \(the same product and instruction\) again "
                                            r"\(line 3 gave it\); protocol 'agentboard' plays each goal of its file once"):
        p.resolve(ids_file=path, goal_lookup=goal_lookup(goals))
    lines[3] = json.dumps({"goal": "a purple llama saddle", "additional_info": {"product_id": goals.asin[0]}})
    path.write_text("\n".join(lines))
    with pytest.raises(ProtocolError, match="goal 3: no goal of this shop asks for product"):
        p.resolve(ids_file=path, goal_lookup=goal_lookup(goals))


def test_a_goal_file_repeating_one_goal_is_refused_in_every_format(tmp_path, capsys):
    """Issue 51 item 5: AgentGym's ids, SEED's fairness lines and AgentBoard's goals, each repeated: one line, exit 2."""
    agentgym = tmp_path / "webshop_test.json"
    agentgym.write_text(json.dumps([{"item_id": f"webshop_{i}"} for i in [*FIRST10, *range(7000, 7189), 5238]]))
    fairness = tmp_path / "evaluation.jsonl"
    fairness.write_text("".join(json.dumps({"metadata": {"goal_idx": 17}}) + "\n" for _ in range(500)))
    agentboard = tmp_path / "test.jsonl"
    agentboard.write_text("".join(json.dumps({"goal": "i need a red scarf, and price lower than 30.00 dollars",
                                              "additional_info": {"product_id": "B000000001"}}) + "\n" for _ in range(251)))
    for name, path, needle in (("agentgym", agentgym, "item 199: this goal id again (item 0 gave it)"),
                               ("seed-fairness", fairness, "line 2: this metadata.goal_idx again (line 1 gave it)")):
        assert main(["protocols", "show", name, "--protocol-file", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err
    with pytest.raises(ProtocolError, match=r"line 2: this goal \(the same product and instruction\) again \(line 1 gave it\)"):
        get_protocol("agentboard").resolve(ids_file=agentboard, goal_lookup=lambda asin, stem: (0, 30.0))


def test_a_protocol_file_that_is_not_a_regular_file_says_so(capsys):
    """Issue 51: --protocol-file /dev/zero is a device, not a missing file."""
    with pytest.raises(SystemExit) as stop:
        main(["protocols", "show", "agentgym", "--protocol-file", "/dev/zero"])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert "'/dev/zero' is not a regular file" in err and "does not exist" not in err and err.count("\n") == 1, err


FIRST10 = [5238, 912, 204, 6074, 2253, 2006, 1828, 1143, 6033, 839]


# -- StateAct, AgentTuning, AgentGym ----------------------------------------------------------------


@pytest.mark.parametrize("name, n", [("stateact", 100), ("stateact-30", 30)])
def test_stateact_plays_fixed_sessions(name, n):
    """webshop_runs/run_webshop.sh: NUM_ENVS=100 (local, API) or 30 (API chat); run_episodes: fixed_{i} for i in range(start, n)."""
    p = get_protocol(name)
    assert p.resolve().goals.tolist() == list(range(n)) and p.step_cap == 14 and p.definition()["steps"]["reset_in_loop"] and p.goal_kind == "human"


def test_agenttuning_is_agentbench_by_another_name():
    assert get_protocol("agenttuning") is get_protocol("agentbench")
    assert get_protocol("agenttuning-dev") is get_protocol("agentbench-dev")
    assert "agenttuning" not in protocol_names() and alias_names()["agenttuning"] == "agentbench"


def test_agentgyms_shipped_ids_are_the_forks_and_start_with_the_published_ten():
    """AgentEval's webshop_test.json as a public fork holds it; its first 10 are the fork's webshop_test_10.json."""
    ids = get_protocol("agentgym").resolve().goals.tolist()
    assert len(ids) == 200 and ids[:10] == [5238, 912, 204, 6074, 2253, 2006, 1828, 1143, 6033, 839]
    # the hypothesis docs/protocols.md states (not how the list is defined here)
    assert random.Random(42).sample(range(N_1K), 200) == ids


def test_a_user_file_that_does_not_start_with_the_published_ten_is_refused(tmp_path):
    path = tmp_path / "webshop_test.json"
    path.write_text(json.dumps([{"item_id": f"webshop_{i}"} for i in range(200)]))
    with pytest.raises(ProtocolError) as info:
        get_protocol("agentgym").resolve(ids_file=path)
    message = str(info.value)
    assert "its first 10 ids (0, 1, 2" in message and "5238, 912, 204" in message and "webshop_test_10.json" in message
    assert "\n" not in message


# -- shipped id lists --------------------------------------------------------------------------------


def test_every_shipped_id_list_renders_to_its_familys_file():
    from webshop_gym.protocols import idlists

    counts = {"eto-test": 200, "eto-test-500": 500, "eto-train": 1824, "ipr-test": 200, "ipr-train": 1624,
              "agentgym-test": 200, "agentgym-test-10": 10}
    assert set(id_list_names()) == set(counts)
    for name, count in counts.items():
        listed = id_list(name)  # checks count, size, SHA-256 and git blob at load
        rendered = idlists.render(listed.source["layout"], listed.ids.tolist())
        blob = hashlib.sha1(b"blob %d\0" % len(rendered) + rendered).hexdigest()  # git's object id, written out here
        assert len(listed.ids) == count and blob == listed.source["git_blob"]
        assert hashlib.sha256(rendered).hexdigest() == listed.source["sha256"]


def test_a_tampered_id_list_fails_at_load(tmp_path, monkeypatch):
    from webshop_gym.protocols import idlists

    for name in id_list_names():
        (tmp_path / f"{name}.json").write_text(idlists._data_dir().joinpath(f"{name}.json").read_text())
    data = json.loads((tmp_path / "eto-test.json").read_text())
    data["ids"][177] = 4318  # IPR's id in ETO's list
    (tmp_path / "eto-test.json").write_text(json.dumps(data))
    monkeypatch.setattr(idlists, "_data_dir", lambda: tmp_path)

    def pin_the_copies():  # the digests pinned in code refuse any edit first (tests/search/test_shipped_pins.py);
        # pinned anew, the file's own checks against the family's file still catch it
        monkeypatch.setattr(idlists, "ID_LISTS", {p.name: (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
                                                  for p in tmp_path.glob("*.json")})

    with pytest.raises(ProtocolError, match="eto-test.json\\): the file has .* instead of the pinned"):
        idlists.id_list.cache_clear()
        idlists.id_list("eto-test")
    pin_the_copies()
    idlists.id_list.cache_clear()
    try:
        with pytest.raises(ProtocolError, match="the ids render to a file with bytes 1223 .*|sha256"):
            idlists.id_list("eto-test")
        data["ids"] = data["ids"][:199]
        (tmp_path / "eto-test.json").write_text(json.dumps(data))
        pin_the_copies()
        idlists.id_list.cache_clear()
        with pytest.raises(ProtocolError, match="199 ids, the file says 200"):
            idlists.id_list("eto-test")
    finally:
        idlists.id_list.cache_clear()


# -- every card cites a line for every value ---------------------------------------------------------

REQUIRED = ("shop", "goal_kind", "test", "price_seed", "step_cap", "steps", "reward", "success", "metrics", "aggregate",
            "observation", "prompt")


@pytest.mark.parametrize("name", protocol_names())
def test_each_preset_cites_file_and_line_for_every_value(name):
    p = get_protocol(name)
    covered = set(p.data.get("decided_here") or {})
    for s in p.sources:
        assert isinstance(s.get("line"), int) and s["line"] >= 1, (name, s)
        covered |= {f.strip() for f in s["field"].split(",")}
    if p.seed is not None:
        assert "seed" in covered, name
    missing = [f for f in REQUIRED if f not in covered]
    assert not missing, f"{name}: no line cites {missing}"


# -- one definition of a step ------------------------------------------------------------------------


@pytest.mark.parametrize("name, cap, reset_in_loop", [("react", 14, True), ("reflexion", 14, True), ("stateact", 14, True),
                                                      ("stateact-30", 14, True), ("agentboard", 29, True),
                                                      ("verl-agent", 15, False), ("agentgym", 10, False), ("eto", 10, False)])
def test_caps_count_actions_with_the_reset_outside(name, cap, reset_in_loop):
    """Every cap counts the agent's actions: the families whose loop spends iteration 0 on the reset give one less."""
    p = get_protocol(name)
    assert (p.step_cap, p.definition()["steps"]["reset_in_loop"]) == (cap, reset_in_loop)
    assert ("the family's loop spends its first iteration on it: " + f"{cap + 1} iterations" in step_text(p.data)) == reset_in_loop


def test_ragen_turns_and_actions_as_its_configs_set_them():
    """_6_webshop.yaml: 9 turns of 1 action; the small combos 12 turns; eval_webshop.yaml 10 turns of base.yaml's 2 (sep '||')."""
    steps = {n: get_protocol(n).definition()["steps"] for n in ("ragen", "ragen-512", "ragen-small", "ragen-eval", "ragen-full")}
    assert {n: (s["turns"], s["actions_per_turn"], s["unparsable"]) for n, s in steps.items()} == {
        "ragen": (9, 1, "turn"), "ragen-512": (9, 1, "turn"), "ragen-small": (12, 1, "turn"), "ragen-eval": (10, 2, "turn"),
        "ragen-full": (15, 1, "turn")}
    assert steps["ragen-eval"]["separator"] == "||"
    assert all(get_protocol(n).step_cap == 9 for n in ("ragen", "ragen-512", "ragen-small", "ragen-eval"))
    # the turns enter the definition: ragen-512 and ragen-eval play the same episodes under different rules
    assert get_protocol("ragen-512").definition_digest() != get_protocol("ragen-eval").definition_digest()


@pytest.mark.parametrize("name", protocol_names())
def test_every_card_says_the_step_rule_in_the_same_words(name):
    text = step_text(get_protocol(name).data)
    assert text.startswith(f"at most {get_protocol(name).step_cap} actions reach the shop")
    assert "the reset spends none" in text and text.endswith("an invalid action spends a step")
    assert sum(f"a reply with no parsable action {what}" in text
               for what in ("spends a step", "spends a turn", "ends the episode (reward 0)")) == 1


def test_agentbench_ends_an_episode_on_a_reply_without_an_action():
    """src/server/tasks/webshop/__init__.py lines 82-99: no 'Action: search[...]/click[...]' -> reward 0, break."""
    for name in ("agentbench", "agentbench-dev"):
        p = get_protocol(name)
        assert p.definition()["steps"]["unparsable"] == "end"
        # an LLM's run plays the rule itself (tests/protocols/test_agentbench_end.py): no deviation, its own steps
        played, deviations = p.played(prompt={"format": "react", "history": None})
        assert deviations == [] and played.definition()["steps"] == p.definition()["steps"]


def test_an_llm_on_ragen_eval_plays_its_turns_of_two_actions():
    """Issue 53 item 2: the loops split a reply into its turn's actions (tests/protocols/test_ragen_turns.py)."""
    p = get_protocol("ragen-eval")
    played, deviations = p.played(prompt={"format": "think-answer", "history": None})
    assert deviations == [] and played.definition()["steps"] == p.definition()["steps"]
    assert played.definition()["steps"]["actions_per_turn"] == 2
    assert get_protocol("ragen-512").played(prompt={"format": "think-answer", "history": None})[1] == []   # 9 turns = 9 actions
    assert p.played(prompt=None) == (p, [])   # a rule policy sends one parsable action a reply: played exactly
