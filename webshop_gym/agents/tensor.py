"""Candidate actions as tensors, for classifier and value policies that pick among actions.

Per env slot, :class:`TensorAdapter` lists a fixed number ``K`` of candidate actions from
``info["valid_actions"]`` (the search template becomes ``search[<the instruction's query>]``:
the instruction without its price clause, lower-cased), a boolean mask of the real ones and,
with a tokenizer, their token ids padded to a fixed length, as torch tensors on a chosen device.
:meth:`TensorAdapter.to_actions` maps chosen indices back to action strings.

When a page has more than ``K`` valid actions, the navigation actions (``buy now``,
``next >``, ``< prev``, ``back to search``) are kept first, then the others in page order; the
kept ones stay in page order and ``overflow`` counts what was dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from webshop_gym.agents.batch import unbatch_infos
from webshop_gym.agents.policies.base import instruction_query
from webshop_gym.agents.prompts import SEARCH_TEMPLATE, admissible_actions

__all__ = ["CandidateBatch", "TensorAdapter"]

_KEEP = ("click[buy now]", "click[next >]", "click[< prev]", "click[back to search]")


@dataclass
class CandidateBatch:
    """Candidate actions of a batch.

    Attributes:
        actions: per slot, ``K`` strings (``""`` where masked out).
        mask: bool tensor ``(N, K)``: True for real candidates.
        input_ids: long tensor ``(N, K, L)`` of candidate token ids (None without a tokenizer).
        attention_mask: long tensor ``(N, K, L)`` (None without a tokenizer).
        observation_ids: long tensor ``(N, Lo)`` of observation tokens (when requested).
        observation_mask: long tensor ``(N, Lo)`` (when requested).
        overflow: per slot, how many valid actions did not fit into ``K``.
    """

    actions: list[list[str]]
    mask: Any
    input_ids: Any = None
    attention_mask: Any = None
    observation_ids: Any = None
    observation_mask: Any = None
    overflow: list[int] | None = None

    def to_actions(self, indices) -> list[str]:
        """The action strings chosen by ``indices``, one per slot.

        A slot without candidates gives ``""``; an index that is masked out raises ``ValueError``.
        """
        values = indices.tolist() if hasattr(indices, "tolist") else list(indices)
        if len(values) != len(self.actions):
            raise ValueError(f"expected {len(self.actions)} indices, got {len(values)}")
        out = []
        for slot, index in enumerate(values):
            row = self.actions[slot]
            if not any(row):
                out.append("")
                continue
            index = int(index)
            if not 0 <= index < len(row) or not row[index]:
                raise ValueError(f"slot {slot}: index {index} is not a candidate (mask is False there)")
            out.append(row[index])
        return out


class TensorAdapter:
    """Turn observations and infos into fixed-size candidate tensors.

    Args:
        tokenizer: a Hugging Face tokenizer (or None for masks only).
        num_candidates: ``K``, candidates per slot.
        max_length: ``L``, tokens per candidate (right padding, truncation).
        device: where the tensors go (``"cpu"``, ``"cuda"``, ...).
        observation_length: also encode observations to this many tokens (cut at the end: the
            start holds the instruction and the top of the page); None skips them.
        query: instruction -> search query that fills the search template.

    Example:
        >>> adapter = TensorAdapter(num_candidates=4)  # doctest: +SKIP
        >>> batch = adapter.encode(obs, infos)  # doctest: +SKIP
        >>> envs.step(batch.to_actions(scores.masked_fill(~batch.mask, -1e9).argmax(-1)))  # doctest: +SKIP
    """

    def __init__(
        self,
        tokenizer=None,
        num_candidates: int = 32,
        max_length: int = 32,
        device: str = "cpu",
        observation_length: int | None = None,
        query: Callable[[str], str] | None = None,
    ):
        if num_candidates < 1 or max_length < 1:
            raise ValueError(f"num_candidates and max_length must be >= 1, got {num_candidates} and {max_length}")
        self.tokenizer = tokenizer
        self.num_candidates = int(num_candidates)
        self.max_length = int(max_length)
        self.device = device
        self.observation_length = observation_length
        self.query = query or (lambda instruction: instruction_query(instruction).strip().lower())
        if tokenizer is not None and tokenizer.pad_token is None and tokenizer.eos_token is not None:
            tokenizer.pad_token = tokenizer.eos_token

    def candidates(self, info: dict[str, Any]) -> tuple[list[str], int]:
        """The candidate actions of one slot (at most ``K``) and how many were dropped."""
        if info.get("idle") or ("instruction" not in info and "valid_actions" not in info):
            return [], 0
        actions = []
        for action in admissible_actions(info):
            if action == SEARCH_TEMPLATE:
                action = f"search[{self.query(info.get('instruction', ''))}]"
            actions.append(action)
        k = self.num_candidates
        if len(actions) <= k:
            return actions, 0
        keep = [i for i, a in enumerate(actions) if a in _KEEP][:k]
        rest = [i for i, a in enumerate(actions) if a not in _KEEP]
        chosen = sorted(keep + rest[: k - len(keep)])
        return [actions[i] for i in chosen], len(actions) - len(chosen)

    def _tokens(self, texts: list[str], length: int, side: str):
        tok = self.tokenizer
        saved = tok.padding_side, getattr(tok, "truncation_side", "right")
        tok.padding_side, tok.truncation_side = "right", side
        try:
            return tok(texts, padding="max_length", truncation=True, max_length=length, return_tensors="pt")
        finally:
            tok.padding_side, tok.truncation_side = saved

    def encode(self, observations: Sequence[str] | None, infos) -> CandidateBatch:
        """Candidates, mask and token ids for every slot."""
        from webshop_gym.agents.hf import require_torch

        torch, _ = require_torch()
        n = len(observations) if observations is not None else None
        infos = unbatch_infos(infos, n)
        n = len(infos)
        k = self.num_candidates
        rows, overflow = [], []
        for info in infos:
            actions, dropped = self.candidates(info)
            rows.append(actions + [""] * (k - len(actions)))
            overflow.append(dropped)
        mask = torch.tensor([[bool(a) for a in row] for row in rows], dtype=torch.bool).reshape(n, k)
        batch = CandidateBatch(rows, mask.to(self.device), overflow=overflow)
        if self.tokenizer is not None:
            flat = [a for row in rows for a in row]
            enc = self._tokens(flat, self.max_length, "right")
            ids = enc["input_ids"].reshape(n, k, self.max_length)
            att = enc["attention_mask"].reshape(n, k, self.max_length)
            att = att * mask[:, :, None].to(att.dtype)  # masked-out candidates attend to nothing
            batch.input_ids = ids.to(self.device)
            batch.attention_mask = att.to(self.device)
            if self.observation_length is not None and observations is not None:
                enc = self._tokens([o or "" for o in observations], int(self.observation_length), "right")
                batch.observation_ids = enc["input_ids"].to(self.device)
                batch.observation_mask = enc["attention_mask"].to(self.device)
        return batch

    def to_actions(self, batch: CandidateBatch, indices) -> list[str]:
        """The action strings for chosen candidate indices (see :meth:`CandidateBatch.to_actions`)."""
        return batch.to_actions(indices)
