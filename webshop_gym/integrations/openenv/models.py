"""The typed OpenEnv models of WebShop: one action string in, a page with its reward out.

OpenEnv serializes only declared fields (undeclared ones and ``metadata`` do not survive every
client), so everything an agent or a trainer needs is a field here: the page text, the
instruction, the admissible actions, the reward and its breakdown.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from webshop_gym.core.actions import MAX_ACTION_LENGTH
from webshop_gym.error import InvalidArgument, close_match

__all__ = ["RESET_ARGUMENTS", "WebShopAction", "WebShopObservation", "WebShopState", "check_reset_arguments"]

RESET_ARGUMENTS = ("seed", "episode_id", "goal_index", "split", "index")
"""The arguments ``reset`` takes."""


def check_reset_arguments(arguments: dict[str, Any]) -> None:
    """Raise :class:`~webshop_gym.error.InvalidArgument` naming the known arguments when any other is given."""
    unknown = sorted(k for k in arguments if k not in RESET_ARGUMENTS)
    if not unknown:
        return
    hints = [f"{k!r} -> {m!r}" for k in unknown if (m := close_match(k, RESET_ARGUMENTS))]
    raise InvalidArgument(
        f"unknown reset argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
        f"reset takes {', '.join(RESET_ARGUMENTS)}" + (f" (did you mean {'; '.join(hints)}?)" if hints else ""))


class WebShopAction(Action):
    """One WebShop action: ``search[<keywords>]`` or ``click[<label>]``.

    A single string field, so generic clients (``GenericEnvClient``, verifiers' OpenEnv
    taskset) can drive the environment with ``{"action": "search[red shoes]"}``.  An action
    that is not admissible on the current page is a no-op with reward 0 and
    ``invalid_action=True``, as in :class:`~webshop_gym.envs.env.WebShopEnv`; it never ends a session.
    An action longer than :data:`~webshop_gym.core.actions.MAX_ACTION_LENGTH` characters is
    outside the action space (``/schema`` publishes it as ``maxLength``): the server refuses it
    with an error naming the bound and does not step.
    """

    action: str = Field(description=f"search[<keywords>] or click[<label>], at most {MAX_ACTION_LENGTH:,} characters; "
                                    "see the observation's admissible_actions",
                        json_schema_extra={"maxLength": MAX_ACTION_LENGTH})

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any):
        """A step's data: this action, or one of OpenEnv's MCP actions (``list_tools``, ``call_tool``).

        OpenEnv's server reads every step frame with its action class; it recognises its MCP
        action types by their ``type`` only for servers without an action class of their own, so
        this one reads them itself: the session then serves ``search``/``click`` as MCP tools.
        """
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind in _MCP_ACTIONS:
            return _MCP_ACTIONS[kind].model_validate(obj, *args, **kwargs)
        return super().model_validate(obj, *args, **kwargs)


_MCP_ACTIONS = {"list_tools": ListToolsAction, "call_tool": CallToolAction}


class WebShopObservation(Observation):
    """The page after a reset or an action, with the reward (``reward``, ``done`` inherited)."""

    text: str = Field(description="the page in the server's observation mode (default: text with ' [SEP] ' between strings)")
    instruction: str = Field(description="the goal's instruction")
    goal_index: int = Field(description="index of the goal in the server's goal set")
    page: str = Field(description="start, results, item, description, features, reviews, attributes or done")
    steps: int = Field(description="actions taken in this episode (invalid ones count)")
    admissible_actions: list[str] = Field(
        description="every complete action valid now; 'search[<query>]' stands for any search")
    has_search_bar: bool = Field(description="the page has a search bar (the reference's available_actions)")
    clickables: list[str] = Field(description="labels of the page's buttons and links (the reference's available_actions)")
    invalid_action: bool = Field(default=False, description="the last action was not admissible (a no-op)")
    invalid_reason: str | None = Field(
        default=None, description="why the last action failed in the engine (a search it could not run), else None")
    truncated: bool = Field(default=False, description="the episode ended at the step cap without a purchase")
    success: bool | None = Field(default=None, description="after a purchase: reward == 1.0")
    reward_breakdown: dict[str, float | bool] | None = Field(
        default=None, description="after a purchase: the reference's reward_info (r_type, r_att, r_option, r_price, ...)")
    purchased_asin: str | None = Field(default=None, description="after a purchase: the product bought")
    purchased_options: dict[str, str] | None = Field(default=None, description="after a purchase: the options chosen")
    purchased_price: float | None = Field(default=None, description="after a purchase: the price paid")


class WebShopState(State):
    """The session's episode (``episode_id``, ``step_count`` inherited)."""

    goal_index: int | None = Field(default=None, description="the episode's goal (None before the first reset)")
    instruction: str | None = Field(default=None, description="the goal's instruction")
    split: str | None = Field(default=None, description="the split the goal was drawn or indexed from (None: all goals)")
    done: bool = Field(default=False, description="the episode ended (purchase or step cap)")
    reward: float = Field(default=0.0, description="the episode's reward so far (WebShop pays once, at purchase)")
    max_steps: int | None = Field(default=None, description="the server's step cap per episode (None: none)")
