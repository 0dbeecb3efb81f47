"""LLM and tensor adapters: prompt formats, response parsers, a Hugging Face policy, candidate tensors.

Pure-text pieces (prompts, parsers, grammar) need nothing beyond the package.  :class:`HFPolicy`
and :class:`TensorAdapter` need ``pip install 'webshop-gym[hf]'``; torch and transformers are
imported only when they are used, never by ``import webshop_gym.agents``.  :class:`OpenAIPolicy` (a model behind an OpenAI-compatible
endpoint) needs ``pip install 'webshop-gym[openai]'``.  Policies see what an
agent sees (observations and infos); this package never imports the envs, runs, the CLI or the
server (import-linter checks it).  It is public as :mod:`webshop_gym.adapters`.

>>> from webshop_gym.agents import ThinkAnswerPrompt, parse_response
>>> parse_response("<think>fits</think><answer>click[buy now]</answer>", ["click[buy now]"])
('click[buy now]', True)
"""

from __future__ import annotations

from webshop_gym.agents.batch import unbatch_infos
from webshop_gym.agents.grammar import extract_tag, find_blocks
from webshop_gym.agents.parse import (
    FORMATS,
    ParsedAction,
    is_admissible,
    normalize_action,
    parse_batch,
    parse_detailed,
    parse_or_raise,
    parse_response,
)
from webshop_gym.agents.prompts import (
    EpisodeHistory,
    PromptFormat,
    ReActPrompt,
    ThinkAnswerPrompt,
    Turn,
    VerlAgentPrompt,
    admissible_actions,
    make_prompt,
    strip_instruction,
)
from webshop_gym.agents.tensor import CandidateBatch, TensorAdapter

__all__ = [
    "FORMATS",
    "CandidateBatch",
    "EpisodeHistory",
    "HFPolicy",
    "OpenAIPolicy",
    "ParsedAction",
    "PromptFormat",
    "ReActPrompt",
    "TensorAdapter",
    "ThinkAnswerPrompt",
    "Turn",
    "VerlAgentPrompt",
    "admissible_actions",
    "extract_tag",
    "find_blocks",
    "is_admissible",
    "make_prompt",
    "normalize_action",
    "parse_batch",
    "parse_detailed",
    "parse_or_raise",
    "parse_response",
    "strip_instruction",
    "unbatch_infos",
]


def __getattr__(name: str):
    if name == "HFPolicy":  # imports nothing heavy itself, but keeps hf.py out of the import path
        from webshop_gym.agents.hf import HFPolicy

        return HFPolicy
    if name == "OpenAIPolicy":  # the openai client is imported only when a policy is built
        from webshop_gym.agents.openai import OpenAIPolicy

        return OpenAIPolicy
    raise AttributeError(f"module 'webshop_gym.agents' has no attribute {name!r}")
