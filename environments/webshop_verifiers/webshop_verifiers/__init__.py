"""WebShop for verifiers: ``vf-eval webshop-verifiers -m MODEL ...`` (``pip install webshop-verifiers``).

verifiers 0.4 resolves the id ``webshop-verifiers`` (or the Hub's ``OWNER/webshop-verifiers@X.Y.Z``)
to this top-level module and takes the ``Taskset`` and ``Env`` classes it exports in ``__all__``;
``load_environment()`` builds the env in Python.  Everything lives in
:mod:`webshop_gym.integrations.verifiers` (webshop-gym, this distribution's one dependency).
"""

from webshop_gym.integrations.verifiers import WebShopTaskset, WebShopVerifiersEnv, load_environment

__all__ = ["WebShopTaskset", "WebShopVerifiersEnv", "load_environment"]
