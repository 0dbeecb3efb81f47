"""WebShop as a native verifiers environment (``pip install webshop-verifiers``, ``verifiers==0.4.0``).

verifiers 0.4 (Prime Intellect's ``vf-eval``, prime-rl, the Environments Hub) builds an
environment from a *taskset* (the tasks: here one per goal) and an *env* whose ``run()`` plays
one task with the model's agent.  :class:`WebShopVerifiersEnv` plays WebShop in the eval
process itself, over the same engine as :class:`~webshop_gym.WebShopEnv` (no server): it
opens the model's conversation with the goal's first page written in one of our prompt
formats, parses each reply with the parser ``webshop-gym eval`` uses, steps the env with the
action, and answers with the next page, until the purchase or the step cap (the loop of
:class:`~webshop_gym.integrations.text_episode.TextEpisode`, which SkyRL and GEM play too).  In the ``tools``
format the model calls ``search``/``click`` instead, each call stepped in this process by the
task's hook (:mod:`webshop_gym.integrations.verifiers_tools` says how).  The episode's
WebShop reward is the trace's reward (``webshop_reward``, weight 1); its breakdown
(``r_type``, ``r_att``, ``r_option``, ``r_price``), ``success``, ``steps``,
``invalid_actions`` and ``format_errors`` are the trace's metrics.

verifiers finds a plugin by a top-level module name (dashes to underscores; a dotted path is
not an id), so the Environments Hub's distribution ``webshop-verifiers``
(``environments/webshop_verifiers/`` in the repository, which depends on
``webshop-gym[verifiers]``) ships the one-line module ``webshop_verifiers`` that re-exports this
one: ``vf-eval webshop-verifiers -m MODEL --client.base-url URL --no-push`` (see
docs/training.md).  verifiers builds every env from that id, so it is needed in Python too::

    env = load_environment(split="test", format="think-answer", limit=50)   # a vf.Env

The model runs in verifiers' ``null`` harness (a chat loop, with tools only in the ``tools``
format) on the local ``subprocess`` runtime by default; both are ordinary ``--env.player.*``
settings.  :func:`prepare_harness` makes that harness's later runs need no network.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from webshop_gym.error import DependencyNotInstalled, GoalNotFound, InvalidArgument

try:  # the whole module is built on verifiers' classes: it is imported only when asked for
    import verifiers.v1 as vf
    from pydantic import Field
    from verifiers.v1.harnesses.null import NullHarnessConfig
    from verifiers.v1.runtimes import SubprocessConfig
except ImportError as exc:
    raise DependencyNotInstalled(
        f"the verifiers environment needs verifiers 0.4 ({exc}): pip install webshop-verifiers (its distribution, "
        "which installs webshop-gym[verifiers]) in an environment without webshop-gym[openenv]: the two need "
        "different mcp versions"
    ) from exc

from webshop_gym import WebShopEnv
from webshop_gym.agents.prompts import PromptFormat, make_prompt
from webshop_gym.integrations.text_episode import TextEpisode, check_instruction, last_user_turn
from webshop_gym.integrations.trl import shared_shop
from webshop_gym.integrations.verifiers_tools import ToolEpisode, WebShopTools

__all__ = [
    "PLUGIN_ID",
    "PLUGIN_MODULE",
    "WebShopConfig",
    "WebShopData",
    "WebShopEnvConfig",
    "WebShopTask",
    "WebShopTaskset",
    "WebShopToolTask",
    "WebShopVerifiersEnv",
    "goal_indices",
    "load_environment",
    "prepare_harness",
]

PLUGIN_ID = "webshop-verifiers"
"""The taskset id verifiers resolves to this environment (the top-level module ``webshop_verifiers``)."""

PLUGIN_MODULE = "webshop_verifiers"
"""The module verifiers imports for :data:`PLUGIN_ID`, shipped by the ``webshop-verifiers`` distribution."""

METRICS = ("r_type", "r_att", "r_option", "r_price")
"""The reward breakdown's components recorded as metrics (0 without a purchase)."""


class WebShopConfig(vf.TasksetConfig):
    """What the taskset loads (``--env.taskset.*``) and how episodes are played."""

    shop: str | None = None
    """A reference-format shop directory (None: the embedded 1,000-product shop)."""
    goals: str | None = None
    """A frozen goal-set file (None: goals built from the shop)."""
    human_goals: bool = False
    """Human instructions instead of synthetic goals."""
    price_seed: int = Field(0, ge=0)
    """Seeds product prices and price caps (0: the reference's run)."""
    split: Literal["test", "eval", "train", "all"] = "test"
    """The goals served: test (the first 500: the published evaluation), eval, train, or all."""
    goal_indices: list[int] | None = None
    """Play exactly these goals (indices into the goal set, in this order) instead of the split's."""
    limit: int | None = Field(None, ge=0)
    """Keep only the first `limit` goals."""
    format: Literal["think-answer", "react", "verl-agent", "tools"] = "think-answer"
    """The prompt format: the turns the model reads and the answer it must write (docs/agents.md);
    ``tools``: the model calls ``search``/``click`` (:mod:`webshop_gym.integrations.verifiers_tools`)."""
    history: int | None = Field(-1, ge=-1)
    """verl-agent only: earlier steps repeated inside each prompt (-1: the format's default, 2)."""
    closest: bool = False
    """Map an inadmissible answer to the closest admissible action (as `webshop-gym eval --closest`)."""
    max_steps: int | None = Field(15, ge=1)
    """Actions (invalid ones included) after which the episode ends without a purchase."""
    search_backend: Literal["bm25", "pyserini"] = "bm25"
    """The search engine (identical rankings)."""


class WebShopData(vf.TaskData):
    """One goal: its index in the goal set and its instruction."""

    goal_index: int
    instruction: str


class WebShopTask(vf.Task[WebShopData, vf.State, vf.TaskConfig]):
    """A goal to shop for (scored by the env as it plays: WebShop pays at the purchase)."""

    @property
    def key(self) -> str:
        """The goal, a durable identity across runs (the default hash includes the run-local ``idx``)."""
        return f"webshop-goal-{self.data.goal_index}"


def _shop(config: WebShopConfig):
    return shared_shop(config.shop, goals=config.goals, human_goals=config.human_goals,
                       price_seed=config.price_seed, search_backend=config.search_backend)


def goal_indices(config: WebShopConfig) -> list[int]:
    """The goals a config serves, in order (the one place a named evaluation protocol will plug in).

    Raises:
        GoalNotFound: a goal index outside the goal set, or a split without goals.
    """
    goals = _shop(config).goals
    # PROTOCOLS: when webshop_gym.protocols lands, a `protocol: str | None` field on WebShopConfig
    # resolves here to that protocol's goal list (and its shop settings); nothing else changes.
    if config.goal_indices is not None:
        bad = [i for i in config.goal_indices if not 0 <= i < len(goals)]
        if bad:
            raise GoalNotFound(f"goal_indices {bad} are outside the goal set (goals 0..{len(goals) - 1})")
        chosen = list(config.goal_indices)
    else:
        chosen = list(goals.split_range(config.split))
        if not chosen:
            raise GoalNotFound(f"split {config.split!r} holds no goals in this goal set ({len(goals)} goals)")
    return chosen if config.limit is None else chosen[: config.limit]


def _prompt(config: WebShopConfig) -> PromptFormat:
    return make_prompt(config.format, history=config.history)


def _system_prompt(config: WebShopConfig) -> str | None:
    return None if config.format == "tools" else _prompt(config).system


class WebShopTaskset(vf.Taskset[WebShopTask, WebShopConfig]):
    """One task per goal of the configured split (or goal list), in goal order."""

    def load(self) -> Iterator[WebShopTask]:
        """Yield the tasks; the shop loads (or comes from this process's cache) on first use."""
        config = self.config
        instructions = _shop(config).goals.instruction
        system = _system_prompt(config)
        for goal in goal_indices(config):
            yield WebShopTask(
                WebShopData(id=str(goal), name=f"goal-{goal}", prompt=None, system_prompt=system,
                            goal_index=goal, instruction=instructions[goal]),
                config.task,
            )

    @classmethod
    def toolsets(cls, config: WebShopConfig) -> list[vf.Toolset]:
        """The ``tools`` format's server, which lists ``search``/``click`` (one per eval; calls are answered here)."""
        return [WebShopTools(vf.SharedToolsetConfig())] if config.format == "tools" else []


class WebShopToolTask(WebShopTask):
    """A task of the ``tools`` format, made per episode: its hooks step the episode's tool calls in this process.

    verifiers runs a task's ``@vf.intercept`` request hooks on each tool call the model makes,
    before the harness runs it; the result this hook writes is the call's result and the
    harness's tool gate then skips the call (verifiers/v1/session.py, ``gate_tool_calls``).
    """

    def __init__(self, task: WebShopTask, episode: ToolEpisode) -> None:
        super().__init__(task.data, task.config)
        self.episode = episode

    @vf.intercept
    def step_tool_call(self, request: vf.Request) -> vf.Request | None:
        """Write the result of the tool call the request ends with (stepped on the env the first time)."""
        last = request.messages[-1] if request.messages else None
        if not isinstance(last, vf.ToolMessage):
            return None
        answer = next((m for m in reversed(request.messages) if isinstance(m, vf.AssistantMessage)
                       and any(c.id == last.tool_call_id for c in m.tool_calls or [])), None)
        if answer is None:
            raise InvalidArgument(f"tool result {last.tool_call_id!r} follows no call of that id")
        calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                 for c in answer.tool_calls or []]
        content = self.episode.call(last.tool_call_id, answer.content, calls)
        return request.model_copy(update={"messages": [*request.messages[:-1],
                                                       last.model_copy(update={"content": content})]})

    @vf.stop
    def episode_over(self, trace: vf.Trace) -> bool:
        """End the rollout once the episode is over (bought, or the step cap): no further model call."""
        return self.episode.over


class WebShopEnvConfig(vf.EnvConfig):
    """The env's one seat, ``player``: verifiers' null harness (no tools) on the local subprocess runtime."""

    player: vf.AgentConfig = vf.AgentConfig(harness=NullHarnessConfig(id="null"), runtime=SubprocessConfig())


class WebShopVerifiersEnv(vf.Env[WebShopEnvConfig]):
    """Plays each task as one WebShop episode in this process, the model's replies parsed into actions.

    The conversation is the prompt format's: for ``think-answer`` and ``react`` the system
    message, then one user turn per page (the instruction with the first) and the model's
    answers, exactly the messages ``webshop-gym eval`` sends with the whole history shown.
    ``verl-agent`` prompts repeat their own short history inside each user turn, and the
    conversation keeps the earlier turns as well (verifiers' harness holds one conversation).
    """

    async def run(self, task: WebShopTask, agents: vf.Agents) -> None:
        """One episode of ``task``'s goal: a turn per action until the purchase or the step cap."""
        config: WebShopConfig = self.taskset.config
        if config.format == "tools":
            await self._run_tools(task, agents, config)
            return
        env = WebShopEnv(shop=_shop(config), split=None, max_steps=config.max_steps)
        episode = TextEpisode(env, task.data.goal_index, _prompt(config), config.closest, task.data.instruction)
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn(last_user_turn(episode.messages()))
            while not segment.terminated:
                if episode.act(segment.last_reply).done:
                    break
                segment = await interaction.turn(last_user_turn(episode.messages()))
            self._score(interaction.trace, task, episode.reward, episode.info, episode.actions, episode.valid,
                        episode.well_formed)

    async def _run_tools(self, task: WebShopTask, agents: vf.Agents, config: WebShopConfig) -> None:
        """The ``tools`` format: the model's tool calls are stepped by the task's hook, within a harness segment.

        A segment ends when the model answers without a tool call (stepped as an invalid action,
        the model then told so in a user turn, as ``eval --prompt tools`` does) or when the
        episode is over (the task's stop refuses the next model call).
        """
        env = WebShopEnv(shop=_shop(config), split=None, max_steps=config.max_steps)
        episode = ToolEpisode(env, task.data.goal_index, config.max_steps)
        check_instruction(task.data.goal_index, task.data.instruction, episode.info["instruction"])
        playing = WebShopToolTask(task, episode)
        async with agents.player.interaction(playing) as interaction:
            segment = await interaction.turn(episode.first_message)
            while not segment.terminated and not episode.over:
                message = episode.no_call(segment.last_reply)
                if episode.over:  # that answer used the last step
                    break
                segment = await interaction.turn(message)
            self._score(interaction.trace, task, episode.reward, episode.info, episode.actions, episode.valid,
                        episode.well_formed)

    @staticmethod
    def _score(trace: vf.Trace, task: WebShopTask, reward: float, info: dict[str, Any], actions: list[str],
               valid: list[bool], well_formed: list[bool]) -> None:
        breakdown = info.get("reward_info") or {}
        trace.record_reward("webshop_reward", reward, 1.0)
        for name in METRICS:
            trace.record_metric(name, float(breakdown.get(name, 0.0)))
        trace.record_metric("success", float(reward == 1.0))
        trace.record_metric("steps", float(len(actions)))
        trace.record_metric("invalid_actions", float(sum(not v for v in valid)))
        trace.record_metric("format_errors", float(sum(not w for w in well_formed)))
        trace.info["webshop"] = {
            "goal_index": task.data.goal_index,
            "actions": actions,
            "purchased_asin": info.get("purchased_asin"),
            "reward_info": {k: (v if isinstance(v, bool | str) else float(v)) for k, v in breakdown.items()},
        }


def prepare_harness() -> str:
    """Make verifiers' chat program (the null harness) runnable without network; return its script's path.

    verifiers runs the program as a uv script (PEP 723) and syncs its environment before each eval
    (``Runtime.prepare_uv_script``, verifiers/v1/runtimes/base.py), which asks PyPI unless the
    script has a lock.  This prepares it once with verifiers' own code (network needed; uv is
    installed by verifiers if none is on the path) and writes the lock beside it with ``uv lock
    --script``; later syncs need only uv's cache.  ``./install.sh --all`` runs it.

    Raises:
        RuntimeError: uv is missing or could not lock the script.
    """
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE
    from verifiers.v1.runtimes import SubprocessConfig as Local
    from verifiers.v1.runtimes import provision_runtime

    async def prepare() -> str:
        async with provision_runtime(Local()) as runtime:
            _interpreter, script = await runtime.prepare_uv_script(CHAT_PROGRAM_SOURCE, activate=False)
            return script

    script = asyncio.run(prepare())
    path = os.pathsep.join([str(Path.home() / ".local" / "bin"), os.environ.get("PATH", "")])  # as verifiers looks
    uv = shutil.which("uv", path=path)
    if uv is None:
        raise RuntimeError("uv is not on the path (verifiers installs it into ~/.local/bin on first use)")
    done = subprocess.run([uv, "lock", "--script", script, "--no-config", "-q"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"uv lock --script {script} failed: {done.stderr.strip()[-2000:]}")
    return script


def load_environment(*, player: dict[str, Any] | None = None, **taskset: Any) -> WebShopVerifiersEnv:
    """Build the verifiers env in Python (what ``vf-eval webshop-verifiers`` builds from its flags).

    Args:
        player: overrides of the player seat (``{"runtime": {"type": "docker"}, "max_turns": 30}``).
        **taskset: :class:`WebShopConfig` fields: ``split``, ``goal_indices``, ``limit``,
            ``format``, ``max_steps``, ``shop``, ``human_goals``, ...

    Returns:
        A ``vf.Env`` whose ``taskset`` yields one task per goal.

    Raises:
        DependencyNotInstalled: the ``webshop-verifiers`` distribution is not installed (verifiers
            builds the env from its id, which names the module ``webshop_verifiers``).
    """
    if importlib.util.find_spec(PLUGIN_MODULE) is None:
        raise DependencyNotInstalled(
            f"verifiers builds this env from its id {PLUGIN_ID!r}, whose module {PLUGIN_MODULE!r} comes with the "
            "webshop-verifiers distribution: pip install webshop-verifiers (from a checkout: "
            "pip install -e '.[verifiers]' -e environments/webshop_verifiers)")
    data: dict[str, Any] = {"taskset": {"id": PLUGIN_ID, **{k: os.fspath(v) if isinstance(v, os.PathLike) else v
                                                            for k, v in taskset.items()}}}
    if player:
        data["player"] = player
    return vf.load_environment(vf.resolve_env_config(data))
