"""Observations: text and text_rich from state, HTML from templates, URLs, and the HTML-parsing rule for tests.

Reads the simulator state of :mod:`webshop_gym.core`; never imports search, reward, the
catalog's files or the shop (the Engine hands it what a page shows).
"""
