"""The ``webshop-gym`` command line: subcommands, their flags and argument types.

Top of the package's layers (only :mod:`webshop_gym.server` sits above it): library code never
imports it.  ``python -m webshop_gym.cli`` is the same as ``webshop-gym``.
"""

from __future__ import annotations

from webshop_gym.cli.app import main

__all__ = ["main"]
