"""Public alias of :mod:`webshop_gym.agents` (prompt formats, parsers, ``HFPolicy``, tensor adapters).

``webshop_gym.adapters`` is part of the public API (README and docs import from it) and stays
importable under this name; the code lives in :mod:`webshop_gym.agents`.  Nothing inside the
package imports this alias.
"""

from __future__ import annotations

from webshop_gym.agents import *  # noqa: F403
from webshop_gym.agents import __all__  # noqa: F401


def __getattr__(name: str):
    import webshop_gym.agents as agents

    return getattr(agents, name)
