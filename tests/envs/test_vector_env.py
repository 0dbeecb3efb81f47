"""WebShopVectorEnv: equivalence with single envs, autoreset modes, groups, evaluation, workers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import webshop_gym  # noqa: F401  (registers the ids)
from webshop_gym import WebShopEnv, WebShopVectorEnv
from webshop_gym.error import EpisodeFinished


def _actions(rng, infos, n):
    """Random valid and invalid actions from batched infos."""
    out = []
    for j in range(n):
        valid = list(infos["valid_actions"][j]) if infos.get("_valid_actions", np.zeros(n, bool))[j] else []
        r = rng.random()
        if not valid or r < 0.12:
            out.append(str(rng.choice(["click[nope]", "search[]", "garbage", "click[buy now", "click[search]"])))
            continue
        action = valid[int(rng.integers(len(valid)))]
        if action == "search[<query>]":
            words = str(infos["instruction"][j]).split()
            action = f"search[{' '.join(words[: int(rng.integers(1, 9))])}]"
        if r > 0.9:
            action = "click[buy now]"
        out.append(action)
    return out


def _step_both(local, pooled, seed: int, steps: int, reset_at: int | None = None, mask=None) -> None:
    """Reset both envs with ``seed``, step them with the same random actions; every result must agree."""
    n = local.num_envs
    a, b = local.reset(seed=seed), pooled.reset(seed=seed)
    assert data_equivalence(a, b)
    rng = np.random.default_rng(seed)
    infos = a[1]
    for t in range(steps):
        actions = _actions(rng, infos, n)
        ra, rb = local.step(actions), pooled.step(actions)
        for x, y in zip(ra, rb):
            assert data_equivalence(x, y)
        infos = ra[4]
        if t == reset_at:
            options = {"reset_mask": mask, "goal_index": [3] * n}
            assert data_equivalence(local.reset(options=options), pooled.reset(options=options))


def test_make_vec_gives_our_vector_env():
    envs = gym.make_vec("webshop_gym:WebShop-v0", num_envs=3, vectorization_mode="vector_entry_point", max_steps=9)
    assert isinstance(envs, WebShopVectorEnv) and envs.num_envs == 3
    obs, infos = envs.reset(seed=0)
    assert isinstance(obs, tuple) and len(obs) == 3 and infos["goal_index"].shape == (3,)
    assert envs.single_observation_space.contains(obs[0]) and envs.observation_space.contains(obs)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_equivalent_to_single_envs(default_shop, mode):
    n = 6
    vec = WebShopVectorEnv(n, shop=default_shop, autoreset_mode=mode, max_steps=5)
    sync = SyncVectorEnv([lambda: WebShopEnv(shop=default_shop, max_steps=5) for _ in range(n)], autoreset_mode=mode)
    a, b = vec.reset(seed=11), sync.reset(seed=11)
    assert data_equivalence(a, b)
    rng = np.random.default_rng(5)
    infos = a[1]
    ends = 0
    for _ in range(120):
        actions = _actions(rng, infos, n)
        ra, rb = vec.step(actions), sync.step(actions)
        for x, y in zip(ra, rb):
            assert data_equivalence(x, y)
        infos = ra[4]
        ends += int(ra[2].sum() + ra[3].sum())
    assert ends > 20  # autoresets happened, by purchase and by truncation


def test_disabled_autoreset_and_reset_mask(default_shop):
    vec = WebShopVectorEnv(3, shop=default_shop, autoreset_mode=AutoresetMode.DISABLED, max_steps=2)
    obs, infos = vec.reset(seed=0, options={"goal_index": [4, 5, 6]})
    assert list(infos["goal_index"]) == [4, 5, 6]
    vec.step(["search[a]", "search[b]", "click[x]"])
    obs, rewards, terms, truncs, infos = vec.step(["click[x]"] * 3)
    assert truncs.all()
    with pytest.raises(EpisodeFinished, match="reset_mask"):
        vec.step(["click[x]"] * 3)
    mask = np.array([True, False, True])
    obs2, infos2 = vec.reset(options={"reset_mask": mask, "goal_index": 7})
    assert list(infos2["_goal_index"]) == [True, False, True] and infos2["goal_index"][0] == 7
    assert obs2[1] == obs[1] and obs2[0].startswith("WebShop [SEP]")
    with pytest.raises(ValueError, match="reset_mask"):
        vec.reset(options={"reset_mask": [1, 0, 1]})


def test_group_size_gives_groups_one_goal(default_shop):
    vec = WebShopVectorEnv(12, shop=default_shop, group_size=4, max_steps=4)
    obs, infos = vec.reset(seed=3)
    goals = infos["goal_index"].reshape(3, 4)
    assert (goals == goals[:, :1]).all() and len(set(goals[:, 0])) == 3
    assert all(len({obs[g * 4 + k] for k in range(4)}) == 1 for g in range(3))
    rng = np.random.default_rng(0)
    seen = {g: [] for g in range(3)}
    for _ in range(40):  # groups keep one goal sequence through autoresets
        obs, r, te, tr, infos = vec.step(_actions(rng, infos, 12))
        for slot in range(12):
            if infos["_steps"][slot] and infos["steps"][slot] == 0:
                seen[slot // 4].append((slot, int(infos["goal_index"][slot])))
    for starts in seen.values():
        by_slot = {}
        for slot, goal in starts:
            by_slot.setdefault(slot, []).append(goal)
        sequences = list(by_slot.values())
        shortest = min(len(s) for s in sequences)
        assert all(s[:shortest] == sequences[0][:shortest] for s in sequences)
    with pytest.raises(ValueError, match="multiple of group_size"):
        WebShopVectorEnv(10, shop=default_shop, group_size=4)


def test_eval_mode_hands_out_every_goal_once(default_shop):
    vec = WebShopVectorEnv(8, shop=default_shop, split="test", eval_mode=True, group_size=2, max_steps=3)
    obs, infos = vec.reset(seed=0)
    started = list(infos["goal_index"][::2])
    steps = 0
    while not vec.all_idle:
        obs, r, te, tr, infos = vec.step(["click[x]"] * 8)
        for g in range(4):
            slot = 2 * g
            if infos.get("_steps", np.zeros(8, bool))[slot] and infos["steps"][slot] == 0:
                started.append(int(infos["goal_index"][slot]))
        steps += 1
        assert steps < 2000
    assert sorted(started) == list(range(500)) and vec.exhausted
    assert all(o == "" for o in obs) and infos["idle"].all()


def test_per_slot_seeds_match_seeded_single_envs(default_shop):
    vec = WebShopVectorEnv(4, shop=default_shop)
    _, infos = vec.reset(seed=100)
    singles = [WebShopEnv(shop=default_shop).reset(seed=100 + i)[1]["goal_index"] for i in range(4)]
    assert list(infos["goal_index"]) == singles
    _, again = vec.reset(seed=[100, 101, 102, 103])
    assert list(again["goal_index"]) == singles


@pytest.mark.slow
def test_worker_processes_give_identical_results_and_fail_loudly(default_shop):
    from webshop_gym.envs.workers import WorkerDied

    n = 6
    local = WebShopVectorEnv(n, shop=default_shop, max_steps=5)
    pooled = WebShopVectorEnv(n, shop=default_shop, max_steps=5, num_workers=2)
    try:
        _step_both(local, pooled, seed=2, steps=40)
        assert pooled.render() is None
        pooled.engine.kill_worker(1)
        with pytest.raises(WorkerDied, match="worker 1"):
            pooled.step(["click[x]"] * n)
    finally:
        pooled.close()
        local.close()


@pytest.mark.slow
@pytest.mark.parametrize("autoreset_mode", ["next-step", "same-step"])
def test_this_process_steps_one_shard_and_workers_the_rest(default_shop, autoreset_mode):
    """num_workers=3 over 7 slots: shard 0 here, two spawned workers; every result as in one process."""
    import psutil

    n = 7
    local = WebShopVectorEnv(n, shop=default_shop, max_steps=4, autoreset_mode=autoreset_mode)
    pooled = WebShopVectorEnv(n, shop=default_shop, max_steps=4, autoreset_mode=autoreset_mode, num_workers=3)
    try:
        assert pooled.engine.shards == [(0, 2), (2, 5), (5, 7)] and sorted(pooled.engine.procs) == [1, 2]
        pids = [proc.pid for proc in pooled.engine.procs.values()]
        assert {p.pid for p in psutil.Process().children()} >= set(pids)
        _step_both(local, pooled, seed=9, steps=30, reset_at=10,
                   mask=np.array([True, False, True, False, False, True, False]))
        assert pooled.engine.observe(1, "html") == local.engine.observe(1, "html")  # a slot of this process
        assert pooled.engine.observe(6, "html") == local.engine.observe(6, "html")  # a worker's slot
    finally:
        pooled.close()
        local.close()
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)


@pytest.mark.slow
def test_a_failure_in_this_process_shard_waits_for_the_workers(default_shop, monkeypatch):
    """An error stepping shard 0 is raised only after the workers answered: no worker is left a step behind."""
    n = 4
    pooled = WebShopVectorEnv(n, shop=default_shop, max_steps=None, num_workers=2)
    try:
        goals = pooled.reset(seed=1)[1]["goal_index"]
        real_step = pooled.engine.local.step

        def broken(*args):
            raise RuntimeError("shard 0 broke")

        monkeypatch.setattr(pooled.engine.local, "step", broken)
        with pytest.raises(RuntimeError, match="shard 0 broke"):
            pooled.step(["search[shoes]"] * n)
        monkeypatch.setattr(pooled.engine.local, "step", real_step)
        # The workers' slots (2, 3) searched shoes; shard 0's did not.  Had a worker's answer been left
        # unread, the next step would read it and report pages one step old.
        obs = pooled.step(["search[socks]"] * n)[0]
        for slot in range(n):
            single = WebShopEnv(shop=default_shop, max_steps=None)
            single.reset(options={"goal_index": int(goals[slot])})
            if slot >= 2:
                single.step("search[shoes]")
            assert obs[slot] == single.step("search[socks]")[0], slot
    finally:
        pooled.close()


def test_one_worker_means_this_process(default_shop):
    from webshop_gym.engine import Engine

    envs = WebShopVectorEnv(2, shop=default_shop, num_workers=1)
    assert type(envs.engine) is Engine
    envs.close()


DENSE_INFOS = {  # every slot, in order: the batched columns come from lists at once
    slot: {"steps": slot, "score": [1, 0.5, True, np.float64(2.5), 3, 0][slot], "ok": [True, 1, 0, False, 2, True][slot],
           "f": [0.5, 1, 2, True, np.int64(7), 0.25][slot], "n64": np.int64(slot - 3), "page": "item",
           "actions": [f"a{slot}"] * slot, "nested": {"flag": slot % 2 == 0, "count": slot},
           "vec": np.arange(3) + slot}
    for slot in range(6)
}


DENSE_FINAL = {slot: {**info, "final_obs": f"page {slot}", "nested": {"count": slot} if slot == 4 else info["nested"]}
               for slot, info in DENSE_INFOS.items()}  # a nested dict with other keys in one slot
DENSE_SOME = {slot: {**info, **({"success": slot == 1, "reward_info": {"r": slot / 2}} if slot in (1, 4) else {})}
              for slot, info in DENSE_INFOS.items()}  # every slot, some with keys the others lack (a purchase)
DENSE_SOME[0] = {"extra_first": 1.5, **DENSE_SOME[0]}


@pytest.mark.parametrize("dense", [False, True, "final", "some"])
def test_batch_infos_equals_gymnasiums_add_info_key_by_key(dense):
    """Columns, dtypes, values and masks as Gymnasium's VectorEnv._add_info builds them, slot by slot."""
    from types import SimpleNamespace

    from gymnasium.vector import VectorEnv

    from webshop_gym.envs.vector_env import batch_infos

    n = 6
    infos = {"final": DENSE_FINAL, "some": DENSE_SOME}.get(dense) or (DENSE_INFOS if dense else None) or {
        0: {"steps": 1, "score": 0.5, "ok": True, "page": "results", "actions": ["a", "b"], "n64": np.int64(3),
            "nested": {"flag": False, "labels": ["x"]}, "vec": np.arange(3)},
        2: {"steps": 2, "score": 1, "ok": False, "page": "item", "actions": ["c", "d"], "n64": np.int64(-1),
            "nested": {"flag": True, "labels": ["y"]}, "vec": np.ones(3, np.int64)},
        3: {"steps": 7, "score": 2.75, "actions": [], "final_obs": "done page"},
        5: {"ok": True, "page": None, "score": True, "idle": True},
    }
    expected: dict = {}
    gym_like = SimpleNamespace(num_envs=n)
    gym_like._add_info = lambda *args: VectorEnv._add_info(gym_like, *args)  # it recurses through self
    for slot, info in infos.items():
        expected = VectorEnv._add_info(gym_like, expected, info, slot)
    got = batch_infos(list(infos.items()), n)

    def same(a, b, path=""):
        assert a.keys() == b.keys(), path
        for key in a:
            if isinstance(a[key], dict):
                same(a[key], b[key], f"{path}.{key}")
                continue
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, f"{path}.{key}"
            assert all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
                       for x, y in zip(a[key].tolist(), b[key].tolist())), f"{path}.{key}"

    same(got, expected)
    assert list(got) == list(expected)  # the columns in the same order
    if dense:
        assert got["actions"][2] == ["a2", "a2"] and got["_steps"].all() and got["actions"].dtype == object
        return
    assert got["actions"][0] == ["a", "b"] and got["actions"][1] is None  # lists stay whole elements


def _same_infos(got: dict, want: dict, path: str = "info") -> None:
    """Keys in the same order, each column of the same dtype, shape and values (nested dicts too)."""
    assert list(got) == list(want), path
    for key in want:
        if isinstance(want[key], dict):
            _same_infos(got[key], want[key], f"{path}.{key}")
            continue
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, f"{path}.{key}"
        assert got[key].tolist() == want[key].tolist(), f"{path}.{key}"


def _add_info_of(infos: dict[int, dict], n: int) -> dict:
    """Gymnasium's own batching (``VectorEnv._add_info``) of per-slot info dicts."""
    from types import SimpleNamespace

    from gymnasium.vector import VectorEnv

    batched: dict = {}
    gym_like = SimpleNamespace(num_envs=n)
    gym_like._add_info = lambda *args: VectorEnv._add_info(gym_like, *args)
    for slot, info in infos.items():
        batched = VectorEnv._add_info(gym_like, batched, info, slot)
    return batched


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED])
def test_column_infos_equal_gymnasiums_batching_of_each_slots_info(default_shop, mode):
    """A step whose slots are all live builds ``info`` column by column from the engine
    (``Engine.info_columns``); it must equal ``_add_info`` of every slot's ``engine.info``: keys in
    order, dtypes, values, masks, the nested ``available_actions`` and the purchase keys of the
    slots that bought (some slots, and every slot at once).  A reset of some slots reports theirs."""
    n = 5
    envs = WebShopVectorEnv(n, shop=default_shop, autoreset_mode=mode, max_steps=None if mode == AutoresetMode.DISABLED else 6)
    obs, infos = envs.reset(seed=4)
    rng = np.random.default_rng(2)
    _same_infos(infos, _add_info_of({i: envs.engine.info(i) for i in range(n)}, n))
    bought_some = bought_all = partial_resets = 0
    for t in range(60):
        if mode == AutoresetMode.DISABLED and envs.engine.state.done.any():
            mask = envs.engine.state.done.copy()
            obs, infos = envs.reset(options={"reset_mask": mask})  # some slots: their columns, masked
            _same_infos(infos, _add_info_of({i: envs.engine.info(i) for i in np.flatnonzero(mask).tolist()}, n))
            partial_resets += not mask.all()
        actions = _actions(rng, infos, n)
        if t % 20 == 19 and mode == AutoresetMode.DISABLED:  # every slot on an item page buys at once
            for i in range(n):
                actions[i] = f"search[{' '.join(str(infos['instruction'][i]).split()[:8])}]"
            envs.step(actions)
            envs.step(["click[" + envs.engine.page_actions(i)[1][2] + "]" for i in range(n)])
            actions = ["click[buy now]"] * n
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        want = _add_info_of({i: envs.engine.info(i) for i in range(n)}, n)
        _same_infos(infos, want)
        bought = int(terminated.sum())
        bought_some += 0 < bought < n
        bought_all += bought == n
        if bought:
            assert {"success", "reward_info", "purchased_asin", "purchased_options", "purchased_price"} <= set(infos)
    assert bought_some and (bought_all and partial_resets or mode != AutoresetMode.DISABLED)


@pytest.mark.parametrize("mode", ["text", "url", "html"])
def test_observe_all_is_each_slots_observation(default_shop, mode):
    """``Engine.observe_all`` (the vector env's step) gives ``observe(i)`` of every slot, fresh list, any mode."""
    envs = WebShopVectorEnv(4, shop=default_shop, observation_mode=mode, max_steps=None)
    _, infos = envs.reset(seed=8)
    rng = np.random.default_rng(8)
    engine = envs.engine
    for _ in range(12):
        obs, *_, infos = envs.step(_actions(rng, infos, 4))
        every = engine.observe_all()
        assert every == [engine.observe(i) for i in range(4)] == list(obs)
        every[0] = "changed"
        assert engine.observe_all()[0] == obs[0]  # the caller's list, not the engine's kept one


def test_end_episodes_starts_the_next_goal_at_the_next_step_without_stepping(default_shop):
    """A loop's own cap (RAGEN's turns) ends a slot's episode without a step; the next step starts its next goal."""
    vec = WebShopVectorEnv(2, shop=default_shop, eval_mode=True, eval_goals=[3, 5, 7], max_steps=5)
    try:
        _, infos = vec.reset(seed=0)
        assert list(infos["goal_index"]) == [3, 5]
        vec.step(["search[red]", "search[blue]"])
        vec.end_episodes([1])
        _, _, terminated, truncated, infos = vec.step(["click[back to search]", "search[not stepped]"])
        assert list(infos["goal_index"]) == [3, 7] and list(infos["steps"]) == [2, 0]
        assert not terminated.any() and not truncated.any()
        with pytest.raises(webshop_gym.error.InvalidArgument):
            vec.end_episodes([2])
    finally:
        vec.close()
    same = WebShopVectorEnv(1, shop=default_shop, eval_mode=True, eval_goals=[3], autoreset_mode="same-step")
    try:
        same.reset(seed=0)
        with pytest.raises(webshop_gym.error.InvalidArgument, match="next-step"):
            same.end_episodes([0])
    finally:
        same.close()
