"""The WebShop OpenEnv server: ``uvicorn server.app:app`` or ``python -m server.app [flags]``.

``app`` is built on first access from the environment variables ``WEBSHOP_MAX_ENVS``
(default 256), ``WEBSHOP_HUMAN_GOALS`` (``1``: human instructions) and ``WEBSHOP_SHOP`` (a
shop folder; default: the embedded 1,000-product shop).  ``main()`` takes the flags of
``webshop-gym openenv`` instead.
"""

import os
import sys


def __getattr__(name: str):
    if name != "app":
        raise AttributeError(name)
    from webshop_gym.integrations.openenv import create_app

    app = create_app(os.environ.get("WEBSHOP_SHOP") or None,
                     human_goals=os.environ.get("WEBSHOP_HUMAN_GOALS", "") not in ("", "0"),
                     max_envs=int(os.environ.get("WEBSHOP_MAX_ENVS", "256")))
    globals()["app"] = app
    return app


def main() -> None:
    """Serve with the flags of ``webshop-gym openenv`` (default here: all interfaces, port 8000)."""
    from webshop_gym.cli import main as webshop_gym

    sys.exit(webshop_gym(["openenv", "--host", "0.0.0.0", "--port", "8000", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
