"""A typed OpenEnv client of the WebShop server.

    >>> from webshop_gym.integrations.openenv import WebShopEnvClient   # doctest: +SKIP
    >>> with WebShopEnvClient(base_url="http://127.0.0.1:8000").sync() as env:  # doctest: +SKIP
    ...     result = env.reset(goal_index=0)
    ...     result = env.step("search[red shoes]")      # a WebShopAction or a plain string
    ...     result.observation.admissible_actions[:2], result.reward, result.done

Any OpenEnv client works as well: ``GenericEnvClient`` with ``{"action": "..."}`` dicts.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from .models import WebShopAction, WebShopObservation, WebShopState, check_reset_arguments

__all__ = ["WebShopEnvClient"]


class WebShopEnvClient(EnvClient[WebShopAction, WebShopObservation, WebShopState]):
    """OpenEnv client of ``webshop-gym openenv``: typed actions, observations and state.

    ``step`` takes a :class:`~webshop_gym.integrations.openenv.models.WebShopAction` or the
    action string itself; ``reset`` takes ``seed``, ``episode_id``, ``goal_index``, ``split``
    and ``index``; any other argument raises :class:`~webshop_gym.error.InvalidArgument` here,
    before anything is sent (the server rejects it too).  Async by default; ``.sync()`` gives the
    blocking wrapper (OpenEnv's).
    """

    async def _reset_async(self, **kwargs: Any) -> StepResult[WebShopObservation]:
        check_reset_arguments(kwargs)
        return await super()._reset_async(**kwargs)

    def _step_payload(self, action: WebShopAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            return {"action": action}
        if not isinstance(action, WebShopAction):
            raise TypeError(f"action must be a WebShopAction or a string, got {type(action).__name__}")
        payload = {"action": action.action}
        if action.metadata:
            payload["metadata"] = action.metadata
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[WebShopObservation]:
        observation = WebShopObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                         done=payload.get("done", False))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False),
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> WebShopState:
        return WebShopState(**payload)
