"""The failure taxonomy: why an episode did not succeed, as named causes and one tag.

Two views of one failure, both computed from the log alone (no shop needed), so the run index
gives every episode both while reading the file once, and ``eval``, the viewer, the report and
the exports show the same words (rules in ``docs/runs.md``):

* **causes** (:data:`CAUSES`, :func:`failure_causes`): which parts of the reward fell short
  after a purchase, or why there was none; an episode may have several, the first is its main
  cause.
* **the tag** (:data:`TAGS`, :func:`failure_tag`): one per episode, what the agent did wrong,
  from an :class:`EpisodeFacts` (what the episode did, where the target appeared, what was
  bought).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["CAUSES", "SOLVED", "TAGS", "TAG_RULES", "EpisodeFacts", "failure_causes", "failure_tag"]

#: Failure causes, in the order the rules test them (``docs/runs.md``).
CAUSES = ("type", "attributes", "options", "price", "invalid actions", "step cap", "no purchase")

SOLVED = "solved"
#: Failure tags, in the order their rules are tried (``docs/runs.md``).
TAGS = (
    "errored",
    "invalid-action loop",
    "never searched",
    "step cap",
    "no purchase",
    "target never retrieved",
    "retrieved but not opened",
    "opened but wrong product bought",
    "wrong product bought",
    "right product, wrong options",
    "price over the cap",
    "right product, other part short",
)
#: Each tag's rule, in words (shown on the run page and in the report).
TAG_RULES = {
    "errored": "the episode record says the model calls failed (\"errored\": true)",
    "invalid-action loop": "no purchase, and at least half of the actions were invalid",
    "never searched": "no purchase, and no valid search action",
    "step cap": "no purchase: the step cap ended the episode",
    "no purchase": "the log ends without a purchase or a cap (an unfinished episode)",
    "target never retrieved": "bought another product; the target was on none of the results pages the agent saw",
    "retrieved but not opened": "bought another product; the target was on a results page but never clicked",
    "opened but wrong product bought": "the agent opened the target's page, then bought another product",
    "wrong product bought": "bought another product (the log has no target or no observations to say more)",
    "right product, wrong options": "bought the target with options that miss the asked ones",
    "price over the cap": "bought the target (options right) above the price cap",
    "right product, other part short": "bought the target as asked, yet a part of the reward fell short "
                                       "(attributes or type: the target does not meet its own goal)",
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
        return "retrieved but not opened" if f.seen_step else "target never retrieved"
    info = f.reward_info or {}
    r_option = info.get("r_option")
    if r_option is not None and float(r_option) < 1.0:
        return "right product, wrong options"
    if "r_price" in info and not info["r_price"]:
        return "price over the cap"
    return "right product, other part short"


def failure_causes(purchased: bool, truncated: bool, steps: int, invalid_actions: int,
                   reward_info: dict | None, reward: float) -> list[str]:
    """Why an episode did not succeed, most important first (``[]`` for a success).

    After a purchase, every part of the reward that fell short, in the order type (``r_type``
    below 1), attributes (``r_att`` below 1), options (``r_option`` below 1), price
    (``r_price`` false).  Without a purchase, one cause: ``invalid actions`` when at least half
    of the episode's actions were invalid, else ``step cap`` when the step cap ended it, else
    ``no purchase`` (the log ends without a purchase).
    """
    if purchased:
        if reward == 1.0:
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
    if steps and invalid_actions * 2 >= steps:
        return ["invalid actions"]
    return ["step cap"] if truncated else ["no purchase"]
