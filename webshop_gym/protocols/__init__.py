"""Named evaluation protocols: which goals, which shop, which cap and which metrics a number used.

WebShop numbers in the literature come from at least a dozen incompatible protocols (the
paper's baselines, verl-agent's per-validation draws, AgentGym's item ids, RAGEN's seeded
permutation, AgentBench's ranges, ReAct/Reflexion/LATS sessions).  Each is a versioned data file
in ``data/`` (:mod:`.definition` loads and checks it) with the source of every value; goal ids
are re-derived exactly as the family's code draws them (:mod:`.resolve`, :mod:`.idfiles`), the
reward transform, success rule and metrics are interpreted from the file (:mod:`.scoring`), and
the envs' ``split`` accepts a protocol's train goals (:mod:`.splits`).  Equal protocol
fingerprints played the same episodes under the same rules; whether two runs pair is decided
from what they played (:mod:`.comparable`).

Owns: protocol files, goal resolution, shop checks, fingerprints, metric definitions.  Imports
:mod:`webshop_gym.data` and :mod:`webshop_gym.error` only; never the engine, envs, runs or CLI.

>>> from webshop_gym.protocols import get_protocol
>>> p = get_protocol("verl-agent")
>>> p.resolve(seed=0).goals[:3].tolist()
[3150, 4367, 4103]
"""

from __future__ import annotations

from webshop_gym.protocols.definition import (
    Protocol,
    Resolution,
    get_protocol,
    load_protocol,
    protocol_names,
    shop_identity,
)
from webshop_gym.protocols.idfiles import read_id_file
from webshop_gym.protocols.resolve import Episode
from webshop_gym.protocols.splits import ProtocolSplit, goal_ids, parse_split

__all__ = [
    "Episode",
    "Protocol",
    "ProtocolSplit",
    "Resolution",
    "get_protocol",
    "goal_ids",
    "load_protocol",
    "parse_split",
    "protocol_names",
    "read_id_file",
    "shop_identity",
]
