"""Integrations with outside training stacks: one module (or subpackage) per stack.

* :mod:`webshop_gym.integrations.trl`: WebShop as a TRL ``GRPOTrainer(environment_factory=...)``
  environment (:class:`~webshop_gym.integrations.trl.WebShopToolEnv`) and the goal dataset that
  feeds it (:func:`~webshop_gym.integrations.trl.webshop_dataset`).
* ``webshop_gym.integrations.openenv``: WebShop served over OpenEnv's protocol
  (``webshop-gym openenv``).

Each module imports its stack lazily, inside the function that needs it, so importing this
package (or any module in it) never requires TRL, ``datasets``, OpenEnv or their dependencies;
a missing one raises :class:`~webshop_gym.error.DependencyNotInstalled` with the pip line of its
extra (``pip install 'webshop-gym[trl]'``, ``pip install 'webshop-gym[openenv]'``).  The
modules here sit on the package's public API (:class:`~webshop_gym.WebShopEnv`,
:func:`~webshop_gym.load_shop`) and are never imported by the rest of the package.
"""

from __future__ import annotations
