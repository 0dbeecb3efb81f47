"""OpenEnv's harness route to WebShop: ``MCPHarnessAdapter`` + ``build_model_step`` over the server's MCP tools.

``webshop-gym openenv`` serves two MCP tools on every session, as OpenEnv's MCP tool interface
(RFC 003) defines them: a ``list_tools`` action lists ``search(query)`` and ``click(label)`` with
the schemas of ``webshop-gym eval --prompt tools`` and the TRL environment
(:func:`~webshop_gym.agents.tools.tool_schemas`), and a ``call_tool`` action steps the episode,
its frame carrying the step's ``reward`` and ``done``.  ``reset`` stays the protocol's own
message (OpenEnv reserves the names ``reset``, ``step``, ``state`` and ``close``): it picks the goal.

OpenEnv's white-box harness (``openenv.core.harness.MCPHarnessAdapter``, what TRL's async GRPO
``openenv_harness`` drives) plays a rollout against a *resource session*: its first messages, its
tool list, a tool call, and a final check.  :class:`WebShopSessionFactory` makes them, one OpenEnv
``MCPToolClient`` session each, so a harness plays WebShop with no code of the user's::

    factory = WebShopSessionFactory("http://127.0.0.1:8000")
    session = factory.create(task={"goal_index": 3})
    rollout = MCPHarnessAdapter().run_white_box(build_model_step(llm), session, HarnessRunLimits(max_turns=15))
    reward = session.verify(rollout.messages).env_reward

The conversation is ``eval --prompt tools``'s: the task and the first page in one user message,
then per call a tool message with the page it led to, or the error of an inadmissible call
(``{'error': '...'}``, as TRL writes it).

TRL's async GRPO ``openenv_harness`` (``_HarnessRolloutLoop._run_session``) calls
``factory.create(row["prompt"], seed=group_id, episode_id=rollout_id)``: the task is the row's
prompt *messages*, which name no goal, and ``group_id`` counts the rows TRL has drawn (one per group
of ``num_generations`` rollouts, in dataset order).  So a message list plays the goal of row
``group_id``: ``goals[(dataset_start_index + group_id) % len(goals)]``, where ``goals`` is the
training dataset given to the factory (its ``goal_index`` column), else the split's goals on the
server (``split="train"`` by default; test goals only when asked).  Every rollout of a group plays
one goal, and with ``goals=`` it is exactly the row's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from openenv.core.env_server.mcp_types import CallToolAction, Tool
from openenv.core.harness import ResourceSession, ResourceSessionFactory, ToolResult, VerifyResult
from openenv.core.mcp_client import MCPToolClient

from webshop_gym.agents.tools import TASK_PROMPT, reset_text, tool_message_content
from webshop_gym.error import InvalidArgument

from ..remote_tasks import remote_goals
from .models import check_reset_arguments

__all__ = ["WebShopSessionFactory", "WebShopToolSession"]


def _reset_arguments(task: Any, seed: int | None, episode_id: str | None) -> dict[str, Any]:
    """The reset of a task: a goal index, a dataset row with ``goal_index``, reset arguments, or ``None`` (a drawn goal)."""
    if task is None:
        arguments: dict[str, Any] = {}
    elif isinstance(task, int) and not isinstance(task, bool):
        arguments = {"goal_index": task}
    elif isinstance(task, Mapping):
        arguments = {k: task[k] for k in ("goal_index", "split", "index", "seed") if k in task}
        if not arguments:
            raise InvalidArgument(f"a task is a goal index or a dict with goal_index (or split and index), got keys "
                                  f"{sorted(task)}")
    else:
        raise InvalidArgument(f"a task is a goal index, a dict with goal_index, or None, got {type(task).__name__}")
    if seed is not None:
        arguments.setdefault("seed", seed)
    if episode_id is not None:
        arguments["episode_id"] = episode_id
    check_reset_arguments(arguments)
    return arguments


class WebShopToolSession(ResourceSession):
    """One episode on a ``webshop-gym openenv`` server, played through its MCP tools.

    Args:
        base_url: the server (``http://host:8000``).
        task: see :class:`WebShopSessionFactory`.
        seed, episode_id: passed to ``reset``.
        message_timeout_s: seconds to wait for each answer of the server.

    Attributes:
        instruction: the goal's instruction.
        goal_index: the goal.
        reward: the step reward of the last call (WebShop pays once, at the purchase).
        done: whether the episode is over.
    """

    def __init__(self, base_url: str, task: Any = None, seed: int | None = None, episode_id: str | None = None,
                 message_timeout_s: float = 60.0):
        arguments = _reset_arguments(task, seed, episode_id)
        self._client = MCPToolClient(base_url=base_url, message_timeout_s=message_timeout_s).sync()
        try:
            self._client.connect()
            first = self._client.reset(**arguments).observation
            self._tools = self._client.list_tools()
        except Exception:
            self.close()
            raise
        self.goal_index = int(first.goal_index)
        self.instruction = str(first.instruction)
        self._first = TASK_PROMPT + reset_text(first.text, {"instruction": first.instruction,
                                                            "valid_actions": list(first.admissible_actions)}, None)
        self.reward = 0.0
        self.done = False
        self.metadata: dict[str, Any] = {}
        self._closed = False

    def initial_messages(self) -> list[dict[str, Any]]:
        """The task and the goal's first page, in one user message (``eval --prompt tools``'s first message)."""
        return [{"role": "user", "content": self._first}]

    def list_tools(self) -> list[Tool]:
        """The server's tools: ``search`` and ``click``."""
        return list(self._tools)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Step the episode with one call; the result's ``data`` is the tool message ``eval --prompt tools`` writes."""
        result = self._client.step(CallToolAction(tool_name=name, arguments=dict(arguments)))
        observation = result.observation
        if observation.error is not None:  # a transport or framework error, not the tool's own
            return ToolResult(data=tool_message_content(error=observation.error.message), done=bool(result.done),
                              metadata={"reward": result.reward}, error=observation.error.message)
        payload = observation.result if isinstance(observation.result, Mapping) else {"data": observation.result}
        text = str(payload.get("data"))
        content = tool_message_content(error=text) if payload.get("is_error") else tool_message_content(result=text)
        self.reward = float(result.reward or 0.0)
        self.done = bool(result.done)
        self.metadata = dict(observation.metadata or {})
        return ToolResult(data=content, done=self.done, metadata={"reward": self.reward, **self.metadata},
                          error=text if payload.get("is_error") else None)

    def verify(self, transcript: list[dict[str, Any]], final_state: Any | None = None) -> VerifyResult:
        """The episode's WebShop reward (forwarded from the server: the purchase's, 0.0 without one)."""
        breakdown = self.metadata.get("reward_breakdown") or {}
        metrics = {"goal_index": self.goal_index, "steps": self.metadata.get("steps", 0),
                   "success": float(self.done and self.reward == 1.0)}
        metrics.update({k: float(v) for k, v in breakdown.items() if k in ("r_type", "r_att", "r_option", "r_price")})
        return VerifyResult(env_reward=self.reward, done=self.done, metrics=metrics,
                            artifacts={"purchased_asin": self.metadata.get("purchased_asin")})

    def close(self) -> None:
        """Close the session (its server slot is freed at once)."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - the socket may be gone already
            pass


def _goal_column(goals: Iterable[Any]) -> list[int]:
    """The goal indices of a dataset (rows with ``goal_index``) or of a list of goal indices."""
    out = []
    for row in goals:
        goal = row.get("goal_index") if isinstance(row, Mapping) else row
        if isinstance(goal, bool) or not isinstance(goal, int) or goal < 0:
            raise InvalidArgument(f"goals must be dataset rows with goal_index or goal indices (integers >= 0), got {row!r}")
        out.append(goal)
    if not out:
        raise InvalidArgument("goals holds no goal")
    return out


class WebShopSessionFactory(ResourceSessionFactory[WebShopToolSession]):
    """Sessions of a ``webshop-gym openenv`` server for OpenEnv's harnesses (``MCPHarnessAdapter``, TRL's ``openenv_harness``).

    Args:
        base_url: the server (``http://host:8000``).
        message_timeout_s: seconds to wait for each answer of the server.
        goals: the training dataset (rows with ``goal_index``: ``webshop_dataset``'s) or its goal
            indices: a task given as prompt messages (TRL's ``openenv_harness``) plays row ``seed``'s goal.
        split, protocol, allow_test_goals: without ``goals``, such a task plays the goal at position
            ``seed`` of this split of the server (as :func:`~webshop_gym.integrations.trl.webshop_dataset`
            with ``url=`` lists it: ``"train"`` by default, a protocol's test goals refused unless allowed).
        dataset_start_index: TRL's ``dataset_start_index`` (the row its worker starts at, on resume).
        sampling: what TRL passes when the harness owns the model loop; WebShop's sessions are
            white-box (TRL samples each turn), so it is refused: give TRL ``harness_adapter=MCPHarnessAdapter()``.

    A task is a goal index, a dataset row with ``goal_index`` (``webshop_dataset`` rows work), a
    dict with ``split`` and ``index``, a list of prompt messages (TRL's call: the goal of row
    ``seed``), or ``None`` (a goal drawn on the server, seeded by ``seed``).
    """

    def __init__(self, base_url: str, message_timeout_s: float = 60.0, *, goals: Iterable[Any] | None = None,
                 split: str = "train", protocol: str | None = None, allow_test_goals: bool = False,
                 dataset_start_index: int = 0, sampling: Any = None):
        if sampling is not None:
            raise InvalidArgument("WebShop's sessions are white-box (the trainer samples each turn): give TRL's "
                                  "HarnessRolloutWorker harness_adapter=MCPHarnessAdapter(), which makes it call the "
                                  "factory without sampling=")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://", "ws://", "wss://")):
            raise InvalidArgument(f"base_url must be the http:// address of a webshop-gym openenv server, got {base_url!r}")
        if isinstance(dataset_start_index, bool) or not isinstance(dataset_start_index, int) or dataset_start_index < 0:
            raise InvalidArgument(f"dataset_start_index must be an integer >= 0, got {dataset_start_index!r}")
        self.base_url = base_url.rstrip("/")
        self.message_timeout_s = float(message_timeout_s)
        self.split, self.protocol, self.allow_test_goals = split, protocol, bool(allow_test_goals)
        self.dataset_start_index = dataset_start_index
        self._goals = None if goals is None else _goal_column(goals)

    def create(self, task: Any = None, seed: int | None = None, episode_id: str | None = None) -> WebShopToolSession:
        """A new session reset on ``task``'s goal (a message list: the goal of row ``seed``, see the module's docs)."""
        if isinstance(task, Sequence) and not isinstance(task, (str, bytes)):
            task = {"goal_index": self.row_goal(seed)}
        return WebShopToolSession(self.base_url, task, seed, episode_id, self.message_timeout_s)

    def row_goal(self, group_id: int | None) -> int:
        """The goal TRL's rollouts of group ``group_id`` play: that row's, or the split's goal at that position."""
        if isinstance(group_id, bool) or not isinstance(group_id, int) or group_id < 0:
            raise InvalidArgument(f"a task given as prompt messages needs seed=<the row's group id, an integer >= 0> "
                                  f"(TRL's openenv_harness passes it), got seed={group_id!r}")
        if self._goals is None:
            self._goals = [goal for goal, _ in remote_goals(self.base_url, self.split, protocol=self.protocol,
                                                             allow_test_goals=self.allow_test_goals,
                                                             timeout=self.message_timeout_s)]
        return self._goals[(self.dataset_start_index + group_id) % len(self._goals)]
