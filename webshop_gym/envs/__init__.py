"""The Gymnasium front ends: ``WebShopEnv``, ``WebShopVectorEnv``, worker processes, Ray, spaces, registration.

Thin facades over :class:`webshop_gym.engine.Engine`.  Never imports agents, runs, compat, the
CLI or the server.
"""
