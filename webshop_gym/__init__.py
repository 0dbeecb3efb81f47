"""webshop-gym: the WebShop benchmark as a fast, faithful Gymnasium environment."""

from __future__ import annotations

from webshop_gym.shop import Shop, load_shop

__version__ = "0.1.0"

__all__ = ["Shop", "__version__", "load_shop"]
