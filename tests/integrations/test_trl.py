"""WebShop as a TRL environment: the class TRL's GRPOTrainer drives, its dataset, and a real 2-step GRPO run.

The environment and dataset tests need no TRL.  The tests that run TRL's own code (its tool discovery,
its response parser, ``GRPOTrainer.train()``) skip without it: ``pip install 'webshop-gym[trl]'``.
"""

from __future__ import annotations

import doctest
import functools
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import load_example
from webshop_gym import WebShopEnv
from webshop_gym.error import DependencyNotInstalled, EpisodeFinished, GoalNotFound, InvalidArgument
from webshop_gym.integrations import trl as trl_integration
from webshop_gym.integrations.trl import (
    TASK_PROMPT,
    InadmissibleAction,
    WebShopToolEnv,
    unfinished_episodes,
    webshop_dataset,
)

ROOT = Path(__file__).resolve().parents[2]
TRL_MISSING = "TRL is not installed: pip install 'webshop-gym[trl]'"
# TRL 1.16 reads model.is_gradient_checkpointing, which transformers 5.24 deprecates (TRL's code, not ours).
TRL_DEPRECATION = "ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"


def require_trl():
    pytest.importorskip("trl", reason=TRL_MISSING)
    pytest.importorskip("datasets", reason=TRL_MISSING)


def admissible_labels(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("Admissible actions:"))
    return json.loads(line.split("label one of ", 1)[1]) if "label one of " in line else []


# -- the environment -----------------------------------------------------------------------------


def test_importing_the_module_imports_no_training_stack():
    code = (
        "import sys, json; import webshop_gym.integrations.trl; "
        "print(json.dumps(sorted(m for m in ('trl', 'torch', 'transformers', 'datasets') if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_constructor_is_a_zero_argument_factory_with_keyword_only_settings():
    params = inspect.signature(WebShopToolEnv).parameters
    assert params and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    assert all(p.default is not inspect.Parameter.empty for p in params.values())
    assert {"shop", "goals", "split", "human_goals", "price_seed", "max_steps"} <= set(params)
    with pytest.raises(TypeError):
        WebShopToolEnv(None)  # positional settings are refused
    env = WebShopToolEnv()
    assert env.goal_index is None and env.done and env.get_reward() == 0.0


def test_every_instance_shares_one_shop(default_shop, monkeypatch):
    # start from an empty cache of shared shops: an earlier test may have filled it before another
    # cleared load_shop's own cache (tests/data/test_scale.py does), which no process does
    monkeypatch.setattr(trl_integration, "_SHOPS", {})
    plain = WebShopToolEnv()
    partial = functools.partial(WebShopToolEnv, split="test", max_steps=5)()
    given = WebShopToolEnv(shop=default_shop)
    # one object for every instance and for WebShopEnv (load_shop's process cache; other tests may
    # have cleared that cache since the session's default_shop fixture was loaded)
    assert plain.shop is partial.shop is WebShopEnv().shop
    assert given.shop is default_shop  # a given Shop is used as is


def test_only_search_and_click_are_public_methods():
    # TRL turns every public function of the class except reset and get_reward into a tool.
    public = {name for name, _ in inspect.getmembers(WebShopToolEnv, predicate=inspect.isfunction) if not name.startswith("_")}
    assert public == {"reset", "get_reward", "search", "click"}


@pytest.mark.parametrize("goal", [1500, 1501, 1777, 2900])
def test_tool_episode_gives_webshopenv_reward_and_breakdown(default_shop, goal):
    env = WebShopToolEnv()
    text = env.reset(goal_index=goal, prompt=[{"role": "user", "content": TASK_PROMPT}], other_column=3)
    instruction = default_shop.goals.instruction[goal]
    assert text.startswith(f"\n\nInstruction: {instruction}\n\nPage: Search\n")
    assert text.endswith("Admissible actions: search(query)")
    results = env.search(instruction)
    labels = admissible_labels(results)
    assert "back to search" in labels and not results.startswith("Page: Instruction")
    with pytest.raises(InadmissibleAction, match="is not admissible on this page"):
        env.click("no such label")
    product = [label for label in labels if label.startswith("b0")][goal % 3]
    item = env.click(product)
    options = [label for label in admissible_labels(item) if label not in
               ("back to search", "< prev", "description", "features", "reviews", "buy now")]
    for option in options[:2]:
        env.click(option)
    done = env.click("buy now")
    assert "The episode is over" in done and env.done

    reference = WebShopEnv(shop=default_shop)
    reference.reset(options={"goal_index": goal})
    for action in env.actions:
        _, reward, terminated, truncated, info = reference.step(action)
    assert env.actions[0] == f"search[{instruction}]" and env.actions[-1] == "click[buy now]"
    assert terminated and not truncated
    assert env.get_reward() == reward and isinstance(env.get_reward(), float)
    assert env.reward_info == info["reward_info"] and env.reward_info
    assert env.steps == info["steps"] == len(env.actions)
    assert env.invalid_actions == 1


def test_an_over_long_search_says_it_is_too_long_without_echoing_it():
    # issue 34: a search of ~400,000 words is inadmissible; the error said "on this page" and
    # echoed every word back into the model's context
    env = WebShopToolEnv(max_steps=4)
    env.reset(goal_index=1500)
    with pytest.raises(InadmissibleAction) as excinfo:
        env.search("red " * 400_000)
    message = str(excinfo.value)
    assert message.startswith("search('red red red")
    assert "... [1,599,999 characters]) is not admissible anywhere: the action has 1,600,007 characters, " \
           "at most 100,000 (invalid action 1; step 1 of 4). Admissible actions: search(query)" in message
    assert len(message) < 400
    assert env.invalid_actions == 1 and env.steps == 1
    assert "Total results" in env.search("red shoes")  # within the bound: a search like any other


def test_inadmissible_actions_are_stepped_counted_and_explained():
    env = WebShopToolEnv(max_steps=4)
    env.reset(goal_index=1500)
    with pytest.raises(InadmissibleAction) as excinfo:
        env.click("buy now")
    message = str(excinfo.value)
    assert message == ("click('buy now') is not admissible on this page (invalid action 1; step 1 of 4). "
                       "Admissible actions: search(query)")
    assert env.invalid_actions == 1 and env.steps == 1 and env.info["invalid_action"]
    results = env.search("bird feeder")
    asin = [label for label in admissible_labels(results) if label.startswith("b0")][0]
    with pytest.raises(InadmissibleAction, match=rf"did you mean '{asin}'\?"):
        env.click(asin[:-1])
    with pytest.raises(InadmissibleAction, match=r"click\(label\) with label one of \[\"back to search\"") as excinfo:
        env.click("description")  # an item page's label, not a results page's
    assert str(excinfo.value).endswith("The episode is over: the limit of 4 actions was reached without a purchase.")
    assert env.invalid_actions == 3 and env.steps == 4 and env.done  # the fourth action hit max_steps
    with pytest.raises(EpisodeFinished, match="limit of 4 actions was reached without a purchase"):
        env.click(asin)
    assert env.get_reward() == 0.0 and env.reward_info == {}


def test_without_a_step_limit_the_episode_runs_until_the_purchase():
    env = WebShopToolEnv(max_steps=None)
    env.reset(goal_index=1500)
    for _ in range(20):
        with pytest.raises(InadmissibleAction, match=r"\(invalid action \d+; step \d+\)\. Admissible"):
            env.click("nothing")
    assert env.steps == 20 and not env.done


def test_the_episode_ends_with_the_purchase():
    env = WebShopToolEnv()
    env.reset(goal_index=1500)
    results = env.search("bird feeder")
    env.click([label for label in admissible_labels(results) if label.startswith("b0")][0])
    done = env.click("Buy Now")  # labels are case-insensitive, as in the reference
    assert done.splitlines()[-1].startswith("The episode is over: b0") and done.endswith(" was bought.")
    reward = env.get_reward()
    with pytest.raises(EpisodeFinished, match="the episode is over .* was bought"):
        env.search("anything")
    assert env.get_reward() == reward and env.steps == 3  # calls after the end change nothing


def test_tools_reject_non_string_arguments_and_calls_before_reset():
    env = WebShopToolEnv()
    with pytest.raises(EpisodeFinished, match="no episode yet; reset"):
        env.search("soap")
    env.reset(goal_index=1500)
    with pytest.raises(InvalidArgument, match="query must be a string, got 3"):
        env.search(3)
    with pytest.raises(InvalidArgument, match="label must be a string"):
        env.click(None)
    assert env.steps == 0 and env.invalid_actions == 0


def test_search_queries_are_whitespace_normalised():
    env = WebShopToolEnv()
    env.reset(goal_index=1500)
    env.search("  bird\nfeeder\t black ")
    assert env.actions == ["search[bird feeder black]"]


def test_reset_checks_the_rows_goal_against_the_split_and_the_goal_set(default_shop):
    env = WebShopToolEnv()  # split="train": goals 1500..
    with pytest.raises(GoalNotFound, match=r"goal_index 3 is not in this env's split 'train' \(goals 1500\.\."):
        env.reset(goal_index=3)
    with pytest.raises(InvalidArgument, match="goal_index must be an integer"):
        env.reset(goal_index="1500")
    with pytest.raises(GoalNotFound):
        env.reset(goal_index=len(default_shop.goals))
    env.reset(goal_index=1502)
    env.search("lamp")
    with pytest.raises(ValueError, match="build the dataset and the env with the same shop"):
        env.reset(goal_index=1500, instruction=default_shop.goals.instruction[1501])
    assert (env.goal_index, env.steps, env.actions) == (1502, 1, ["search[lamp]"])  # a bad row changes nothing
    env.click("back to search")
    assert "Instruction: " in WebShopToolEnv(split=None).reset(goal_index=3)
    assert "Instruction: " in WebShopToolEnv(split="test").reset(goal_index=3)


def test_reset_starts_afresh():
    env = WebShopToolEnv()
    env.reset(goal_index=1500)
    env.search("bird feeder")
    with pytest.raises(InadmissibleAction):
        env.click("nothing")
    env.reset(goal_index=1501)
    assert (env.goal_index, env.steps, env.invalid_actions, env.actions, env.done) == (1501, 0, 0, [], False)
    assert env.get_reward() == 0.0 and env.reward_info == {}


def test_rows_without_a_goal_draw_one_from_the_split_seeded():
    def goals(seed):
        env = WebShopToolEnv(seed=seed)
        out = []
        for _ in range(6):
            env.reset()
            out.append(env.goal_index)
        return out

    drawn = goals(7)
    assert drawn == goals(7) and all(g >= 1500 for g in drawn) and len(set(drawn)) > 1
    test_goals = WebShopToolEnv(split="test", seed=1)
    test_goals.reset()
    assert 0 <= test_goals.goal_index < 500


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"split": "valid"}, "split='valid' is not supported"),
    ({"max_steps": 0}, "max_steps must be an integer >= 1"),
    ({"price_seed": -1}, "price_seed must be an integer >= 0"),
    ({"human_goals": "yes"}, "human_goals must be True or False"),
    ({"seed": 1.5}, "seed must be an integer >= 0 or None"),
])
def test_bad_settings_fail_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WebShopToolEnv(**kwargs)


def test_module_docstring_example_runs():
    result = doctest.testmod(trl_integration, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0


# -- the dataset ---------------------------------------------------------------------------------


def test_dataset_rows_are_the_splits_goals(default_shop):
    rows = webshop_dataset("test", as_dataset=False)
    assert [row["goal_index"] for row in rows] == list(range(500))
    assert rows[7] == {"prompt": [{"role": "user", "content": TASK_PROMPT}], "goal_index": 7,
                       "instruction": default_shop.goals.instruction[7]}
    train = webshop_dataset(as_dataset=False, limit=3, prompt="buy it")
    assert [row["goal_index"] for row in train] == [1500, 1501, 1502]
    assert train[0]["prompt"] == [{"role": "user", "content": "buy it"}]
    assert len(webshop_dataset(None, as_dataset=False)) == len(default_shop.goals)
    assert webshop_dataset("eval", limit=0, as_dataset=False) == []


def test_dataset_rows_reset_the_env_they_were_built_with():
    for row in webshop_dataset("test", limit=3, as_dataset=False):
        env = WebShopToolEnv(split="test")
        text = env.reset(**row)
        assert env.goal_index == row["goal_index"] and row["instruction"] in text


def test_dataset_honours_price_seed_and_human_goals():
    seed0 = webshop_dataset("test", limit=20, as_dataset=False)
    seed1 = webshop_dataset("test", limit=20, price_seed=1, as_dataset=False)
    assert [r["instruction"] for r in seed0] != [r["instruction"] for r in seed1]  # the price caps differ
    env = WebShopToolEnv(split="test", price_seed=1)
    env.reset(**seed1[4])
    with pytest.raises(ValueError, match="same shop, goals, human_goals and price_seed"):
        next(env.reset(**row) for row in seed0 if row["instruction"] != seed1[row["goal_index"]]["instruction"])
    human = webshop_dataset("test", limit=5, human_goals=True, as_dataset=False)
    human_env = WebShopToolEnv(split="test", human_goals=True)
    assert human_env.shop.goals.kind == "human"
    assert [r["instruction"] for r in human] == [human_env.shop.goals.instruction[i] for i in range(5)]


def test_dataset_honours_a_frozen_goal_set(tmp_path, default_shop):
    frozen = tmp_path / "goals.json"
    default_shop.goals.save(frozen, default_shop.catalog)
    rows = webshop_dataset("test", goals=frozen, limit=4, as_dataset=False)
    env = WebShopToolEnv(split="test", goals=frozen)
    assert env.shop is not default_shop and len(env.shop.goals) == len(default_shop.goals)
    for row in rows:
        env.reset(**row)
        assert env.instruction == default_shop.goals.instruction[row["goal_index"]]


def test_dataset_argument_errors():
    with pytest.raises(InvalidArgument, match="limit must be an integer >= 0 or None"):
        webshop_dataset(limit=-1)
    with pytest.raises(InvalidArgument, match="prompt must be a string"):
        webshop_dataset(prompt=None)
    with pytest.raises(ValueError, match="split='tests' is not supported"):
        webshop_dataset("tests")


def test_dataset_without_the_datasets_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    assert isinstance(webshop_dataset("test", limit=2), list)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'webshop-gym\[trl\]'"):
        webshop_dataset("test", limit=2, as_dataset=True)


def test_dataset_is_a_datasets_dataset_when_installed():
    datasets = pytest.importorskip("datasets", reason=TRL_MISSING)
    ds = webshop_dataset("test", limit=5)
    assert isinstance(ds, datasets.Dataset) and ds.column_names == ["prompt", "goal_index", "instruction"]
    assert ds["goal_index"] == [0, 1, 2, 3, 4] and ds[0]["prompt"] == [{"role": "user", "content": TASK_PROMPT}]


# -- TRL's own code ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_trl(default_shop):
    """(tokenizer, constraint factory, model factory) built offline; torch on one thread."""
    require_trl()
    import torch

    _tiny_trl = load_example("trl_cpu_smoke")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    tokenizer = _tiny_trl.tokenizer_for(default_shop)
    yield tokenizer, _tiny_trl
    torch.set_num_threads(threads)


def grpo_config(tmp_path, **overrides):
    from trl import GRPOConfig

    settings = dict(
        output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=4, max_steps=2,
        max_completion_length=2048, max_tool_calling_iterations=6, learning_rate=1e-3, logging_steps=1,
        report_to="none", use_cpu=True, bf16=False, activation_checkpointing=False, save_strategy="no",
        disable_tqdm=True, seed=0,
    )
    settings.update(overrides)
    return GRPOConfig(**settings)


def test_trl_builds_tool_schemas_from_the_docstrings():
    require_trl()
    from transformers.utils import get_json_schema

    env = WebShopToolEnv()
    search, click = get_json_schema(env.search)["function"], get_json_schema(env.click)["function"]
    assert search["name"] == "search" and click["name"] == "click"
    assert search["parameters"] == {
        "type": "object", "required": ["query"],
        "properties": {"query": {"type": "string", "description": search["parameters"]["properties"]["query"]["description"]}},
    }
    assert click["parameters"]["required"] == ["label"] and click["parameters"]["properties"]["label"]["type"] == "string"
    assert "buy now" in click["parameters"]["properties"]["label"]["description"]
    assert search["description"].startswith("Search the shop") and click["description"].startswith("Click")
    assert search["return"]["type"] == click["return"]["type"] == "string"


@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_grpo_trainer_discovers_the_tools_and_the_reward(tiny_trl, tmp_path, monkeypatch):
    tokenizer, tiny = tiny_trl
    from trl import GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model = tiny.build_model(tokenizer, tiny.ToolCallConstraint(tokenizer))
    for factory in (WebShopToolEnv, functools.partial(WebShopToolEnv, split="test", max_steps=5)):
        trainer = GRPOTrainer(model=model, args=grpo_config(tmp_path), train_dataset=webshop_dataset("test", limit=2),
                              processing_class=tokenizer, environment_factory=factory)
        tools = trainer._env_tools[None]  # what TRL found on the class: the tools it will offer and call
        assert sorted(tool.__name__ for tool in tools) == ["click", "search"]
        assert trainer.reward_func_names == ["WebShopToolEnv"]  # get_reward: the env owns the reward
        assert isinstance(trainer._environment_pool[None][0], WebShopToolEnv)
        rendered = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tools=tools, tokenize=False)
        assert '"name": "search"' in rendered and '"name": "click"' in rendered
    assert trainer._environment_pool[None][0]._max_steps == 5


def test_trl_parses_a_tool_call_and_calls_the_tool_by_name(tiny_trl, default_shop):
    """The path of one tool call in TRL: its response parser, then ``tool(**arguments)`` by name."""
    tokenizer, _ = tiny_trl
    from trl.chat_template_utils import add_response_schema, parse_response

    add_response_schema(tokenizer)
    env = WebShopToolEnv()
    env.reset(goal_index=1500)
    tools = {"search": env.search, "click": env.click}
    reference = WebShopEnv(shop=default_shop)
    reference.reset(options={"goal_index": 1500})
    text = '<tool_call>\n{"name": "search", "arguments": {"query": "bird feeder"}}\n</tool_call><|im_end|>'
    prefix = tokenizer.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=True, tokenize=True)
    parsed = parse_response(tokenizer, tokenizer(text)["input_ids"], prefix=prefix, tools=list(tools.values()))
    (call,) = parsed["tool_calls"]
    result = tools[call["function"]["name"]](**call["function"]["arguments"])
    obs, *_ = reference.step("search[bird feeder]")
    assert result.startswith("Page: " + obs.split(" [SEP] ", 2)[2])


@pytest.mark.slow
@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_grpo_trainer_trains_two_steps_on_webshop(tiny_trl, tmp_path, monkeypatch, default_shop):
    """A real GRPOTrainer.train(): a random Qwen2 whose sampling is constrained to valid tool calls."""
    tokenizer, tiny = tiny_trl
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    resets, rewards, logs = [], [], []
    reset, get_reward = WebShopToolEnv.reset, WebShopToolEnv.get_reward

    def recording_reset(self, **row):
        text = reset(self, **row)
        resets.append((row["goal_index"], self.goal_index, id(self)))
        return text

    def recording_get_reward(self):
        value = get_reward(self)
        rewards.append((self.goal_index, list(self.actions), value))
        return value

    monkeypatch.setattr(WebShopToolEnv, "reset", recording_reset)
    monkeypatch.setattr(WebShopToolEnv, "get_reward", recording_get_reward)

    class Logs(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            logs_seen.append(dict(logs or {}))

    logs_seen = logs
    constraint = tiny.ToolCallConstraint(tokenizer)
    dataset = webshop_dataset("train", limit=2)
    trainer = GRPOTrainer(
        model=tiny.build_model(tokenizer, constraint), args=grpo_config(tmp_path), train_dataset=dataset,
        processing_class=tokenizer, environment_factory=WebShopToolEnv, callbacks=[Logs()],
    )
    trainer.train()

    assert constraint.calls > 0
    # reset: once per rollout (2 steps x 4 generations), with the row's goal; a GRPO group shares one goal
    assert len(resets) == 8 and all(row_goal == env_goal for row_goal, env_goal, _ in resets)
    groups = [{goal for goal, _, _ in resets[i:i + 4]} for i in (0, 4)]
    assert all(len(group) == 1 for group in groups) and set().union(*groups) <= {1500, 1501}
    assert len({instance for _, _, instance in resets}) == 4  # TRL's pool: one instance per rollout, reused
    # every rollout bought something through the tools, and its reward is WebShopEnv's for the same actions
    assert len(rewards) == 8
    for goal, actions, value in rewards:
        assert actions[0].startswith("search[") and actions[1].startswith("click[b0") and actions[-1] == "click[buy now]"
        reference = WebShopEnv(shop=default_shop)
        reference.reset(options={"goal_index": goal})
        for action in actions:
            _, expected, terminated, _, _ = reference.step(action)
        assert terminated and value == expected
    assert any(value > 0 for _, _, value in rewards)
    # the rewards reach the trainer's logged metrics, under the env class's name
    step_logs = [entry for entry in logs if "rewards/WebShopToolEnv/mean" in entry]
    assert len(step_logs) == 2
    for entry, start in zip(step_logs, (0, 4)):
        step_values = [value for _, _, value in rewards[start:start + 4]]
        assert entry["rewards/WebShopToolEnv/mean"] == pytest.approx(sum(step_values) / 4)
        assert entry["reward"] == pytest.approx(sum(step_values) / 4)
        assert entry["tools/call_frequency"] == pytest.approx(3.0) and entry["tools/failure_frequency"] == 0.0
    assert trainer.state.global_step == 2


# -- examples/trl_grpo.py ------------------------------------------------------------------------

EXAMPLE = ROOT / "examples" / "trl_grpo.py"


def run_example(*args, env=None):
    return subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, env=env, timeout=600)


def test_example_help_explains_the_run():
    result = run_example("--help")
    assert result.returncode == 0 and result.stderr == ""
    for flag in ("--model", "--vllm-mode {colocate,server,off}", "--goals-per-step", "--num-generations", "--dry-run"):
        assert flag in result.stdout
    assert "Qwen2.5-1.5B-Instruct" in result.stdout and "trl vllm-serve" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--per-device-batch", "7"], "--per-device-batch (7) must divide the rollouts of a step"),
    (["--num-generations", "1"], "--num-generations must be at least 2"),
    (["--shop", "/no/such/shop"], "argument --shop: no such directory: /no/such/shop"),
    (["--steps", "0"], "argument --steps: expected a positive integer, got 0"),
    (["--thinking"], "--thinking applies to Qwen3 models only"),
    (["--cpu"], "--cpu needs --vllm-mode off"),
])
def test_example_rejects_bad_settings_in_one_line(args, message):
    result = run_example("--dry-run", *args)
    assert result.returncode == 2 and result.stderr.splitlines()[-1].startswith(f"trl_grpo.py: error: {message}")
    assert "Traceback" not in result.stderr


def test_example_without_trl_says_what_to_install(tmp_path):
    fake = tmp_path / "trl"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'trl'\", name='trl')\n")
    result = run_example("--dry-run", env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() in (
        "trl_grpo.py: error: trl is not installed: pip install 'webshop-gym[trl]'",
        "trl_grpo.py: error: torch is not installed: pip install 'webshop-gym[trl]'",
    )


@pytest.mark.slow
def test_example_dry_run_builds_the_published_settings():
    require_trl()
    result = run_example("--dry-run", "--eval-goals", "20")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout[:result.stdout.rindex("}") + 1])
    assert plan["model"] == "Qwen/Qwen2.5-1.5B-Instruct" and plan["vllm"] == "colocate"
    assert (plan["goals_per_step"], plan["num_generations"], plan["rollouts_per_step"]) == (16, 8, 128)
    assert (plan["steps"], plan["learning_rate"], plan["beta"], plan["max_actions"]) == (150, 1e-6, 0.01, 15)
    assert plan["eval_goals"] == 20 and plan["first_train_goal"] == 500  # verl-agent trains on goals 500..
    assert result.stdout.rstrip().endswith("no model was loaded")


@pytest.mark.slow
def test_example_trains_a_tiny_local_model_on_the_cpu(tiny_trl, tmp_path):
    """The script's training path end to end (datasets, factory, config, penalty, evaluation, save), offline."""
    tokenizer, tiny = tiny_trl
    model_dir = tmp_path / "tiny-qwen2"
    tiny.build_model(tokenizer, None).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    result = run_example(
        "--cpu", "--vllm-mode", "off", "--model", str(model_dir), "--train-goals", "train", "--steps", "1",
        "--goals-per-step", "1", "--num-generations", "2", "--per-device-batch", "2", "--eval-goals", "2",
        "--eval-every", "1", "--max-completion-length", "24", "--output-dir", str(tmp_path / "out"),
        env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    plan = json.loads(result.stdout[:result.stdout.index("\n}") + 2])
    assert (plan["device"], plan["first_train_goal"], plan["rollouts_per_step"]) == ("cpu", 1500, 2)
    assert "'rewards/WebShopToolEnv/mean'" in result.stdout and "'rewards/invalid_action_penalty/mean'" in result.stdout
    assert "'eval_rewards/WebShopToolEnv/mean'" in result.stdout  # the test goals were played too
    assert (tmp_path / "out" / "model.safetensors").is_file()


@pytest.mark.slow
def test_the_cpu_smoke_example_trains_and_logs_the_unfinished_share(tmp_path):
    require_trl()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRL_EXPERIMENTAL_SILENCE": "1"}
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "trl_cpu_smoke.py"), "--steps", "1",
                             "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    line = [x for x in result.stdout.splitlines() if x.startswith("step 1:")]
    assert line and "rewards/WebShopToolEnv/mean" in line[0] and "rewards/unfinished_episodes/mean" in line[0]


def test_unfinished_episodes_is_one_for_an_episode_not_over(default_shop):
    over, running, fresh = WebShopToolEnv(split=None), WebShopToolEnv(split=None), WebShopToolEnv(split=None)
    over.reset(goal_index=0)
    running.reset(goal_index=0)
    over.search("boots")
    over.click(over.info["valid_actions"][2][len("click["):-1])
    over.click("buy now")
    running.search("boots")
    assert unfinished_episodes(environments=[over, running, object()]) == [0.0, 1.0, None]
    assert fresh.done  # before any reset an env counts as over: no episode was cut short
