"""Without Ray installed, the Ray vector env says how to install it (runs without Ray)."""

from __future__ import annotations

import sys

import pytest

from webshop_gym.error import DependencyNotInstalled


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    from webshop_gym.envs.ray_env import WebShopRayVectorEnv

    with pytest.raises(DependencyNotInstalled, match=r"pip install 'webshop-gym\[ray\]'"):
        WebShopRayVectorEnv(2)
