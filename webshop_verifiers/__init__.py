"""The verifiers plugin id of webshop-gym: ``vf-eval webshop-verifiers -m MODEL ...``.

verifiers 0.4 resolves a taskset id to a top-level module and reads the ``Taskset`` and ``Env``
classes it exports; this module re-exports :mod:`webshop_gym.integrations.verifiers`, where
everything lives (``pip install 'webshop-gym[verifiers]'``).
"""

from webshop_gym.integrations.verifiers import WebShopTaskset, WebShopVerifiersEnv, load_environment

__all__ = ["WebShopTaskset", "WebShopVerifiersEnv", "load_environment"]
