"""Argument checks shared by the envs, the vector envs and the engine: one validation, one message style.

Every check names the argument, says what was expected and shows what was given, e.g.
``goal_index must be an integer in [0, 6910), got 3.5 (float)``.  Integers are Python ``int`` or
numpy integers; ``bool``, floats (even ``3.0``), strings and bytes are rejected rather than coerced.
"""

from __future__ import annotations

import numpy as np

from webshop_gym.error import GoalNotFound, InvalidArgument, close_match

__all__ = ["check_autoreset_mode", "check_bool", "check_goal_index", "check_int", "check_options", "check_seed", "is_integer"]


def is_integer(value) -> bool:
    """Whether ``value`` is an integer (Python or numpy), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _shown(value) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _range_text(low: int | None, high: int | None, allow_none: bool = False) -> str:
    """What an integer check expected (made only for its error message)."""
    if low is not None and high is not None:
        text = f"an integer in [{low}, {high})"
    elif low is not None:
        text = f"an integer >= {low}"
    else:
        text = "an integer"
    return text + " or None" if allow_none else text


def check_int(name: str, value, low: int | None = None, high: int | None = None, allow_none: bool = False) -> int | None:
    """Return ``value`` as an ``int`` in ``[low, high)`` (bounds optional).

    Raises:
        InvalidArgument: ``value`` is not an integer (or None when ``allow_none``) or out of range.
    """
    if value is None and allow_none:
        return None
    if not is_integer(value):
        raise InvalidArgument(f"{name} must be {_range_text(low, high, allow_none)}, got {_shown(value)}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value >= high):
        raise InvalidArgument(f"{name} must be {_range_text(low, high, allow_none)}, got {value}")
    return value


def check_goal_index(value, num_goals: int, name: str = "goal_index") -> int:
    """Return a goal index in ``[0, num_goals)``.

    Raises:
        InvalidArgument: not an integer.
        GoalNotFound: an integer outside the goal set.
    """
    if not is_integer(value):
        raise InvalidArgument(f"{name} must be {_range_text(0, num_goals)} (this goal set has {num_goals} goals), "
                              f"got {_shown(value)}")
    value = int(value)
    if not 0 <= value < num_goals:
        raise GoalNotFound(f"{name} must be {_range_text(0, num_goals)} (this goal set has {num_goals} goals), got {value}")
    return value


def check_seed(value, name: str = "seed") -> int | None:
    """Return a seed: None or an integer >= 0."""
    return check_int(name, value, low=0, allow_none=True)


_AUTORESET = {"nextstep": "NextStep", "samestep": "SameStep", "disabled": "Disabled"}


def check_autoreset_mode(value):
    """Return a :class:`gymnasium.vector.AutoresetMode` from the enum, its value or a spelling of it.

    Accepted: ``AutoresetMode.NEXT_STEP`` and the strings ``"NextStep"``, ``"next-step"``,
    ``"next_step"``, ``"NEXT_STEP"`` (any case; likewise same-step and disabled).
    """
    from gymnasium.vector import AutoresetMode

    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        key = value.replace("-", "").replace("_", "").replace(" ", "").lower()
        if key in _AUTORESET:
            return AutoresetMode(_AUTORESET[key])
    raise InvalidArgument(
        f"autoreset_mode must be one of 'next-step', 'same-step', 'disabled' (or gymnasium.vector.AutoresetMode), "
        f"got {_shown(value)}"
    )


def check_bool(name: str, value) -> bool:
    """Return ``value`` if it is a bool (numpy bools too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgument(f"{name} must be True or False, got {_shown(value)}")
    return bool(value)



def check_options(options, allowed: tuple[str, ...]) -> dict:
    """Return reset ``options`` as a dict, rejecting unknown keys (with a close-match hint)."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InvalidArgument(f"options must be a dict or None, got {_shown(options)}")
    unknown = [k for k in options if k not in allowed]
    if unknown:
        key = str(unknown[0])
        hint = close_match(key, allowed) or next((a for a in allowed if key and a.startswith(key)), None)
        raise InvalidArgument(
            f"unknown reset option {unknown[0]!r}; expected {' and/or '.join(repr(a) for a in allowed)}"
            + (f" (did you mean {hint!r}?)" if hint else "")
        )
    return dict(options)
