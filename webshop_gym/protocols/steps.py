"""What one step is, the same words for every family: what spends the step cap, and how many actions a turn carries.

Every protocol's ``step_cap`` counts **actions that reach the shop**; its ``steps`` object says
how the family's own loop counts (one definition for all families):

* ``reset_in_loop``: the family's loop spends its first iteration on the shop's reset (ReAct's
  notebook, Reflexion, StateAct, AgentBoard), so ``step_cap`` is its iteration count minus one;
  the reset never spends a step here.
* ``turns``: the most replies (turns) one episode may take, or ``null``: one reply is one step.
* ``actions_per_turn``: the most actions one reply may carry (RAGEN's ``max_actions_per_turn``:
  the first that many of its ``<answer>`` actions split on ``separator`` are executed; with one
  action a turn and a separator, a reply's first action is played and the rest dropped).
* ``unparsable``: what a reply with no parsable action spends: ``"step"`` (it is played as an
  invalid action), ``"turn"`` (RAGEN: a turn, not one of the ``step_cap`` actions) or ``"end"``
  (AgentBench: the episode ends with reward 0).

An action the shop rejects (an invalid action: a label not on the page, an empty search) spends
a step in every family.  :func:`step_text` writes the rule in words; the cards print it.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DEFAULT", "check_steps", "played_by_an_llm", "plays_one_action_per_reply", "step_text", "steps_of"]

DEFAULT = {"reset_in_loop": False, "turns": None, "actions_per_turn": 1, "separator": None, "unparsable": "step"}
"""A family whose loop counts one reply as one step (the reset outside the loop)."""

UNPARSABLE = ("step", "turn", "end")


def steps_of(data: Mapping) -> dict:
    """A protocol's ``steps`` object with every key (missing keys take :data:`DEFAULT`'s values)."""
    given = data.get("steps") if isinstance(data, Mapping) else None
    return {**DEFAULT, **(dict(given) if isinstance(given, Mapping) else {})}


def check_steps(steps, step_cap) -> str | None:
    """Why a ``steps`` object is malformed (``None``: it is well formed)."""
    if not isinstance(steps, Mapping):
        return f"field 'steps' must be an object, got {steps!r}"
    extra = sorted(set(steps) - set(DEFAULT))
    if extra:
        return f"steps: unknown field {extra[0]!r} (fields: {', '.join(DEFAULT)})"
    s = {**DEFAULT, **steps}
    if not isinstance(s["reset_in_loop"], bool):
        return f"steps.reset_in_loop must be true or false, got {s['reset_in_loop']!r}"
    turns, per = s["turns"], s["actions_per_turn"]
    if turns is not None and (isinstance(turns, bool) or not isinstance(turns, int) or turns < 1):
        return f"steps.turns must be null or an integer >= 1, got {turns!r}"
    if isinstance(per, bool) or not isinstance(per, int) or per < 1:
        return f"steps.actions_per_turn must be an integer >= 1, got {per!r}"
    if per > 1 and not (isinstance(s["separator"], str) and s["separator"].strip()):
        return "steps.actions_per_turn > 1 needs the separator the family splits a reply's actions on"
    if s["unparsable"] not in UNPARSABLE:
        return f"steps.unparsable must be 'step', 'turn' or 'end', got {s['unparsable']!r}"
    if s["unparsable"] == "turn" and turns is None:
        return "steps.unparsable 'turn' needs steps.turns (the replies an episode may take)"
    if turns is not None and isinstance(step_cap, int) and turns * per < step_cap:
        return f"steps: {turns} turns of at most {per} action(s) never reach the step cap {step_cap}"
    return None


def plays_one_action_per_reply(data: Mapping) -> bool:
    """Whether every reply spends exactly one of the ``step_cap`` steps under this rule.

    True when a turn carries one action and the replies are capped at the step cap (or not
    at all) with unparsable replies spending a step, or when the turn cap equals the step cap
    (RAGEN's 9 turns and 9 actions: a reply that spends a turn and no action still ends the
    episode at 9 replies).  Other rules need the reply read as a turn (:func:`played_by_an_llm`).
    """
    s = steps_of(data)
    if s["actions_per_turn"] != 1 or s["unparsable"] == "end":
        return False
    return s["turns"] is None or s["turns"] == data.get("step_cap")


def played_by_an_llm(data: Mapping, prompt_format: str | None) -> bool:
    """Whether ``eval``'s loops play this rule exactly for a policy that replies in ``prompt_format``.

    A reply in a text format reaches the loop, which splits it into the turn's actions
    (:mod:`webshop_gym.agents.turns`): turns of several actions, replies that spend a turn (RAGEN)
    and replies without an action that end the episode (``unparsable: "end"``, AgentBench) are
    played as the family plays them.  Not played: the ``tools`` format's function calls (no reply
    text to read) under a rule that is not one action per reply; those runs play one action per
    reply and record it as a deviation.
    """
    if plays_one_action_per_reply(data):
        return True
    return prompt_format != "tools"


def step_text(data: Mapping) -> str:
    """The protocol's step rule in words, the same sentence for every family."""
    s = steps_of(data)
    cap = data.get("step_cap")
    parts = [f"at most {cap} actions reach the shop"]
    if s["turns"] is not None:
        parts.append(f"in at most {s['turns']} turns (replies)")
    per = s["actions_per_turn"]
    if per == 1:
        parts.append("one action per reply" if not s["separator"] else
                     f"one action per reply (of actions separated by {s['separator']!r}, the first is played)")
    else:
        parts.append(f"a reply carries up to {per} actions separated by {s['separator']!r} (the first {per} are "
                     "played, each spending a step)")
    reset = ("the reset spends none (the family's loop spends its first iteration on it: "
             f"{cap + 1 if isinstance(cap, int) else '?'} iterations)" if s["reset_in_loop"] else "the reset spends none")
    unparsable = {"step": "a reply with no parsable action spends a step (played as an invalid action)",
                  "turn": "a reply with no parsable action spends a turn, not a step",
                  "end": "a reply with no parsable action ends the episode (reward 0)"}[s["unparsable"]]
    return "; ".join([", ".join(parts), reset, unparsable, "an invalid action spends a step"])
