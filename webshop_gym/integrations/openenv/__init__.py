"""WebShop as an OpenEnv environment server (``webshop-gym openenv``; ``pip install 'webshop-gym[openenv]'``).

Owns the typed models (:mod:`.models`), the environment facade over the shared engine
(:mod:`.environment`, which also serves ``search``/``click`` as MCP tools), the app factory and
server (:mod:`.app`), a typed client (:mod:`.client`), the session factory of OpenEnv's harnesses
(:mod:`.harness`) and the command (:mod:`.cli`).  OpenEnv is imported only by those modules,
so ``import webshop_gym.integrations.openenv`` and ``webshop-gym --help`` work without it.
For any client, :mod:`.prompting` (pure text, no OpenEnv) builds prompts in our formats from an
observation and parses a model's reply into the action the server takes.  Never imports the
Flask server.
"""

from __future__ import annotations

import importlib

from .prompting import Turn, build_prompt, observation_info, parse_action, prompt_messages

__all__ = ["SlotPool", "Turn", "WebShopAction", "WebShopEnvClient", "WebShopEnvironment", "WebShopObservation",
           "WebShopSessionFactory", "WebShopState", "WebShopToolSession", "build_prompt", "create_app", "mcp_tools",
           "observation_info", "parse_action", "prompt_messages", "serve"]

_WHERE = {
    "WebShopAction": "models", "WebShopObservation": "models", "WebShopState": "models",
    "SlotPool": "environment", "WebShopEnvironment": "environment",
    "create_app": "app", "serve": "app", "WebShopEnvClient": "client", "mcp_tools": "environment",
    "WebShopSessionFactory": "harness", "WebShopToolSession": "harness",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(f"{__name__}.{_WHERE[name]}")
    except ImportError as exc:
        if "openenv" not in str(exc) and "fastapi" not in str(exc):
            raise
        from webshop_gym.error import DependencyNotInstalled

        raise DependencyNotInstalled(f"{name} needs OpenEnv ({exc}): pip install 'webshop-gym[openenv]'") from exc
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
