"""The failure taxonomy: one tag per episode, what went wrong, and whose doing it was.

One taxonomy, computed from the log alone (no shop needed), so the run index gives every
episode its tag while reading the file once, and ``eval``, the viewer, the report and the
exports show the same words (rules in ``docs/runs.md``, *Failure tags*):

* **the tag** (:data:`TAGS`, :func:`failure_tag`): one per episode, the first rule that holds,
  from an :class:`EpisodeFacts` (what the episode did, where the target appeared, what was
  bought, whether its goal can be solved at all);
* **its family** (:data:`FAMILIES`, :data:`FAMILY`): not the agent's doing (the model calls
  failed, or the goal cannot score 1.0), no purchase, product selection (bought another product
  than the target), option clicking (the target, without an option it offers), price, other.

Beside the tag, an episode that bought something lists the **reward parts short**
(:data:`CAUSES`, :func:`failure_causes`: type, attributes, options, price): a detail of the
purchase's breakdown, not a second classification (run files of every format read as before:
both are computed, never stored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["CAUSES", "FAMILIES", "FAMILY", "SOLVED", "TAGS", "TAG_RULES", "EpisodeFacts", "failure_causes",
           "failure_tag"]

#: The reward parts that can fall short after a purchase, in the reward's order (``docs/runs.md``).
CAUSES = ("type", "attributes", "options", "price")

SOLVED = "solved"
#: Failure tags, in the order their rules are tried (``docs/runs.md``).
TAGS = (
    "errored",
    "goal unreachable",
    "invalid-action loop",
    "never searched",
    "step cap",
    "no purchase",
    "target not on the pages seen",
    "seen but not opened",
    "opened but wrong product bought",
    "wrong product bought",
    "right product, option not clicked",
    "right product, wrong options",
    "price over the cap",
    "right product, other part short",
)
#: Each tag's rule, in words (shown on the run page and in the report).
TAG_RULES = {
    "errored": "the episode record says the model calls failed (\"errored\": true)",
    "goal unreachable": "bought the target, and no purchase of the target can score 1.0 on this goal "
                        "(the goal asks for an option or attribute the target lacks)",
    "invalid-action loop": "no purchase, and at least half of the actions were invalid",
    "never searched": "no purchase, and no valid search action",
    "step cap": "no purchase: the step cap ended the episode",
    "no purchase": "the log ends without a purchase or a cap (an unfinished episode)",
    "target not on the pages seen": "bought another product; the target was on none of the results pages the "
                                    "agent saw",
    "seen but not opened": "bought another product; the target was on a results page the agent saw but never "
                           "clicked",
    "opened but wrong product bought": "the agent opened the target's page, then bought another product",
    "wrong product bought": "bought another product (the log has no target or no observations to say more)",
    "right product, option not clicked": "bought the target (a reachable goal) without an asked option it "
                                         "offers",
    "right product, wrong options": "bought the target with options that miss the asked ones (the run does not "
                                    "say whether the goal is reachable)",
    "price over the cap": "bought the target (options right) above the price cap",
    "right product, other part short": "bought the target as asked, yet a part of the reward fell short "
                                       "(attributes or type: the target does not meet its own goal)",
}
#: The families of tags, in order: whose doing a failure was.
FAMILIES = ("not the agent's", "no purchase", "product selection", "option clicking", "price", "other")
#: Each tag's family.
FAMILY = {
    "errored": "not the agent's",
    "goal unreachable": "not the agent's",
    "invalid-action loop": "no purchase",
    "never searched": "no purchase",
    "step cap": "no purchase",
    "no purchase": "no purchase",
    "target not on the pages seen": "product selection",
    "seen but not opened": "product selection",
    "opened but wrong product bought": "product selection",
    "wrong product bought": "product selection",
    "right product, option not clicked": "option clicking",
    "right product, wrong options": "option clicking",
    "price over the cap": "price",
    "right product, other part short": "other",
}


@dataclass
class EpisodeFacts:
    """What the tag rules look at (all from the log).

    Attributes:
        purchased, truncated, steps, invalid: the episode's outcome and actions.
        reward: the final reward.
        searched: a valid ``search[...]`` action was taken.
        target: the target's asin (``""`` when the log does not say).
        bought: the purchased asin (``""`` without a purchase).
        seen_step: the first step whose results page showed the target (0: never; ``None``:
            unknown, observations were not logged).
        opened: a valid click opened the target's page.
        reward_info: the purchase's breakdown.
        errored: the episode record says the model calls failed.
        reachable: whether the goal can score 1.0 at all (``None``: the run does not say).
    """

    purchased: bool
    truncated: bool
    steps: int
    invalid: int
    reward: float
    searched: bool = False
    target: str = ""
    bought: str = ""
    seen_step: int | None = None
    opened: bool = False
    reward_info: dict = field(default_factory=dict)
    errored: bool = False
    reachable: bool | None = None


def failure_tag(f: EpisodeFacts) -> str:
    """The episode's tag: :data:`SOLVED` or the first of :data:`TAGS` whose rule holds."""
    if f.errored:
        return "errored"
    if f.purchased and f.reward == 1.0:
        return SOLVED
    if not f.purchased:
        if f.steps and f.invalid * 2 >= f.steps:
            return "invalid-action loop"
        if not f.searched:
            return "never searched"
        return "step cap" if f.truncated else "no purchase"
    same = bool(f.target) and f.bought.upper() == f.target.upper()
    if not same:
        if not f.target:
            return "wrong product bought"
        if f.opened:
            return "opened but wrong product bought"
        if f.seen_step is None:
            return "wrong product bought"
        return "seen but not opened" if f.seen_step else "target not on the pages seen"
    if f.reachable is False:
        return "goal unreachable"
    info = f.reward_info or {}
    r_option = info.get("r_option")
    if r_option is not None and float(r_option) < 1.0:
        return "right product, option not clicked" if f.reachable else "right product, wrong options"
    if "r_price" in info and not info["r_price"]:
        return "price over the cap"
    return "right product, other part short"


def failure_causes(purchased: bool, truncated: bool, steps: int, invalid_actions: int,
                   reward_info: dict | None, reward: float) -> list[str]:
    """The reward parts that fell short after a purchase, in the reward's order (``[]``: none, or no purchase).

    Type (``r_type`` below 1), attributes (``r_att`` below 1), options (``r_option`` below 1),
    price (``r_price`` false).  An episode without a purchase has no parts: its tag says what
    happened.  ``truncated``, ``steps`` and ``invalid_actions`` are kept for the callers of
    earlier versions.
    """
    if not purchased or reward == 1.0:
        return []
    info = reward_info or {}
    causes = []
    if float(info.get("r_type", 1.0)) < 1.0:
        causes.append("type")
    if float(info.get("r_att", 1.0)) < 1.0:
        causes.append("attributes")
    r_option = info.get("r_option")
    if r_option is not None and not (isinstance(r_option, float) and math.isnan(r_option)) and float(r_option) < 1.0:
        causes.append("options")
    if "r_price" in info and not info["r_price"]:
        causes.append("price")
    return causes or ["type"]  # a reward below 1 with no part short: only r_type can do that
