"""Ctrl-C during a step is never lost, wherever in the step's Python code it lands.

Python runs a signal's handler at the start of the next Python function (among other points),
so a KeyboardInterrupt can be raised inside any function a step calls, including one that a C
library calls back into.  numpy clears every error raised while it looks up ``__array_ufunc__``
on an operand's class, so a Python ``__getattr__`` reached from there (``EnumType.__getattr__``
for an IntEnum member before Python 3.12) swallowed the interrupt: ``eval`` then ran to the end
and exited 0 after Ctrl-C.  These tests raise KeyboardInterrupt at every Python call of a step,
one call per run, and require that it always leaves the step.

The traced code runs with the cyclic garbage collector paused and ``gc.callbacks`` emptied
(:func:`_traced`): a collection can start at any allocation and run other libraries' callbacks
(hypothesis registers one) or finalizers, where CPython itself reports an exception as
"Exception ignored" and goes on; counted as calls of the step, they made the count depend on
what earlier tests left on the heap, and an interrupt aimed there looked swallowed by our code.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import sys

import pytest

from webshop_gym import WebShopVectorEnv

_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class _Interrupt:
    """A trace function that raises KeyboardInterrupt at the ``target``-th Python call (counts them all).

    Calls of generators are left out: their "call" event also marks a generator being closed,
    where Python throws GeneratorExit into the frame without checking for signals (a raise there
    would be a finalizer's "Exception ignored", which no real Ctrl-C can cause).
    """

    def __init__(self, target: int | None = None):
        self.target = target
        self.calls = 0
        self.fired = False

    def __call__(self, frame, event, arg):
        if event == "call" and not frame.f_code.co_flags & _RESUMABLE:
            self.calls += 1
            if self.calls == self.target:
                self.fired = True
                raise KeyboardInterrupt
        return None


@contextlib.contextmanager
def _traced(trace):
    """Run the block under ``trace`` with the cyclic GC paused and no GC callbacks (see the module docstring)."""
    callbacks, enabled = gc.callbacks[:], gc.isenabled()
    gc.callbacks.clear()
    gc.disable()
    sys.settrace(trace)
    try:
        yield trace
    finally:
        sys.settrace(None)
        gc.callbacks[:] = callbacks
        if enabled:
            gc.enable()


def _script(env) -> list[list[str]]:
    """Actions of a short episode per slot: search, open the first result, pick an option if any, buy."""
    obs, infos = env.reset(seed=0)
    steps = [[f"search[{' '.join(infos['instruction'][i].split()[:6])}]" for i in range(env.num_envs)]]
    env.step(steps[0])
    actions = []
    for i in range(env.num_envs):
        products = [a for a in infos_after(env, i) if a.startswith("click[")
                    and a not in ("click[back to search]", "click[next >]", "click[< prev]")]
        actions.append(products[0] if products else "click[back to search]")
    steps.append(actions)
    env.step(actions)
    steps.append([next((a for a in infos_after(env, i) if a not in ("click[buy now]", "click[< prev]", "click[back to search]")
                        and not a.startswith("click[description")), "click[buy now]") for i in range(env.num_envs)])
    steps.append(["click[buy now]"] * env.num_envs)
    return steps


def infos_after(env, slot: int) -> list[str]:
    return list(env.unwrapped.engine.info(slot)["valid_actions"])


def _replay(env, steps: list[list[str]], upto: int) -> None:
    env.reset(seed=0)
    for actions in steps[:upto]:
        env.step(actions)


def _interrupted(env, actions: list[str], target: int) -> bool | None:
    """Step with a KeyboardInterrupt raised at Python call ``target``: whether it came out of the step.

    ``None``: the step made fewer calls (caches warmed by the counting run), so nothing was raised.
    """
    trace = _Interrupt(target)
    try:
        with _traced(trace):
            env.step(actions)
    except KeyboardInterrupt:
        return True
    return False if trace.fired else None


@pytest.mark.parametrize("num_envs", [1, 3])
def test_a_keyboard_interrupt_anywhere_in_a_step_leaves_the_step(default_shop, num_envs):
    env = WebShopVectorEnv(num_envs, shop=default_shop, eval_mode=True)
    try:
        steps = _script(env)
        covered = 0
        for k, actions in enumerate(steps):
            _replay(env, steps, k)
            counter = _Interrupt()
            with _traced(counter):
                env.step(actions)
            assert counter.calls > 0
            for target in range(1, counter.calls + 1):
                _replay(env, steps, k)
                came_out = _interrupted(env, actions, target)
                if came_out is False:
                    raise AssertionError(f"step {k} ({actions}): a KeyboardInterrupt at Python call {target} "
                                         f"of {counter.calls} was swallowed")
                covered += came_out is True
        assert covered > 50  # the step really runs Python code at many points
    finally:
        env.close()


@pytest.mark.parametrize("policy", ["random", "rule", "oracle"])
def test_a_keyboard_interrupt_anywhere_in_an_eval_rollout_ends_it(default_shop, policy):
    """The loop ``eval`` runs (policy, vector env, bookkeeping): 300 injection points spread over it."""
    from webshop_gym.evaluation.local import make_policy_factory, rollout

    def run(trace=None):
        env = WebShopVectorEnv(3, shop=default_shop, eval_mode=True)
        factory = make_policy_factory(policy, shop=default_shop, seed=0)
        try:
            with _traced(trace):
                return rollout(env, factory, seed=0, num_goals=4, record=True)
        finally:
            env.close()

    run()  # warm the shop's caches, so that every later run makes the same calls
    counter = _Interrupt()
    assert len(run(counter)) == 4
    targets = sorted({1 + (counter.calls - 1) * j // 299 for j in range(300)})
    fired = 0
    for target in targets:
        trace = _Interrupt(target)
        try:
            run(trace)
        except KeyboardInterrupt:
            fired += 1
            continue
        assert not trace.fired, f"{policy}: a KeyboardInterrupt at Python call {target} of {counter.calls} was swallowed"
    assert fired > 250
