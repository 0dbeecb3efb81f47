"""Drop-in compatibility with code written for the reference WebShop.

* :class:`WebAgentTextEnv` and :class:`SimServer`: the reference's text env (gym 0.x API) on
  webshop-gym's engine.  ``from webshop_gym.compat import WebAgentTextEnv`` replaces
  ``from web_agent_site.envs import WebAgentTextEnv``.
* Importing this package registers ``WebAgentTextEnv-v0`` with the old ``gym`` package when it
  is installed, so ``gym.make("WebAgentTextEnv-v0", ...)`` works as with the reference.

The reference site's URLs and AgentGym's env-server API are served by ``webshop-gym serve``
(``webshop_gym.server.site`` and ``webshop_gym.server.agentgym``).  ``docs/compat.md`` gives the
one-line change for verl-agent, AgentGym and ReAct-style agents and every behaviour difference.
A facade over :class:`webshop_gym.engine.Engine`: never imports runs, the CLI or the server.
"""

from __future__ import annotations

from webshop_gym.compat.registration import GYM_ID, register_gym
from webshop_gym.compat.sim_server import GoalList, SimServer, random_idx
from webshop_gym.compat.text_env import ImageFeaturesUnavailable, WebAgentTextEnv

__all__ = [
    "GYM_ID",
    "GoalList",
    "ImageFeaturesUnavailable",
    "SimServer",
    "WebAgentTextEnv",
    "random_idx",
    "register_gym",
]

register_gym()
