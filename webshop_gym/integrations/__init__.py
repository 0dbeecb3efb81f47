"""Integrations with outside training stacks: one module (or subpackage) per stack.

* :mod:`webshop_gym.integrations.trl`: WebShop as a TRL ``GRPOTrainer(environment_factory=...)``
  environment (:class:`~webshop_gym.integrations.trl.WebShopToolEnv`) and the goal dataset that
  feeds it (:func:`~webshop_gym.integrations.trl.webshop_dataset`).
  :class:`~webshop_gym.integrations.trl.WebShopRemoteToolEnv` is the same class played on a remote
  ``webshop-gym openenv`` server.
* ``webshop_gym.integrations.openenv``: WebShop served over OpenEnv's protocol
  (``webshop-gym openenv``), its typed client, and prompt builders and the reply parser for any client.
* ``webshop_gym.integrations.verifiers``: a native verifiers 0.4 environment (``vf-eval
  webshop-verifiers``; imports verifiers at module level, so import it only where the
  ``verifiers`` extra is installed).

Each module imports its stack lazily, inside the function that needs it, so importing this
package (or any module in it) never requires TRL, ``datasets``, OpenEnv or their dependencies;
a missing one raises :class:`~webshop_gym.error.DependencyNotInstalled` with the pip line of its
extra (``pip install 'webshop-gym[trl]'``, ``pip install 'webshop-gym[openenv]'``,
``pip install 'webshop-gym[verifiers]'``).  The
modules here sit on the package's public API (:class:`~webshop_gym.WebShopEnv`,
:func:`~webshop_gym.load_shop`) and are never imported by the rest of the package.
"""

from __future__ import annotations
