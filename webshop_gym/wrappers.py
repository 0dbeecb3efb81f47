"""Gymnasium wrappers of webshop-gym's envs (the public path of each).

* :class:`RecordTrajectory`: logs every step an env takes as a trajectory log
  (``docs/runs.md``), which ``webshop-gym replay`` and the run viewer read.
"""

from __future__ import annotations

from webshop_gym.runs.log import RecordTrajectory

__all__ = ["RecordTrajectory"]
