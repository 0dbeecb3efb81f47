"""webshop-gym: the WebShop benchmark as a fast, faithful Gymnasium environment.

>>> import gymnasium as gym
>>> import webshop_gym
>>> env = gym.make("webshop_gym:WebShop-v0")
"""

from __future__ import annotations

from webshop_gym.envs.env import WebShopEnv
from webshop_gym.envs.ray_env import WebShopRayVectorEnv
from webshop_gym.envs.ray_pool import init_ray
from webshop_gym.envs.registration import register_envs
from webshop_gym.envs.vector_env import WebShopVectorEnv
from webshop_gym.shop import Shop, load_shop
from webshop_gym.wrappers import RecordTrajectory

__version__ = "0.1.0"

__all__ = [
    "RecordTrajectory",
    "Shop",
    "WebShopEnv",
    "WebShopRayVectorEnv",
    "WebShopVectorEnv",
    "__version__",
    "init_ray",
    "load_shop",
    "register_envs",
]

register_envs()
