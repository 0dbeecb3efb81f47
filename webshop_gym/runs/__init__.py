"""Runs on disk and what is computed from them: the log/run-file format, evaluation, demos, reports.

:mod:`.log` owns the JSON-lines format (trajectory logs and run files), :mod:`.run` reads run
files, :mod:`.evaluation` plays a policy over a split, :mod:`.demos` writes SFT demonstrations,
:mod:`.report` (:mod:`.stats`, :mod:`.plots`) reports.  Never imports the CLI or the server.
"""
