"""The reward: reference scorer, Numba kernel (and its twin), golden cases, edge cases."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from thefuzz import fuzz

import webshop_gym
from tests.helpers import product, write_shop
from webshop_gym.data.fuzz import FuzzTableBuilder
from webshop_gym.reward import BREAKDOWN_KEYS, _kernels
from webshop_gym.reward.tables import max_joined_length

# -- the fuzzy matcher ------------------------------------------------------------------------

_ALPHABET = st.sampled_from(list("abcde xyz-12 ,.'\"()/|&ÄéßΩ你™_\t"))
_WORDS = ["size", "large", "x-large", "black", "navy blue", "pack", "of", "2", "oz", "gluten free", "free",
          "men's", "('size', 'large')", "", "  ", "éclair", "a", "aa", "ab", "ba", "abc", "cab"]


def _kernel_ratio(pairs):
    builder = FuzzTableBuilder()
    ids = [(builder.add(a), builder.add(b)) for a, b in pairs]
    table = builder.build()
    out = np.empty(len(ids))
    matches = np.zeros(len(ids), dtype=bool)
    left = np.array([a for a, _ in ids], dtype=np.int32)
    right = np.array([b for _, b in ids], dtype=np.int32)
    _kernels.fuzzy_pairs_jit(
        np.asarray(table.tokens.offsets), np.asarray(table.tokens.values), np.asarray(table.strings.offsets),
        np.asarray(table.strings.values), max_joined_length(table), left, right, out, matches,
    )
    # the pruned match test agrees with thresholding the exact score
    assert np.array_equal(matches, np.rint(out) > 85)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(_ALPHABET, max_size=40), st.text(_ALPHABET, max_size=40)), min_size=1, max_size=20))
def test_token_set_ratio_kernel_equals_thefuzz(pairs):
    scores = _kernel_ratio(pairs)
    for (a, b), score in zip(pairs, scores):
        assert int(round(score)) == fuzz.token_set_ratio(a, b), (a, b, score)


def test_token_set_ratio_on_word_soup():
    rng = np.random.default_rng(0)
    pairs = [(" ".join(rng.choice(_WORDS, rng.integers(0, 6))), " ".join(rng.choice(_WORDS, rng.integers(0, 6))))
             for _ in range(5000)]
    pairs += [(("size", "large"), "large"), (("color", "navy blue"), "blue"), ("large", ("size", "x-large"))]
    scores = _kernel_ratio(pairs)
    mismatches = [(a, b) for (a, b), s in zip(pairs, scores) if int(round(s)) != fuzz.token_set_ratio(a, b)]
    assert mismatches == []


# -- golden cases ---------------------------------------------------------------------------------


@pytest.mark.parametrize("human", [False, True])
def test_golden_rewards_exactly(real_dir, golden_dir, human):
    """Every reward case of the reference's golden file, by the kernel and by the reference scorer.

    The only way the two could differ from the reference is spaCy tagging the titles differently;
    the count of such cases is asserted to be zero (the README states the figure).
    """
    from webshop_gym import load_shop

    folder = golden_dir / "human" if human else golden_dir
    shop = load_shop(real_dir, goals=folder / "goals.json", progress=False)
    with open(folder / "rewards.jsonl", encoding="utf-8") as handle:
        cases = [json.loads(line) for line in handle]
    assert len(cases) == 10000
    batch = shop.score_batch([c["goal_index"] for c in cases], [c["asin"] for c in cases],
                             [c["options"] for c in cases], [c["price"] for c in cases])
    kernel_bad = [i for i, c in enumerate(cases) if batch.total[i] != c["reward"] or batch.info(i) != c["info"]]
    tagging = [i for i in kernel_bad if batch.info(i)["title_score"] != cases[i]["info"]["title_score"]]
    assert len(tagging) == 0, f"{len(tagging)} cases differ only through spaCy's title tagging"
    assert kernel_bad == []
    reference_bad = [
        i for i, c in enumerate(cases)
        if shop.reward(c["goal_index"], c["asin"], c["options"], c["price"]) != (c["reward"], c["info"])
    ]
    assert reference_bad == []
    assert sum(c["reward"] == 1.0 for c in cases) > 100  # the file has successes, not only failures


# -- kernel == reference on random tuples --------------------------------------------------------------


def _random_tuples(shop, n, seed):
    rng = np.random.default_rng(seed)
    catalog, goals = shop.catalog, shop.goals
    tuples = []
    for _ in range(n):
        g = int(rng.integers(len(goals)))
        row = int(goals.target[g]) if rng.random() < 0.5 and goals.target[g] >= 0 else int(rng.integers(len(catalog)))
        options = {}
        for grp in catalog.option_groups[row]:
            if rng.random() < 0.7:
                values = catalog.group_values[grp]
                options[catalog.group_name[grp]] = catalog.value_text[int(values[rng.integers(len(values))])]
        if rng.random() < 0.1:
            options["free text"] = rng.choice(["navy blue", "XL", "größe", "24 | 36 pack", ""])
        price = float(shop.prices[row]) if rng.random() < 0.6 else float(rng.uniform(1, 1200))
        if rng.random() < 0.05:
            price = float(goals.price_upper[g])  # exactly at the cap
        tuples.append((g, catalog.asin[row], options, price))
    return tuples


def _compare(shop, tuples):
    batch = shop.score_batch(*zip(*tuples))
    bad = []
    for i, (g, asin, options, price) in enumerate(tuples):
        total, info = shop.reward(g, asin, options, price)
        if total != batch.total[i] or info != batch.info(i):
            bad.append((i, total, float(batch.total[i]), info, batch.info(i)))
    return bad


def test_kernel_equals_reference_on_the_default_shop(default_shop):
    assert _compare(default_shop, _random_tuples(default_shop, 10000, seed=1)) == []


def test_kernel_equals_reference_on_the_real_shop(real_shop, real_human_shop):
    assert _compare(real_shop, _random_tuples(real_shop, 10000, seed=2)) == []
    assert _compare(real_human_shop, _random_tuples(real_human_shop, 2000, seed=3)) == []


def test_goals_named_otherwise_than_their_product_score_as_the_reference(real_dir, golden_dir, tmp_path):
    """A goal file may name a goal otherwise than its product's title: its nouns come from the goal
    tables (tagged when they are built), in a batch mixing both kinds and one purchase at a time."""
    goals = json.loads((golden_dir / "goals.json").read_text())[:40]
    for k, goal in enumerate(goals):
        if k % 2:
            goal["name"] = ["Travel Coffee Mug with Lid", "Kids Rain Boots Yellow", "Throw Pillow"][k % 3]
    path = tmp_path / "goals.json"
    path.write_text(json.dumps(goals))
    (tmp_path / "prices.json").write_text((golden_dir / "prices.json").read_text())
    shop = webshop_gym.load_shop(real_dir, goals=path, progress=False)
    shop.rewards.prepare()
    noun_row = np.asarray(shop.rewards._goal_tables.noun_row)
    assert (noun_row[1::2] < 0).all() and (noun_row[0::2] >= 0).all()
    tuples = _random_tuples(shop, 400, seed=9)
    assert _compare(shop, tuples) == []  # the batch (both kinds mixed) against the reference scorer
    for g, asin, options, price in tuples[:100]:  # one at a time: the kernel's single path
        row = shop.row(asin)
        ids = shop._selected_fz(row, list(options.values()))
        assert shop.rewards.score_one(g, row, ids, price) == shop.reward(g, asin, options, price)


def test_twin_equals_kernel(default_shop):
    tuples = _random_tuples(default_shop, 300, seed=4)
    rows = [default_shop.row(a) for _, a, _, _ in tuples]
    selected = [default_shop._selected_fz(r, list(o.values())) for r, (_, _, o, _) in zip(rows, tuples)]
    args = ([g for g, *_ in tuples], rows, selected, [p for *_, p in tuples])
    compiled = default_shop.rewards.score(*args)
    twin = default_shop.rewards.score(*args, kernel=False)
    for key in (*BREAKDOWN_KEYS, "total", "n_att", "n_opt"):
        assert np.array_equal(getattr(compiled, key), getattr(twin, key), equal_nan=True), key


def test_info_gives_python_numbers_in_the_reference_order(default_shop):
    tuples = _random_tuples(default_shop, 300, seed=6)
    rows = [default_shop.row(a) for _, a, _, _ in tuples]
    selected = [default_shop._selected_fz(r, list(o.values())) for r, (_, _, o, _) in zip(rows, tuples)]
    batch = default_shop.rewards.score([g for g, *_ in tuples], rows, selected, [p for *_, p in tuples])
    with_options = 0
    for i in range(len(batch)):
        info = batch.info(i)
        assert list(info) == [k for k in BREAKDOWN_KEYS if k in info]
        assert ("r_option" in info) == ("w_option" in info) == (not np.isnan(batch.r_option[i]))
        with_options += "r_option" in info
        for key, value in info.items():
            array = getattr(batch, key)
            assert type(value) is (bool if array.dtype == np.bool_ else float), key
            assert value == array[i], key
    assert 0 < with_options <= len(batch)
    infos = batch.infos()  # every item's info at once: the same dicts, keys in the same order
    assert [list(info.items()) for info in infos] == [list(batch.info(i).items()) for i in range(len(batch))]
    assert all(type(a) is type(b) for i, info in enumerate(infos) for a, b in zip(info.values(), batch.info(i).values()))


def test_score_one_equals_a_batch_of_one(default_shop, real_shop):
    """``score_one`` (reused per-thread arrays, Python numbers) gives each purchase's batch total and info."""
    from webshop_gym.error import GoalNotFound

    for shop, seed in ((default_shop, 7), (real_shop, 8)):
        rewards = shop.rewards
        tuples = _random_tuples(shop, 400, seed=seed)
        rows = [shop.row(a) for _, a, _, _ in tuples]
        selected = [shop._selected_fz(r, list(o.values())) for r, (_, _, o, _) in zip(rows, tuples)]
        for (g, _, _, price), row, sel in zip(tuples, rows, selected):
            batch = rewards.score([g], [row], [sel], [price])
            total, info = rewards.score_one(g, row, np.asarray(sel, dtype=np.int64), price)
            assert type(total) is float and total == batch.total[0]
            assert info == batch.info(0) and list(info) == list(batch.info(0))
        goals, n = len(shop.goals), len(shop.catalog)
        with pytest.raises(GoalNotFound, match=rf"goal index {goals} is out of range"):
            rewards.score_one(goals, 0, [], 1.0)
        with pytest.raises(IndexError, match=rf"product rows must be in \[0, {n}\)"):
            rewards.score_one(0, -1, [], 1.0)
        with pytest.raises(ValueError, match="flat sequence"):
            rewards.score_one(0, 0, [[1]], 1.0)


# -- edge cases on a hand-made shop ---------------------------------------------------------------------


@pytest.fixture()
def edge_shop(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    from webshop_gym import load_shop

    products = [
        product("B000000001", name="Crème Brûlée Candle for Café Décor", pricing="$20.00",
                full_description="Smells like vanilla. Großartig!",
                customization_options={"Scent": [{"value": "Vanilla/Caramel"}, {"value": "Sea Salt"}],
                                       "Size": [{"value": "8 oz"}, {"value": "16 oz"}]}),
        product("B000000002", name="Plain Candle", pricing="$20.00"),  # no attributes entry: DUMMY_ATTR
    ]
    attributes = {"B000000001": {"attributes": ["long lasting", "soy wax"], "instruction": "Find me candles",
                                 "instruction_attributes": ["long lasting", "café décor"]}}
    human = {"B000000001": [{"instruction": "i need a candle", "instruction_attributes": ["long lasting"],
                             "instruction_options": []}]}
    folder = write_shop(tmp_path / "shop", products, attributes, human)
    return load_shop(folder, progress=False), load_shop(folder, human_goals=True, progress=False)


def test_edge_cases(edge_shop):
    shop, human = edge_shop
    goal = next(i for i in range(len(shop.goals))
                if shop.goals.options[i] == {"scent": "vanilla | caramel", "size": "8 oz"})
    cap = float(shop.goals.price_upper[goal])
    cases = [
        (goal, "B000000001", {"scent": "vanilla | caramel", "size": "8 oz"}, None),  # '|' in a value
        (goal, "B000000001", {}, None),  # no options selected
        (goal, "B000000001", {"scent": "vanilla | caramel"}, cap),  # price exactly at the cap
        (goal, "B000000001", {"scent": "sea salt", "size": "16 oz"}, cap + 0.01),
        (goal, "B000000002", {}, None),  # a DUMMY_ATTR product
        (goal, "B000000001", {"made up": "Ünïcode ✓"}, None),  # non-ASCII text, not an option of the product
    ]
    batch = shop.score_batch(*zip(*cases))
    for i, (g, asin, options, price) in enumerate(cases):
        assert shop.reward(g, asin, options, price) == (batch.total[i], batch.info(i)), i
    best = shop.reward(*cases[0])
    assert best[0] == 1.0 and best[1]["r_price"] is True
    assert shop.reward(*cases[2])[1]["r_price"] is True  # price <= cap
    assert shop.reward(*cases[3])[1]["r_price"] is False
    # "café décor" is matched as a substring of the lower-cased title, accents and all
    assert shop.reward(*cases[1])[1]["r_att"] == 1.0
    # a goal without options has no option terms in its breakdown
    h = human.score_batch([0], ["B000000001"], [{}])
    assert "r_option" not in h.info(0) and "w_option" not in h.info(0)
    assert human.reward(0, "B000000001", {}) == (float(h.total[0]), h.info(0))


def test_reward_tables_follow_new_option_strings(real_shop):
    """Scores after string_ids added strings to the fuzz table use the new table (the kernel's cached arguments)."""
    import numpy as np

    rewards = real_shop.rewards
    goal = next(g for g in range(len(real_shop.goals)) if real_shop.goals[g]["goal_options"])
    row = int(real_shop.goals.target[goal])
    wanted = list(real_shop.goals[goal]["goal_options"].values()) if isinstance(
        real_shop.goals[goal]["goal_options"], dict) else list(real_shop.goals[goal]["goal_options"])
    before = rewards.score([goal], [row], [rewards.string_ids(["no such option value 1"])], [1.0])
    ids = rewards.string_ids(wanted + ["another unseen value 2"])
    batch = rewards.score([goal], [row], [ids[:-1]], [1.0])
    twin = rewards.score([goal], [row], [ids[:-1]], [1.0], kernel=False)
    assert np.array_equal(batch.total, twin.total) and batch.r_option[0] == twin.r_option[0] == 1.0
    assert before.r_option[0] < 1.0


def test_score_checks_its_batch_and_scores_an_empty_one(default_shop):
    """Bad goal indices and product rows are named; an empty batch gives empty arrays."""
    from webshop_gym.error import GoalNotFound

    rewards = default_shop.rewards
    goals, rows = len(default_shop.goals), len(default_shop.catalog)
    with pytest.raises(GoalNotFound, match=rf"goal index {goals} is out of range: the goal set has {goals} goals"):
        rewards.score([0, goals, -1], [0, 0, 0], [[], [], []], [1.0, 1.0, 1.0])
    with pytest.raises(GoalNotFound, match="goal index -1 is out of range"):
        rewards.score([0, -1], [0, 0], [[], []], [1.0, 1.0])
    with pytest.raises(IndexError, match=rf"product rows must be in \[0, {rows}\)"):
        rewards.score([0], [rows], [[]], [1.0])
    with pytest.raises(ValueError, match="batch arrays differ in length"):
        rewards.score([0, 1], [0], [[]], [1.0])
    empty = rewards.score([], [], [], [])
    assert len(empty) == 0 and empty.total.dtype == np.float64 and empty.n_att.dtype == np.int32
    one = rewards.score([0], [0], [[]], [1.0])
    assert one.total.flags.c_contiguous and 0.0 <= float(one.total[0]) <= 1.0


def test_score_calls_the_kernel_without_numba_dispatch(default_shop, monkeypatch):
    """After a first purchase, ``score`` calls the compiled kernel's resolved entry point, never numba's dispatcher.

    The dispatcher types some fifty arguments on every call; the entry point must be reused, and
    whatever a caller passes (other integer dtypes, strided or read-only arrays, lists) is turned
    into the exact types it was resolved for: the scores equal the pure-Python twin's.
    """
    rewards = default_shop.rewards
    tuples = _random_tuples(default_shop, 40, seed=5)
    rows = [default_shop.row(a) for _, a, _, _ in tuples]
    selected = [default_shop._selected_fz(r, list(o.values())) for r, (_, _, o, _) in zip(rows, tuples)]
    goals = [g for g, *_ in tuples]
    prices = [p for *_, p in tuples]
    rewards.score(goals[:1], rows[:1], selected[:1], prices[:1])  # resolves the entry point

    def no_dispatch(*args, **kwargs):
        raise AssertionError("the reward kernel went through numba's dispatcher")

    class NoDispatcher:
        __call__ = compile = no_dispatch

    monkeypatch.setattr(_kernels, "score_range_jit", NoDispatcher())
    strided = np.repeat(np.asarray(goals, dtype=np.int32), 2)[::2]  # int32, not contiguous
    read_only = np.asarray(rows, dtype=np.int64)
    read_only.flags.writeable = False
    cases = [
        (goals, rows, prices),
        (strided, read_only, np.repeat(np.asarray(prices), 2)[::2]),
    ]
    for goal_arg, row_arg, price_arg in cases:
        compiled = rewards.score(goal_arg, row_arg, selected, price_arg)
        twin = rewards.score(goal_arg, row_arg, selected, price_arg, kernel=False)
        for key in (*BREAKDOWN_KEYS, "total", "n_att", "n_opt"):
            assert np.array_equal(getattr(compiled, key), getattr(twin, key), equal_nan=True), key
    with pytest.raises(ValueError, match="must be one-dimensional"):
        rewards.score([[0]], [[0]], [[]], [[1.0]])
    with pytest.raises(ValueError, match="flat sequence of ints"):
        rewards.score([0], [0], [[[1, 2]]], [1.0])
