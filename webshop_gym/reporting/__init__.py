"""Reading runs for people: ``webshop-gym report`` (HTML, Markdown, exports) and its plots.

:mod:`.report` builds the report's tables from :mod:`webshop_gym.analysis`'s figures of runs
read by :mod:`webshop_gym.runs`; :mod:`.plots` draws them (matplotlib, the ``report`` extra).
Never imports the evaluation loops, the CLI or the server.
"""
