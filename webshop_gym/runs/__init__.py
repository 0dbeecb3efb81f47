"""Runs on disk, the record of an evaluation: its format, its readers, its index, its replay.

:mod:`.log` owns the JSON-lines format (trajectory logs and run files), :mod:`.run` writes and
reads run files, :mod:`.index` indexes one for the viewer, :mod:`.replay` re-plays and checks
one, :mod:`.shards` merges the shards of one evaluation.  A run's figures and failure taxonomy
come from :mod:`webshop_gym.analysis` (below); the loops that write runs
(:mod:`webshop_gym.evaluation`) and the report (:mod:`webshop_gym.reporting`) sit above.
Never imports the evaluation loops, the report, the CLI or the server.
"""
