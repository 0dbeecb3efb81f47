"""WebShop's OpenEnv environment package (the folder ``openenv push`` uploads as a Space)."""

from webshop_gym.integrations.openenv import (
    WebShopAction,
    WebShopEnvClient,
    WebShopObservation,
    WebShopState,
)

__all__ = ["WebShopAction", "WebShopEnvClient", "WebShopObservation", "WebShopState"]
