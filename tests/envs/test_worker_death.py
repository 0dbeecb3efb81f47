"""After a worker process dies, every later call says so (``WorkerDied``), never a raw ``OSError``."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import pytest

import webshop_gym  # noqa: F401  (registers the ids)
from webshop_gym.envs.workers import WorkerDied


@pytest.mark.slow
def test_calls_after_a_killed_worker_repeat_worker_died():
    envs = gym.make_vec("webshop_gym:WebShop-v0", num_envs=4, vectorization_mode="vector_entry_point",
                        max_steps=5, num_workers=2)
    try:
        envs.reset(seed=0)
        envs.step(["search[shoes]"] * 4)
        proc = envs.unwrapped.engine.procs[1]
        os.kill(proc.pid, signal.SIGKILL)  # as the OOM killer would
        proc.join(timeout=30)
        with pytest.raises(WorkerDied, match=r"worker 1 \(pid \d+, slots 2-3\) exited with code -9") as first:
            envs.step(["click[back to search]"] * 4)
        message = str(first.value)
        for call in (lambda: envs.step(["click[back to search]"] * 4), lambda: envs.reset(seed=1),
                     lambda: envs.reset(options={"reset_mask": [True, False, False, False]}),
                     lambda: envs.step(["search[gift]"] * 4)):
            with pytest.raises(WorkerDied) as again:
                call()
            assert str(again.value) == message
    finally:
        envs.close()
    with pytest.raises(WorkerDied) as closed:  # closing keeps the reason
        envs.step(["search[gift]"] * 4)
    assert str(closed.value) == message


@pytest.mark.slow
def test_calls_after_close_say_the_workers_were_stopped(default_shop):
    envs = webshop_gym.WebShopVectorEnv(2, shop=default_shop, num_workers=2)
    envs.reset(seed=0)
    envs.close()
    for call in (lambda: envs.step(["search[gift]"] * 2), lambda: envs.reset(seed=0)):
        with pytest.raises(WorkerDied, match=r"close\(\) was called"):
            call()


def report_sigint(queue) -> None:
    """A spawned child's first instruction: how its SIGINT is handled as it was born."""
    queue.put(repr(signal.getsignal(signal.SIGINT)))


def test_a_worker_ignores_ctrl_c_from_its_first_instruction_and_the_parent_keeps_it():
    # Ctrl-C reaches the whole process group: a worker hit while its interpreter was still
    # importing printed a KeyboardInterrupt traceback (seen under load in a full test run)
    import multiprocessing as mp

    from webshop_gym.envs.workers import _start_without_sigint

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    before = signal.getsignal(signal.SIGINT)
    proc = ctx.Process(target=report_sigint, args=(queue,))
    _start_without_sigint(proc)
    assert queue.get(timeout=60) == repr(signal.SIG_IGN)
    proc.join(timeout=60)
    assert signal.getsignal(signal.SIGINT) is before  # the parent's handler is back
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())  # and not blocked
