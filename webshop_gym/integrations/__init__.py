"""Integrations with outside training stacks: one module (or subpackage) per stack.

* :mod:`webshop_gym.integrations.trl`: WebShop as a TRL ``GRPOTrainer(environment_factory=...)``
  environment (:class:`~webshop_gym.integrations.trl.WebShopToolEnv`) and the goal dataset that
  feeds it (:func:`~webshop_gym.integrations.trl.webshop_dataset`).
  :class:`~webshop_gym.integrations.trl.WebShopRemoteToolEnv` is the same class played on a remote
  ``webshop-gym openenv`` server, over the OpenEnv session of
  :mod:`webshop_gym.integrations.remote_session`.
* ``webshop_gym.integrations.openenv``: WebShop served over OpenEnv's protocol
  (``webshop-gym openenv``), its typed client, and prompt builders and the reply parser for any client.
  Its sessions also serve ``search``/``click`` as OpenEnv MCP tools, and
  ``webshop_gym.integrations.openenv.harness`` makes them resource sessions of OpenEnv's harnesses.
* ``webshop_gym.integrations.verifiers``: a native verifiers 0.4 environment (``vf-eval
  webshop-verifiers``; the id's module comes with the ``webshop-verifiers`` distribution,
  ``environments/webshop_verifiers`` in the repository).
* ``webshop_gym.integrations.skyrl``: a SkyRL-gym text environment (``environment.env_class=webshop``).
* ``webshop_gym.integrations.gem``: GEM environments (``gem.make("webshop:test")``).
* :mod:`webshop_gym.integrations.text_episode`: the reply-parse-step loop the text stacks share;
  :mod:`webshop_gym.integrations.remote_tasks`: a remote server's goals (``webshop_dataset(url=...)``).

The TRL and OpenEnv modules import their stack lazily, so importing this package never requires
TRL, ``datasets`` or OpenEnv; ``verifiers``, ``skyrl`` and ``gem`` are built on their stack's
classes and import it at module level.  A missing stack raises
:class:`~webshop_gym.error.DependencyNotInstalled` with the pip line of its extra
(``pip install 'webshop-gym[trl]'``, ``[openenv]``, ``[skyrl]``, ``[gem]``; ``pip install
webshop-verifiers`` for verifiers).  The
modules here sit on the package's public API (:class:`~webshop_gym.WebShopEnv`,
:func:`~webshop_gym.load_shop`) and are never imported by the rest of the package.
"""

from __future__ import annotations
