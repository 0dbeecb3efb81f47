"""Local policies' episodes in lanes: one eval-mode vector env per lane, many lanes in flight.

A lane (:class:`Lane`) plays one list of goals through one
:class:`~webshop_gym.envs.vector_env.WebShopVectorEnv` in ``eval_mode``: its slots take the
goals in list order, each episode is recorded as it ends.  A plain ``eval`` is one lane.  A
protocol whose episodes sit on several shops (verl-agent's price seeds: about two episodes per
shop) is one lane per shop; :func:`play_lanes` keeps as many of them in flight as ``num_envs``
slots allow, stepping each lane's env in turn and, for a batch policy
(:class:`~webshop_gym.agents.hf.HFPolicy`), asking it for every lane's actions in one call,
each lane on its own slots of that batch.  A slot that a lane frees and a later lane takes starts
there with ``info["steps"] == 0``, as a vector env's own slot starts its next episode, so a
batch policy clears that slot's history as it always does.

Results do not depend on how many lanes are in flight: each lane's episodes run exactly as they
would alone (the same env, the same per-episode policy seeds, the same per-slot policies).

Under a protocol whose replies are turns (``turns``: a :class:`~webshop_gym.agents.turns.TurnRule`
that splits, RAGEN's), a batch policy's reply is split into its turn's actions
(:class:`~webshop_gym.agents.turns.EpisodeTurns`): a slot plays them one env step each before the
policy is asked again; a reply without an action is asked again in the same tick (the page has
not changed), spending a turn; the turn cap ends an episode without a step
(:meth:`~webshop_gym.envs.vector_env.WebShopVectorEnv.end_episodes`; reward 0, not truncated: the
record's ``ended`` is ``"out of turns"``).  Under AgentBench's rule (``unparsable: "end"``) a reply
without an action ends its episode the same way (``ended``: ``"reply without an action"``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from webshop_gym.agents.batch import unbatch_infos
from webshop_gym.agents.prompts import admissible_actions
from webshop_gym.agents.turns import (
    EpisodeTurns,
    TurnRule,
)
from webshop_gym.evaluation.episode import episode_seed, slim_info
from webshop_gym.runs.run import model_outputs

__all__ = ["Driver", "Lane", "play_lanes"]


class Driver:
    """Feeds a lane's slots to per-slot policies, or marks that one batch policy acts for them."""

    def __init__(self, policy, num_envs: int, seed: int, batch=None):
        """``batch``: a batch policy already in use by other lanes (then ``policy`` is not called)."""
        self.batch = batch if batch is not None else (policy if hasattr(policy, "act_batch") else None)
        self.policies = None if self.batch is not None else [policy() for _ in range(num_envs)]
        if self.policies is not None and hasattr(self.policies[0], "act_batch"):
            self.batch, self.policies = self.policies[0], None
        self.seed = seed

    @property
    def name(self) -> str:
        """The policy's name (its ``name`` attribute, else its class's)."""
        target = self.batch if self.batch is not None else self.policies[0]
        return str(getattr(target, "name", type(target).__name__))

    def start(self, slot: int, info: dict, seed: int | None = None) -> None:
        """A slot starts an episode (``seed``: its policy seed, default from the goal)."""
        if self.batch is not None:
            return
        policy = self.policies[slot]
        reseed = getattr(policy, "seed_episode", None)
        if callable(reseed):
            reseed(episode_seed(self.seed, info["goal_index"]) if seed is None else int(seed))
        policy.reset(info)

    def act(self, active: Sequence[int], observations: Sequence[str], infos: Sequence[dict]) -> list[str]:
        """Per-slot policies' actions for ``active`` slots (``""`` for the others); a batch policy acts in :func:`_tick`."""
        actions = [""] * len(observations)
        for i in active:
            actions[i] = self.policies[i].act(observations[i], infos[i])
        return actions


class Lane:
    """One eval-mode vector env playing its goals: each slot's episode, and the records of those done.

    Args:
        env: a :class:`~webshop_gym.envs.vector_env.WebShopVectorEnv` with ``eval_mode=True``.
        driver: the lane's :class:`Driver`.
        seed: the env's reset seed.
        record: keep each episode's trajectory (see :func:`webshop_gym.evaluation.local.rollout`).
        on_episode: called with each finished episode.
        num_goals: stop once the first ``num_goals`` goals of the env's split are done.
        listed: the env's ``eval_goals``: one record per entry, with ``entry`` its index.
        seeds: with ``listed``, each entry's policy seed.
        turns: the protocol's :class:`~webshop_gym.agents.turns.TurnRule`; a rule that splits
            replies is played for a batch policy that keeps its replies (an LLM's
            ``last_responses``); records then carry ``turns`` and ``turns_without_action``.
    """

    def __init__(self, env, driver: Driver, seed: int, record: bool = False,
                 on_episode: Callable[[dict], None] | None = None, num_goals: int | None = None,
                 listed: Sequence[int] | None = None, seeds: Sequence[int] | None = None,
                 turns: TurnRule | None = None):
        if not getattr(env, "eval_mode", False):
            raise ValueError("rollout needs a WebShopVectorEnv created with eval_mode=True")
        self.env, self.driver, self.record, self.on_episode = env, driver, record, on_episode
        self.n = env.num_envs
        replies = driver.batch is not None and hasattr(driver.batch, "last_responses")
        self.rule = turns if turns is not None and turns.splits and replies else None
        self.turns: list[EpisodeTurns | None] = [None] * self.n
        self.listed = None if listed is None else [int(g) for g in listed]
        self.seeds = seeds
        if self.listed is not None:  # the env hands these out in order: one record per entry
            self.total = len(self.listed)
            self.wanted = set(range(self.total))
        else:
            goal_range = env.engine.goal_range
            self.total = len(goal_range) if num_goals is None else min(int(num_goals), len(goal_range))
            self.wanted = set(goal_range[:self.total])
        self.handed = 0
        self.env_steps = 0
        self.current: list[dict | None] = [None] * self.n
        self.pending = [False] * self.n
        self.results: dict[int, dict] = {}
        self.observations, infos = env.reset(seed=seed)
        self.per = unbatch_infos(infos, self.n)
        for i in range(self.n):
            if not self.per[i].get("idle"):
                self._start(i, self.per[i])

    @property
    def done(self) -> bool:
        """Whether every goal of the lane has its record."""
        return len(self.results) >= self.total

    def _start(self, slot: int, info: dict) -> None:
        episode = {"goal_index": int(info["goal_index"]), "invalid_actions": 0}
        policy_seed = None
        if self.listed is not None:  # slots start in the order the env hands the goals out
            if self.handed >= self.total or self.listed[self.handed] != episode["goal_index"]:
                raise RuntimeError(f"the env started goal {episode['goal_index']} as entry {self.handed} of its list")
            episode["entry"] = self.handed
            policy_seed = None if self.seeds is None else int(self.seeds[self.handed])
            self.handed += 1
        self.driver.start(slot, info, policy_seed)
        if self.record:
            episode["trajectory"] = []
        if self.rule is not None:
            self.turns[slot] = EpisodeTurns(self.rule)
            episode["turns_without_action"] = []
        self.current[slot] = episode

    def active(self) -> list[int]:
        """The slots whose episode waits for an action."""
        active = [i for i in range(self.n) if self.current[i] is not None and not self.pending[i]]
        if not active and not any(self.pending):
            raise RuntimeError(f"every slot is idle but only {len(self.results)} of {self.total} goals finished")
        return active

    def advance(self, active: Sequence[int], actions: list[str], said: dict[int, dict] | None = None) -> None:
        """Record the actions (``said``: an LLM's outputs by lane slot), step the env, close the episodes that ended."""
        if self.record:
            for i in active:
                entry = {"observation": self.observations[i], "info": slim_info(self.per[i]), "action": actions[i]}
                if said and i in said:
                    entry["model"] = said[i]
                self.current[i]["trajectory"].append(entry)
        self.observations, rewards, terminated, truncated, infos = self.env.step(actions)
        self.env_steps += 1
        self.per = per = unbatch_infos(infos, self.n)
        for i in range(self.n):
            if self.pending[i]:
                self.pending[i] = False
                if not per[i].get("idle"):
                    self._start(i, per[i])
                continue
            episode = self.current[i]
            if episode is None:
                continue
            info = per[i]
            episode["invalid_actions"] += int(bool(info.get("invalid_action")))
            turns = self.turns[i] if self.rule is not None else None
            if terminated[i] or truncated[i]:
                if terminated[i]:  # the slot's own purchase dicts, in its order: a batched info lists a nested key
                    info.update(self.env.engine.purchase_info(i))  # where the step's first slot gave it
                if turns is not None:
                    turns.drop()  # the turn's remaining actions are never played
                self._close(i, info, float(rewards[i]) if terminated[i] else 0.0, bool(terminated[i]), bool(truncated[i]))
            elif turns is not None and turns.ended:
                self.end_early(i, turns.ended)

    def end_early(self, slot: int, ended: str) -> None:
        """The slot's episode ends before the engine ended it: reward 0, its env slot ended without a step.

        ``ended`` (the record's) says why: its last turn used, or a reply without an action under
        AgentBench's rule; ``truncated`` stays the engine's step cap, which was not reached.
        """
        self.env.end_episodes([slot])
        self.current[slot]["ended"] = ended
        self._close(slot, self.per[slot], 0.0, False, False)

    def silent(self, slot: int) -> None:
        """The slot's last reply carried no action: it spent a turn (recorded), and perhaps the episode."""
        episode, turns = self.current[slot], self.turns[slot]
        episode["turns_without_action"].append(turns.silent(self.per[slot]["steps"]))
        if turns.ended:
            self.end_early(slot, turns.ended)

    def _close(self, i: int, info: dict, reward: float, purchased: bool, truncated: bool) -> None:
        episode = self.current[i]
        episode.update(reward=reward, success=bool(reward == 1.0), steps=int(info["steps"]),
                       purchased=purchased, truncated=truncated)
        if self.rule is not None:
            episode["turns"] = self.turns[i].taken
            if not self.record:
                episode.pop("turns_without_action", None)
        for key in ("reward_info", "purchased_asin", "purchased_options", "purchased_price"):
            if key in info:
                episode[key] = info[key]
        if self.record:
            episode.update(final_observation=self.observations[i], final_info=slim_info(info))
        self.current[i] = None
        self.pending[i] = True
        goal = episode["entry"] if self.listed is not None else episode["goal_index"]
        if goal in self.wanted:
            if goal in self.results:
                raise RuntimeError(f"goal {goal} ran twice")
            self.results[goal] = episode
            if self.on_episode is not None:
                self.on_episode(episode)

    def step(self) -> None:
        """One step of this lane alone (its driver chooses the actions)."""
        _tick([(self, range(self.n))], self.driver.batch, self.n)

    def episodes(self) -> list[dict]:
        """The finished episodes, by goal index (by entry of ``listed``)."""
        return [self.results[g] for g in sorted(self.results)]


def play_lanes(sizes: Sequence[int], open_lane: Callable[[int, int, object], Lane], capacity: int,
               on_close: Callable[[int, Lane], None]) -> int:
    """Play lane ``k`` of ``len(sizes)`` (``sizes[k]`` slots each), as many at once as ``capacity`` slots allow.

    Lanes open in order, each when enough slots are free (the first always does);
    ``open_lane(k, slots, batch)`` makes lane ``k`` on ``slots`` slots (``batch``: the batch policy
    the lanes open so far act through, else None) and ``on_close(k, lane)`` takes it once its
    goals are done.  Every tick steps each lane in flight once; a batch policy is asked once
    per tick for all of them, each lane on its own slots of one list of ``capacity`` entries.
    Returns the most slots in flight at once.
    """
    lanes: dict[int, tuple[Lane, list[int]]] = {}
    try:
        return _play(sizes, open_lane, capacity, on_close, lanes)
    finally:
        for lane, _ in lanes.values():  # lanes an error left open: their envs (and workers) closed
            lane.env.close()


def _play(sizes, open_lane, capacity, on_close, lanes: dict) -> int:
    free = list(range(capacity))
    following = 0
    most = 0
    batch = None
    while following < len(sizes) or lanes:
        while following < len(sizes) and (not lanes or len(free) >= sizes[following]):
            free.sort()
            taken, free = free[:sizes[following]], free[sizes[following]:]
            lane = open_lane(following, len(taken), batch)
            batch = lane.driver.batch
            lanes[following] = (lane, taken)
            following += 1
        most = max(most, capacity - len(free))
        _tick(list(lanes.values()), batch, capacity)
        for k in [k for k, (lane, _) in lanes.items() if lane.done]:
            lane, slots = lanes.pop(k)
            free += slots
            on_close(k, lane)
    return most


def _tick(lanes: Sequence[tuple[Lane, Sequence[int]]], batch, capacity: int) -> None:
    """Step each lane once: its per-slot policies act, or ``batch`` is asked once for every lane.

    ``lanes``: each lane with the slots of the batch it holds (its slot ``i`` at ``slots[i]``, of
    ``capacity``); slots no lane's episode waits on are given as idle.
    """
    active = [lane.active() for lane, _ in lanes]
    if batch is None:
        for (lane, _), live in zip(lanes, active):
            lane.advance(live, lane.driver.act(live, lane.observations, lane.per))
        return
    if any(lane.rule is not None for lane, _ in lanes):
        _tick_turns(lanes, batch, capacity)
        return
    observations: list[str] = [""] * capacity
    infos: list[dict] = [{"idle": True} for _ in range(capacity)]
    for (lane, slots), live in zip(lanes, active):
        for i in live:
            observations[slots[i]], infos[slots[i]] = lane.observations[i], lane.per[i]
    out = batch.act_batch(observations, infos)
    recorded = any(lane.record for lane, _ in lanes)
    said = model_outputs(batch, [slots[i] for (_, slots), live in zip(lanes, active) for i in live]) if recorded else {}
    for (lane, slots), live in zip(lanes, active):
        actions = [""] * lane.n
        for i in live:
            actions[i] = out[slots[i]]
        lane.advance(live, actions, {i: said[slots[i]] for i in live if slots[i] in said})


def _tick_turns(lanes: Sequence[tuple[Lane, Sequence[int]]], batch, capacity: int) -> None:
    """:func:`_tick` for replies that are turns: ask until every live slot has a turn's action, then step it.

    A slot whose turn still has actions plays its next one without asking.  The others are asked
    (each lane on its slots of the batch; the info's ``turn``: the replies so far, so the policy
    keeps the episode's history on a page it saw already); a reply without an action spends a
    turn and is asked again, until it carries one or the turns run out.
    """
    fmt = getattr(getattr(batch, "prompt", None), "name", "plain")
    closest = bool(getattr(batch, "closest", False))
    while True:
        asking = [[i for i in range(lane.n) if lane.current[i] is not None and not lane.pending[i]
                   and not lane.turns[i].playing] for lane, _ in lanes]
        if not any(asking):
            break
        observations: list[str] = [""] * capacity
        infos: list[dict] = [{"idle": True} for _ in range(capacity)]
        for (lane, slots), ask in zip(lanes, asking):
            for i in ask:
                observations[slots[i]] = lane.observations[i]
                infos[slots[i]] = {**lane.per[i], "turn": lane.turns[i].taken}
        batch.act_batch(observations, infos)  # the replies: the policy's own one-action parse is not played
        responses = batch.last_responses
        for (lane, slots), ask in zip(lanes, asking):
            for i in ask:
                if not lane.turns[i].reply(responses[slots[i]] or "", fmt):
                    lane.silent(i)
    for lane, _ in lanes:
        live = [i for i in range(lane.n) if lane.current[i] is not None and not lane.pending[i]]
        actions = [""] * lane.n
        said = {}
        for i in live:
            parsed, said[i] = lane.turns[i].next_action(admissible_actions(lane.per[i]), closest)
            actions[i] = parsed.action
        lane.advance(live, actions, said)
