"""WebShop as a SkyRL-gym text environment: ``environment.env_class=webshop`` (``pip install 'webshop-gym[skyrl]'``).

SkyRL's generator (``SkyRLGymGenerator.agent_loop`` in ``skyrl/train/generators/skyrl_gym_generator.py``,
skyrl 0.4.0) plays one trajectory per dataset row:

* ``env = skyrl_gym.make(row["env_class"], env_config=cfg.environment.skyrl_gym.<env_class>,
  extras=<the row's other columns>)`` (a class without a config section gets ``{}``);
* ``chat_history = env.init(row["prompt"])[0]``, tokenized with the chat template;
* per turn, the model's reply goes to ``env.step(reply)``, whose ``observations`` (user messages)
  are appended after the reply: one growing conversation, token in, token out;
* until ``done``; the rewards of the steps are placed on the turns' last tokens.

:class:`WebShopSkyRLEnv` is that environment over :class:`~webshop_gym.WebShopEnv`, registered with
SkyRL-gym as :data:`ENV_ID` (``"webshop"``) when this module is imported.  The conversation is the
prompt format's (``think-answer`` by default, or ``react``): the system message and the goal's
first page, then per reply the next page as a user message, exactly the messages ``webshop-gym
eval --prompt <format>`` sends with the whole history shown; each reply is parsed with ``eval``'s
parser and stepped (an inadmissible one as an invalid action).  The reward is WebShop's, paid at
the purchase; the episode ends at the purchase or after ``max_steps`` actions (15).  SkyRL's
``generator.max_turns`` does not cap it (SkyRL's default is 1).

A dataset row is ``{"prompt": <the first messages>, "env_class": "webshop", "goal_index": i,
"instruction": ..., "extra_info": {<settings>}}``; :func:`skyrl_rows` builds them and
:func:`write_skyrl_dataset` writes the JSON-lines file SkyRL's ``data.train_data`` reads.  The
settings (:data:`SETTINGS`) ride in the row's ``extra_info``, where SkyRL's own environments keep
theirs (SkyRL's dataset hands every column but ``prompt`` and ``env_class`` to the env as
``extras``): SkyRL's typed config has no ``environment.skyrl_gym.webshop`` section (its
``SkyRLGymConfig`` refuses unknown fields), so the ``env_config`` SkyRL passes is ``{}`` unless a
subclassed config adds one, which is read too.  A row names its shop portably: the shop
directory's name and a digest of its content, resolved on the training machine through
``WEBSHOP_GYM_SHOP`` (:mod:`webshop_gym.integrations.shop_choice`), never an absolute path.

Training with SkyRL's own launcher needs only the config naming this module, which registers the
env in the process that runs the generator::

    python -m skyrl.train.entrypoints.main_base environment.env_class=webshop
        trainer.override_entrypoint=webshop_gym.integrations.skyrl data.train_data="['webshop-train.jsonl']" ...
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from webshop_gym.error import DependencyNotInstalled, InvalidArgument

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:
    raise DependencyNotInstalled(
        f"the SkyRL environment needs skyrl-gym ({exc}): pip install 'webshop-gym[skyrl]'") from exc

from webshop_gym import WebShopEnv
from webshop_gym.integrations.shop_choice import (
    check_digest,
    portable_name,
    resolve_shop,
    shop_digest,
)
from webshop_gym.integrations.text_episode import TextEpisode, last_user_turn
from webshop_gym.integrations.trl import shared_shop
from webshop_gym.protocols import goal_ids

__all__ = ["ENV_ID", "FORMATS", "SETTINGS", "WebShopSkyRLEnv", "main", "register", "skyrl_rows",
           "write_skyrl_dataset"]

ENV_ID = "webshop"
"""The id SkyRL-gym knows the environment by: a row's ``env_class``, or ``environment.env_class``."""

FORMATS = ("think-answer", "react")
"""The prompt formats of one growing conversation (``verl-agent`` repeats its history in every turn)."""

SETTINGS = {"shop": None, "shop_digest": None, "goals": None, "human_goals": False, "price_seed": 0,
            "max_steps": 15, "format": "think-answer", "closest": False, "search_backend": "bm25"}
"""The settings a row's ``extra_info`` (or a config section) may give, with their defaults.

``shop`` is a shop's name (resolved through ``WEBSHOP_GYM_SHOP``), ``"embedded"``, or a path;
``None`` plays ``WEBSHOP_GYM_SHOP``'s shop, else the embedded one.  ``shop_digest``, when given,
must be the played shop's content digest."""


def _settings(env_config: Any, extras: Mapping[str, Any]) -> dict[str, Any]:
    """The episode's settings: the defaults, then the env's config section, then the row's ``extra_info``, then its columns."""
    if env_config is None:
        config: Mapping[str, Any] = {}
    elif isinstance(env_config, Mapping):
        config = env_config
    elif hasattr(env_config, "items"):  # an omegaconf DictConfig
        config = dict(env_config.items())
    else:
        config = {k: getattr(env_config, k) for k in SETTINGS if hasattr(env_config, k)}
    extra_info = extras.get("extra_info")
    if extra_info is not None and not isinstance(extra_info, Mapping):
        raise InvalidArgument(f"a row's extra_info must be a dict of settings, got {type(extra_info).__name__}")
    settings = dict(SETTINGS)
    for source in (config, extra_info or {}, extras):
        settings.update({k: source[k] for k in SETTINGS if k in source and source[k] is not None})
    if settings["format"] not in FORMATS:
        raise InvalidArgument(f"format must be one of {', '.join(FORMATS)} in SkyRL's one growing conversation "
                              f"(verl-agent repeats its own history in every turn), got {settings['format']!r}")
    return settings


def _env(settings: Mapping[str, Any]) -> WebShopEnv:
    shop = shared_shop(resolve_shop(settings["shop"]), goals=settings["goals"], human_goals=settings["human_goals"],
                       price_seed=settings["price_seed"], search_backend=settings["search_backend"])
    check_digest(shop, settings["shop"], settings["shop_digest"])
    return WebShopEnv(shop=shop, split=None, max_steps=settings["max_steps"])


class WebShopSkyRLEnv(BaseTextEnv):
    """One WebShop episode as SkyRL's generator drives it: ``init(prompt)``, then ``step(reply)`` until ``done``.

    Args:
        env_config: what SkyRL passes from its config: ``{}`` (its typed ``SkyRLGymConfig`` has no
            ``webshop`` section; a subclassed config may add one): settings, see :data:`SETTINGS`.
        extras: the dataset row's other columns: ``goal_index`` (required), ``instruction``
            (checked against the goal when present), and ``extra_info`` with settings of
            :data:`SETTINGS` (a setting given as a column of its own is read too).
            Other columns (``max_turns``, ``reward_spec``, ``data_source``, ...) are ignored.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None):
        super().__init__()
        extras = dict(extras or {})
        goal = extras.get("goal_index")
        if isinstance(goal, bool) or not isinstance(goal, int):
            raise InvalidArgument(f"a WebShop row needs an integer goal_index column, got {goal!r} "
                                  "(build the dataset with webshop_gym.integrations.skyrl.skyrl_rows)")
        settings = _settings(env_config, extras)
        env = _env(settings)
        env.engine.check_goal(goal)
        self.episode = TextEpisode(env, goal, settings["format"], settings["closest"], extras.get("instruction"))
        self.max_turns = settings["max_steps"]

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """The conversation's start: the format's system message and the goal's first page.

        Args:
            prompt: the row's prompt; when not empty it must be these very messages (a row built
                with other settings than the env's is refused, never played on another goal).
        """
        messages = self.episode.messages()
        if prompt and [dict(m) for m in prompt] != messages:
            raise InvalidArgument(
                f"the row's prompt is not goal {self.episode.goal_index}'s first prompt in this env: build the "
                "dataset with skyrl_rows/write_skyrl_dataset and the env's shop settings and format")
        return messages, {"goal_index": self.episode.goal_index, "instruction": self.episode.info["instruction"]}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Parse the reply, take its action, and answer with the next page as a user message."""
        step = self.episode.act(action)
        self.turns += 1
        observations = [] if step.done else [{"role": "user", "content": last_user_turn(self.episode.messages())}]
        return BaseTextEnvStepOutput(
            observations=observations, reward=step.reward,
            done=step.done, postprocessed_action=None,
            metadata={"action": step.action, "valid": step.valid, "format_ok": step.format_ok,
                      "reward_info": dict(step.info.get("reward_info") or {})})

    def get_metrics(self) -> dict[str, Any]:
        """The episode's reward, success, steps, invalid actions, format errors and reward breakdown."""
        return self.episode.metrics()


def register() -> None:
    """Register :class:`WebShopSkyRLEnv` with SkyRL-gym as :data:`ENV_ID` (done on import; idempotent)."""
    if ENV_ID not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_ID, entry_point=f"{__name__}:WebShopSkyRLEnv")


register()


def skyrl_rows(split: str | None = "train", *, limit: int | None = None, **settings: Any) -> list[dict[str, Any]]:
    """A split's goals as SkyRL rows: ``prompt`` (the first messages), ``env_class``, ``goal_index``, ``instruction``, ``extra_info``.

    Args:
        split: ``train``, ``eval``, ``test`` (the first 500 goals), ``None`` (all), or a protocol
            split (``"verl-agent-500:train"``).
        limit: keep the split's first ``limit`` goals.
        **settings: settings (:data:`SETTINGS`).  Every row's ``extra_info`` names the shop
            portably (``shop``: its directory's name or ``"embedded"``; ``shop_digest``: its
            content digest) and holds the other settings that differ from the defaults.
    """
    given = [k for k in SETTINGS if k != "shop_digest"]  # the digest is the shop's, computed here
    unknown = sorted(set(settings) - set(given))
    if unknown:
        raise InvalidArgument(f"unknown settings {unknown}: the settings are {', '.join(given)}")
    chosen = _settings(settings, {})
    env = _env(chosen)
    goals = goal_ids(env.shop, split)
    goals = goals if limit is None else goals[:limit]
    played = resolve_shop(chosen["shop"])
    extra_info = {"shop": portable_name(played), "shop_digest": shop_digest(env.shop)}
    extra_info.update({k: (os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in settings.items()
                       if k != "shop" and v != SETTINGS[k]})
    rows = []
    for goal in goals:
        episode = TextEpisode(env, int(goal), chosen["format"], chosen["closest"])
        rows.append({"prompt": episode.messages(), "env_class": ENV_ID, "goal_index": int(goal),
                     "instruction": episode.info["instruction"], "extra_info": dict(extra_info)})
    return rows


def write_skyrl_dataset(path: str | os.PathLike, split: str | None = "train", **kwargs: Any) -> Path:
    """Write :func:`skyrl_rows` as a JSON-lines file (SkyRL's ``data.train_data=['<path>']``); return its path."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as out:
        for row in skyrl_rows(split, **kwargs):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def _train(cfg) -> None:
    """SkyRL's training run in its Ray worker (importing this module there registered the env)."""
    from skyrl.train.entrypoints.main_base import BasePPOExp

    BasePPOExp(cfg).run()


def main(argv: list[str] | None = None) -> None:
    """SkyRL's ``trainer.override_entrypoint=webshop_gym.integrations.skyrl``: its own launch, with the env registered.

    SkyRL's ``main_base.main`` imports the module named by ``trainer.override_entrypoint`` and
    calls its ``main()``.  This one does what SkyRL's does (parse the config, check it, start
    Ray, run ``BasePPOExp`` in a Ray worker), except that the worker is a function of this module,
    so the worker imports it and the ``webshop`` env is registered where the generator runs.
    """
    args = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("trainer.override_entrypoint=")]
    try:
        import ray
        from skyrl.train.config import SkyRLTrainConfig
        from skyrl.train.utils import validate_cfg
        from skyrl.train.utils.utils import initialize_ray
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"training with SkyRL needs SkyRL's trainer ({exc}): pip install 'skyrl[gpu]' (Python >= 3.12)") from exc
    cfg = SkyRLTrainConfig.from_cli_overrides(args)
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(ray.remote(num_cpus=1)(_train).remote(cfg))
