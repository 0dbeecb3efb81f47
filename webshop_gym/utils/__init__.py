"""Small utilities every layer may use: argument checks, cache paths, a byte-bounded LRU, the Numba helpers.

Owns nothing about shops or episodes.  Imports only :mod:`webshop_gym.error` and the standard
library / numpy / numba: never another webshop_gym subpackage.
"""
