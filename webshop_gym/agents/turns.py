"""A model's reply as a turn of actions, under a protocol's step rule (RAGEN's turns).

Most families play one action per reply: the policy parses its reply into one action and every
reply spends a step.  RAGEN counts **turns** (replies) and **actions** apart
(``agent_proxy.max_turn`` and the env tag's ``max_actions_per_traj``): a reply's answer is split
on ``agent_proxy.action_sep`` (``||``), its first ``max_actions_per_turn`` actions are executed in
order, and a reply that carries no action spends a turn but none of the actions.  A protocol says
so in its ``steps`` object (:mod:`webshop_gym.protocols.steps`); :class:`TurnRule` reads it.

This module is the one place a reply becomes a turn's actions, for every loop that plays a
model's replies (the local lanes of :mod:`webshop_gym.evaluation.lanes` and the served episodes
of :mod:`webshop_gym.evaluation.in_flight`); both step the same
:class:`~webshop_gym.engine.Engine`:

* :func:`reply_actions`: the answer of the reply's prompt format (:func:`~.parse.answer_text`;
  no answer: no action), split on the separator, each part stripped, empty parts dropped, the
  first ``actions_per_turn`` kept (the rest are never played); where a reply without an action
  ends the episode (AgentBench, ``unparsable: "end"``) a kept part counts only when it holds a
  well-formed ``search[...]`` or ``click[...]`` (:func:`~.parse.parse_detailed` with no page);
* :class:`EpisodeTurns`: one episode's turns: each reply is counted, its actions are played one
  engine step each, every one parsed against the page it is played on (``plain`` format: the
  rules of :mod:`.parse`); a part that is no action is played as an invalid action and spends a
  step, as RAGEN's env executes it; the episode ends when the turns run out (truncated, reward 0),
  the step cap ends it, or a purchase does (the turn's remaining actions are dropped); under
  AgentBench's rule a reply without an action ends it (reward 0, :attr:`EpisodeTurns.ends`).

The model sees the page after the last action its turn played (RAGEN renders the state after a
turn's actions, not the pages in between).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from webshop_gym.agents.parse import ParsedAction, answer_text, parse_detailed
from webshop_gym.protocols.steps import steps_of

__all__ = ["ENDED_OUT_OF_TURNS", "ENDED_WITHOUT_ACTION", "EpisodeTurns", "TurnRule", "reply_actions"]

ENDED_WITHOUT_ACTION = "reply without an action"
"""A run file's episode ``ended`` where a reply without an action ended it (AgentBench's
``SampleStatus.AGENT_VALIDATION_FAILED``: reward 0, no step)."""

ENDED_OUT_OF_TURNS = "out of turns"
"""A run file's episode ``ended`` where its last turn was spent before a purchase or the step cap
(RAGEN's ``max_turn``): reward 0, no step, and not ``truncated``, which stays the engine's step cap
(a replay steps the same actions and must find the same flags)."""


@dataclass(frozen=True)
class TurnRule:
    """How replies become actions, read from a protocol's ``steps``.

    ``turns`` replies at most (``None``: no cap of its own), ``actions_per_turn`` actions each,
    split on ``separator``; ``unparsable``: what a reply without an action spends.
    """

    turns: int | None = None
    actions_per_turn: int = 1
    separator: str | None = None
    unparsable: str = "step"

    @classmethod
    def of(cls, data: Mapping) -> TurnRule:
        """The rule of a protocol's data (its ``steps`` object)."""
        s = steps_of(data)
        return cls(s["turns"], int(s["actions_per_turn"]), s["separator"], s["unparsable"])

    @property
    def splits(self) -> bool:
        """Whether a reply is played as a turn: more than one action a reply, or a reply without one spends a turn or ends the episode."""
        return self.actions_per_turn > 1 or self.unparsable in ("turn", "end")


def reply_actions(text: str, fmt, rule: TurnRule) -> list[str]:
    r"""The action texts a reply's turn plays, in order (``[]``: the reply carries no action).

    >>> rule = TurnRule(10, 2, "||", "turn")
    >>> reply_actions("<think>go</think><answer>search[red shoes] || click[next >] || click[buy now]</answer>",
    ...               "think-answer", rule)
    ['search[red shoes]', 'click[next >]']
    >>> reply_actions("<think>not sure yet</think>", "think-answer", rule)
    []
    >>> reply_actions("Thought: not sure.\nAction: wait and see", "react", TurnRule(unparsable="end"))
    []
    """
    answer = answer_text(text if isinstance(text, str) else "", fmt)
    if answer is None:
        return []
    parts = answer.split(rule.separator) if rule.separator else [answer]
    kept = [p.strip() for p in parts if p.strip()][: rule.actions_per_turn]
    if rule.unparsable == "end":  # AgentBench: only an answer that holds search[...] or click[...] is an action
        kept = [p for p in kept if parse_detailed(p, None, "plain").valid]
    return kept


class EpisodeTurns:
    """One episode's turns under a :class:`TurnRule`: replies counted, the current turn's actions to play.

    A loop calls :meth:`reply` with each reply, then :meth:`next_action` once per engine step
    while :attr:`playing`; when the engine ends the episode it calls :meth:`drop`.  Between turns,
    :attr:`out_of_turns` says the episode is over by the turn cap; after a reply without an action,
    :attr:`ends` says it is over by AgentBench's rule (:data:`ENDED_WITHOUT_ACTION`); :attr:`ended`
    names either.
    """

    def __init__(self, rule: TurnRule):
        self.rule = rule
        self.taken = 0  # replies so far
        self.queue: list[str] = []  # the current turn's actions not yet played
        self.parts: list[str] = []  # the current turn's actions
        self.response: str | None = None

    def reply(self, text: str, fmt) -> bool:
        """Count ``text`` as a turn and queue its actions; whether it carries any."""
        self.taken += 1
        self.response = text
        self.parts = reply_actions(text, fmt, self.rule)
        if not self.parts and self.rule.unparsable == "step":  # the whole reply, played as one action
            self.parts = [text]
        self.queue = list(self.parts)
        return bool(self.parts)

    @property
    def playing(self) -> bool:
        """Whether the current turn has actions left to play."""
        return bool(self.queue)

    @property
    def ends(self) -> bool:
        """Whether the last reply carried no action under a rule where that ends the episode (AgentBench: reward 0)."""
        return self.rule.unparsable == "end" and self.taken > 0 and not self.parts

    @property
    def out_of_turns(self) -> bool:
        """Whether the turn cap is reached and the last turn's actions are played."""
        return self.rule.turns is not None and self.taken >= self.rule.turns and not self.queue

    @property
    def ended(self) -> str | None:
        """Why the episode is over before the engine ended it (the record's ``ended``), or ``None``.

        :data:`ENDED_WITHOUT_ACTION` (:attr:`ends`) first, else :data:`ENDED_OUT_OF_TURNS` (:attr:`out_of_turns`).
        """
        if self.ends:
            return ENDED_WITHOUT_ACTION
        return ENDED_OUT_OF_TURNS if self.out_of_turns else None

    def next_action(self, admissible: Sequence[str] | None, closest: bool = False) -> tuple[ParsedAction, dict]:
        """The turn's next action, parsed against the page it is played on, and its run-file ``model`` entry."""
        part = len(self.parts) - len(self.queue)
        parsed = parse_detailed(self.queue.pop(0), admissible, "plain", closest)
        model = {"action": parsed.action, "valid": bool(parsed.valid), "format_ok": bool(parsed.format_ok),
                 "mapped": bool(parsed.mapped), "reason": parsed.reason, "turn": self.taken - 1, "part": part}
        if part == 0:
            model = {"response": self.response, "actions": list(self.parts), **model}
        return parsed, model

    def silent(self, steps: int) -> dict:
        """The record of the last reply, which carried no action (``steps``: the actions played before it)."""
        return {"turn": self.taken - 1, "after_step": int(steps),
                "model": {"response": self.response, "actions": [], "reason": "no action found"}}

    def drop(self) -> None:
        """The episode ended: the turn's remaining actions are never played."""
        self.queue = []
