"""The evaluation loops that play a policy over goals and write runs.

:mod:`.local` plays a local policy (rule, oracle, random, a Hugging Face model) on the vector
env, :mod:`.served` a model behind an OpenAI-compatible endpoint (its episodes in flight in
:mod:`.in_flight`, their cost in :mod:`.accounting`, ``--resume`` in :mod:`.resume`),
:mod:`.demos` writes SFT demonstrations; :mod:`.plan` says what an evaluation plays (and each
shard's block of it), :mod:`.episode` holds what the loops share about one episode.  The figures come from :mod:`webshop_gym.analysis`, the run files
from :mod:`webshop_gym.runs`.  Never imports the report, the CLI or the server.
"""

from __future__ import annotations

from webshop_gym.evaluation.demos import make_demos
from webshop_gym.evaluation.local import evaluate, rollout

__all__ = ["evaluate", "make_demos", "rollout"]
