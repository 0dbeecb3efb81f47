"""WebShopRayVectorEnv on a local Ray cluster: equivalence with WebShopVectorEnv, faults, restarts.

One local cluster (4 logical CPUs, no dashboard) is started for the module and shut down after
it.  Each test bounds its own waits (``timeout=`` of the env), so a broken actor fails a test
instead of hanging the suite.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from gymnasium.utils import seeding
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'webshop-gym[ray]'")

from webshop_gym import WebShopRayVectorEnv, WebShopVectorEnv, init_ray, load_shop  # noqa: E402  # noqa: E402
from webshop_gym.envs.ray_pool import ActorDied, LostEpisode  # noqa: E402
from webshop_gym.envs.workers import WorkerDied  # noqa: E402
from webshop_gym.error import Error  # noqa: E402
from webshop_gym.utils.paths import cache_dir  # noqa: E402

pytestmark = pytest.mark.slow

QUERIES = ["shirt", "red dress", "gluten free snack", "men's shoes size 10", "shirt", "organic tea"]
GARBAGE = ["", "click[nope]", "search[]", "jump[now]", "click[]", "click[buy now", "søk[ø]", "search[" + "x" * 300 + "]"]


@pytest.fixture(scope="module")
def cluster():
    # init_ray: without Ray's crash signal handler, which would break the JVM that earlier
    # tests started in this process
    init_ray(
        num_cpus=4, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
        namespace="webshop-gym-tests",
    )
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def shop():
    return load_shop(progress=False)


def ray_env(shop, num_envs, num_actors, **kwargs) -> WebShopRayVectorEnv:
    kwargs.setdefault("timeout", 60)
    kwargs.setdefault("start_timeout", 120)
    return WebShopRayVectorEnv(num_envs, num_actors=num_actors, shop=shop, cache_dir=str(cache_dir()), **kwargs)


def policy(rng: np.random.Generator, infos: dict, n: int, buy: float = 0.15) -> list[str]:
    """Random valid and invalid actions: searches (repeated), clicks, buys, garbage."""
    actions = []
    has = infos.get("_valid_actions", np.zeros(n, bool))
    for i in range(n):
        valid = list(infos["valid_actions"][i]) if has[i] else []
        u = rng.random()
        if not valid or u < 0.12:
            actions.append(str(rng.choice(GARBAGE)))
        elif valid == ["search[<query>]"] or u < 0.2:
            actions.append(f"search[{rng.choice(QUERIES)}]")
        elif "click[buy now]" in valid and u < 0.2 + buy:
            actions.append("click[buy now]")
        else:
            actions.append(str(rng.choice(valid)))
    return actions


def first_difference(a, b, path="") -> str:
    """Where two results differ (for a readable assertion message)."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(set(a) ^ set(b))}"
        return next((d for k in a if (d := first_difference(a[k], b[k], f"{path}[{k!r}]"))), "")
    if isinstance(a, (list, tuple)) or (isinstance(a, np.ndarray) and a.dtype == object):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := first_difference(x, y, f"{path}[{i}]"))), "")
    if not data_equivalence(a, b, exact=True):
        return f"{path}: {a!r} != {b!r}"
    return ""


def assert_same(got, want, where: str) -> None:
    assert data_equivalence(got, want, exact=True), f"{where}: {first_difference(got, want)}"


def run_both(local: WebShopVectorEnv, remote: WebShopRayVectorEnv, steps: int, seed: int, until_idle: bool = False):
    rng = np.random.default_rng(seed)
    want = local.reset(seed=seed)
    got = remote.reset(seed=seed)
    assert_same(got, want, "reset")
    n = local.num_envs
    seen = {"steps": 0, "terminated": 0, "truncated": 0, "invalid": 0, "rewarded": 0}
    for t in range(steps):
        actions = policy(rng, want[-1], n)
        want = local.step(actions)
        got = remote.step(actions)
        assert_same(got, want, f"step {t}")
        assert (remote.exhausted, remote.all_idle) == (local.exhausted, local.all_idle)
        assert np.array_equal(remote.idle, local.idle)
        seen["steps"] += 1
        seen["terminated"] += int(want[2].sum())
        seen["truncated"] += int(want[3].sum())
        seen["rewarded"] += int((want[1] > 0).sum())
        seen["invalid"] += int(np.sum(want[-1].get("invalid_action", [])))
        if until_idle and local.all_idle:
            break
    return seen


def assert_covered(seen: dict) -> None:
    """The random rollout bought, hit the step cap and made invalid actions."""
    assert seen["terminated"] and seen["truncated"] and seen["invalid"] and seen["rewarded"], seen


def test_equivalence_next_step_groups(cluster, shop):
    kwargs = dict(group_size=2, max_steps=8, render_mode="ansi")
    local = WebShopVectorEnv(12, shop=shop, **kwargs)
    remote = ray_env(shop, 12, 3, **kwargs)
    try:
        assert [a["slots"] for a in remote.actors] == [(0, 4), (4, 8), (8, 12)]  # whole groups per shard
        assert len({a["pid"] for a in remote.actors}) == 3
        assert_covered(run_both(local, remote, 150, seed=7))
        assert_same(remote.render(), local.render(), "render")
        # explicit goals and a partial reset go through the same paths
        mask = np.zeros(12, bool)
        mask[[1, 5, 10]] = True
        options = {"reset_mask": mask, "goal_index": list(range(100, 112))}
        assert_same(remote.reset(seed=3, options=options), local.reset(seed=3, options=options), "partial reset")
    finally:
        remote.close()
        local.close()


def test_equivalence_same_step(cluster, shop):
    kwargs = dict(autoreset_mode=AutoresetMode.SAME_STEP, observation_mode="text_rich", max_steps=6)
    local = WebShopVectorEnv(8, shop=shop, **kwargs)
    remote = ray_env(shop, 8, 2, **kwargs)
    try:
        assert remote.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        assert_covered(run_both(local, remote, 150, seed=11))
    finally:
        remote.close()
        local.close()


def test_equivalence_eval_mode_runs_the_split_once(cluster, shop):
    kwargs = dict(split="test", eval_mode=True, group_size=2, max_steps=3)
    local = WebShopVectorEnv(16, shop=shop, **kwargs)
    remote = ray_env(shop, 16, 2, **kwargs)
    try:
        seen = run_both(local, remote, 2000, seed=0, until_idle=True)
        assert remote.all_idle and remote.exhausted, f"not done after {seen['steps']} steps"
    finally:
        remote.close()
        local.close()


def test_disabled_autoreset_raises_the_same(cluster, shop):
    from webshop_gym.error import EpisodeFinished

    kwargs = dict(autoreset_mode=AutoresetMode.DISABLED, max_steps=2)
    local = WebShopVectorEnv(4, shop=shop, **kwargs)
    remote = ray_env(shop, 4, 2, placement="SPREAD", **kwargs)
    try:
        group = remote.engine.placement_group
        assert ray.util.placement_group_table(group)["strategy"] == "SPREAD"
        assert_same(remote.reset(seed=1), local.reset(seed=1), "reset")
        for _ in range(2):
            assert_same(remote.step(["search[shirt]"] * 4), local.step(["search[shirt]"] * 4), "step")
        for env in (local, remote):
            with pytest.raises(EpisodeFinished):
                env.step(["search[shirt]"] * 4)
        mask = np.ones(4, bool)
        assert_same(remote.reset(options={"reset_mask": mask}), local.reset(options={"reset_mask": mask}), "reset")
    finally:
        remote.close()
        local.close()
    assert ray.util.placement_group_table(group)["state"] == "REMOVED"


def test_arguments_are_checked_before_actors_start(cluster, shop):
    with pytest.raises(ValueError, match=r"num_actors must be between 1 and the number of groups .* = 2\), got 3"):
        ray_env(shop, 4, 3, group_size=2)
    with pytest.raises(ValueError, match="placement='ROUND_ROBIN' is not supported"):
        ray_env(shop, 4, 2, placement="ROUND_ROBIN")
    with pytest.raises(ValueError, match="either placement= or scheduling_strategy="):
        ray_env(shop, 4, 2, placement="PACK", scheduling_strategy="SPREAD")
    with pytest.raises(ValueError, match=r"actor_options may not set \['max_restarts'\]"):
        ray_env(shop, 4, 2, actor_options={"max_restarts": 3})


def test_a_node_with_another_shop_or_no_data_is_refused(cluster, shop, monkeypatch):
    import webshop_gym.envs.ray_pool as ray_env_module
    from webshop_gym.envs.ray_pool import ActorError, ShopMismatch

    real = ray_env_module.shop_fingerprint
    monkeypatch.setattr(ray_env_module, "shop_fingerprint", lambda s: {**real(s), "goals": 12345})
    with pytest.raises(ShopMismatch, match=r"shard 0 \(slots 0-1\).*'goals': \(12345, 3887\)"):
        ray_env(shop, 2, 1)
    monkeypatch.undo()
    args = ray_env_module.remote_shop_arguments(shop)
    monkeypatch.setattr(ray_env_module, "remote_shop_arguments", lambda s: {**args, "path": "/nonexistent/shop"})
    with pytest.raises(ActorError, match=r"failed to start:\n(.|\n)*/nonexistent/shop"):
        ray_env(shop, 2, 1)


def test_unschedulable_actors_fail_in_bounded_time(cluster, shop, caplog):
    started = time.monotonic()
    with pytest.raises(ActorDied, match=r"did not start within 3 s; the cluster may lack .*num_cpus=8"):
        ray_env(shop, 2, 1, num_cpus_per_actor=8, start_timeout=3)
    assert time.monotonic() - started < 30
    assert "exceed the cluster's 4.0 CPUs" in caplog.text
    deadline = time.monotonic() + 20  # nothing left behind: the pending actor was killed
    while ray.available_resources().get("CPU") != 4.0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU") == 4.0


def test_fresh_node_cache_is_built_once_and_shared(cluster, shop, tmp_path):
    """Two actors start at once on a node whose cache is empty: one catalog, one index, no debris."""
    env = WebShopRayVectorEnv(4, num_actors=2, shop=shop, cache_dir=str(tmp_path), start_timeout=300, timeout=60)
    try:
        assert [a["cache"] for a in env.actors] == [str(tmp_path)] * 2
        obs, infos = env.reset(seed=0)
        env.step(["search[shirt]"] * 4)
    finally:
        env.close()
    catalogs = [p.name for p in (tmp_path / "catalogs").iterdir() if p.is_dir()]
    assert catalogs == [shop.catalog.folder.name], catalogs
    folder = tmp_path / "catalogs" / catalogs[0]
    postings = [p.name for p in folder.iterdir() if p.is_dir() and p.name.startswith("postings-")]
    assert len(postings) == 1 and (folder / postings[0] / "meta.json").is_file(), postings
    # the embedded shop's postings ship with the package: installed once, no Lucene index built
    assert not (folder / "index-v1").exists()
    assert not [p.name for p in folder.iterdir() if ".tmp-" in p.name]


def test_killed_actor_is_a_clear_error(cluster, shop):
    env = ray_env(shop, 8, 2)
    try:
        env.reset(seed=0)
        env.step(["search[shirt]"] * 8)
        actor = env.engine.actors[1]
        ray.kill(actor)
        with pytest.raises(ray.exceptions.RayActorError):  # ray.kill is asynchronous: wait until it is dead
            while True:
                ray.get(actor.ready.remote(), timeout=30)
        started = time.monotonic()
        with pytest.raises(ActorDied, match=r"shard 1 \(slots 4-7\).*restart_failed=True") as caught:
            env.step(["search[red dress]"] * 8)
        assert time.monotonic() - started < 30
        assert isinstance(caught.value, WorkerDied) and isinstance(caught.value, Error)
        with pytest.raises(ActorDied, match="closed after a failure"):
            env.step(["search[shirt]"] * 8)
    finally:
        env.close()


def test_stuck_actor_times_out(cluster, shop):
    env = ray_env(shop, 2, 1, timeout=3)
    try:
        env.reset(seed=0)
        env.engine.actors[0].sleep.remote(60)
        started = time.monotonic()
        with pytest.raises(ActorDied, match="did not answer within 3 s"):
            env.step(["search[shirt]"] * 2)
        assert time.monotonic() - started < 20
    finally:
        env.close()


def goal_draws(shop, seed: int, count: int) -> list[int]:
    rng = seeding.np_random(seed)[0]
    return [shop.goals.sample(rng, shop.goals.split_range(None)) for _ in range(count)]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_restart_failed_rebuilds_the_shard(cluster, shop, mode):
    seed = 5
    local = WebShopVectorEnv(8, shop=shop, group_size=2, autoreset_mode=mode)
    env = ray_env(shop, 8, 2, group_size=2, autoreset_mode=mode, restart_failed=True)
    try:
        assert_same(env.reset(seed=seed), local.reset(seed=seed), "reset")
        for query in ("shirt", "organic tea"):  # two steps that finish no episode
            assert_same(env.step([f"search[{query}]"] * 8), local.step([f"search[{query}]"] * 8), "step")
        before = env.engine.info(4)["goal_index"], env.engine.info(6)["goal_index"]
        old_pid = env.actors[1]["pid"]
        env.engine.kill_actor(1)

        actions = ["click[back to search]"] * 8
        obs, rewards, terminations, truncations, infos = env.step(actions)
        want = local.step(actions)
        for i in range(4):  # the live shard goes on exactly as before
            assert obs[i] == want[0][i] and infos["page"][i] == want[-1]["page"][i]
        assert env.actors[1]["pid"] != old_pid
        assert not terminations.any() and not rewards.any()
        assert list(truncations) == [False] * 4 + [True] * 4
        lost = env.lost_episodes
        assert [e.slot for e in lost] == [4, 5, 6, 7] and all(isinstance(e, LostEpisode) for e in lost)
        assert [e.goal_index for e in lost] == [before[0]] * 2 + [before[1]] * 2
        assert all(e.steps == 2 and e.shard == 1 for e in lost)
        report = infos["final_info"] if mode == AutoresetMode.SAME_STEP else infos
        assert list(report["_lost_episode"]) == [False] * 4 + [True] * 4
        assert list(report["lost_episode"]["goal_index"][4:]) == [before[0]] * 2 + [before[1]] * 2
        assert list(report["lost_episode"]["steps"][4:]) == [2] * 4

        if mode == AutoresetMode.NEXT_STEP:  # the next step starts the next episodes
            obs, rewards, terminations, truncations, infos = env.step(["search[shirt]"] * 8)
        assert list(infos["page"][4:]) == ["start"] * 4 and list(infos["steps"][4:]) == [0] * 4
        # each group's next goal is its leader's next draw, as the vector env assigns them
        assert list(infos["goal_index"][4:]) == [goal_draws(shop, seed + 4, 2)[1]] * 2 + [goal_draws(shop, seed + 6, 2)[1]] * 2

        # lost during a partial reset: the slots not being reset are reported by the next step
        env.step(["search[shirt]"] * 8)
        env.engine.kill_actor(0)
        mask = np.zeros(8, bool)
        mask[:2] = True
        obs, infos = env.reset(options={"reset_mask": mask})
        assert list(infos["_goal_index"]) == [True] * 2 + [False] * 6
        obs, rewards, terminations, truncations, infos = env.step(["search[shirt]"] * 8)
        assert list(truncations[:4]) == [False, False, True, True]
        assert list(infos["page"][:2]) == ["results"] * 2  # reset, then killed before it saw them: replayed
        assert [e.slot for e in env.lost_episodes[4:]] == [2, 3]
        rng = np.random.default_rng(0)
        for _ in range(20):  # and it keeps going
            infos = env.step(policy(rng, infos, 8))[-1]
        assert env.engine.restarts == [1, 1]
    finally:
        env.close()
        local.close()
