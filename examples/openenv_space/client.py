"""The typed client of this environment (webshop-gym's :class:`WebShopEnvClient`)."""

from webshop_gym.integrations.openenv.client import WebShopEnvClient

__all__ = ["WebShopEnvClient"]
