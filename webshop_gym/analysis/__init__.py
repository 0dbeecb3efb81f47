"""What is computed from episode records, defined once for every reader of a run.

:mod:`.figures` owns a run's figures (Score, SR, intervals, counts, model-call accounting,
cost), :mod:`.intervals` and :mod:`.stats` the statistics behind them, :mod:`.taxonomy` the
failure causes and tags, :mod:`.diagnosis` the explanation of one episode.  Pure functions of
records (plus the reward's reference rules for diagnosis): never imports runs on disk, the
evaluation loops, the report, the CLI or the server.
"""
