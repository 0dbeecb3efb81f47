"""The simulator core: episode state as arrays and pure transitions (no web, search or NLP imports).

Owns the batch state, the pages and the action grammar.  Imports only :mod:`webshop_gym.utils`:
never the shop, search, reward, renderers or anything above (import-linter checks it).
"""
