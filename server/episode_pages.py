"""An episode's pages: its diagnosis and stepper, the prompt a served model was sent, its whole answers, the env's pages.

``GET /runs/<run>/<episode>?step=k`` (the stepper: the page the agent saw before action
``k + 1``, re-created by replaying the logged actions, with the element it clicked and the target
marked), ``.../prompt/<k>`` (the messages, rebuilt by the policy's own code), ``.../answer/<k>``
(a model answer or reasoning in full) and ``.../page/<k>`` (the env's HTML, ``?mark=1`` as the
stepper frames it).
"""

from __future__ import annotations

import json
import re

from flask import abort, current_app, request, url_for
from markupsafe import escape
from webshop_gym.server.run_library import RunLibrary, get_library
from webshop_gym.server.run_summary import samples_per_goal
from webshop_gym.server.viewer import (
    action_text,
    bp,
    episode_at,
    find_episode,
    indexed_run,
    play_of,
    render_page,
    target_options,
)

from webshop_gym.agents.openai import request_messages, turn_request_messages
from webshop_gym.analysis.diagnosis import diagnose
from webshop_gym.error import Error
from webshop_gym.render.html import Nav
from webshop_gym.runs.index import RunIndex
from webshop_gym.runs.run import RunEpisode

__all__ = ["answer", "episode_page", "page", "prompt"]


#: Steps listed on either side of the current one in the stepper.
LIST_WINDOW = 50


def _observation(episode: RunEpisode, k: int) -> str | None:
    if k == 0:
        return episode.log.record.get("observation")
    return episode.log.steps[k - 1].get("observation")


@bp.get("/<run>/<int:position>")
def episode_page(run: str, position: int):
    """An episode: its diagnosis, then a stepper through the pages the agent saw, its actions and the outcome."""
    library = get_library()
    loaded = indexed_run(run)
    episode = episode_at(library, loaded, position)
    n = len(episode.log.steps)
    try:
        k = int(request.args.get("step", 0))
    except ValueError:
        abort(400, "step must be a whole number")
    if not 0 <= k <= n:
        abort(404, f"The episode has {n} steps; states run from 0 to {n}.")
    replayed = library.replayed(loaded, episode, k)
    shop = None if replayed.unavailable else library.shop_of(loaded, episode)
    diagnosis = diagnose(episode, shop=shop, searches=None if shop is None else library.searches(loaded, episode))
    record = episode.log.steps[k] if k < n else None
    target = dict(episode.log.record.get("target") or {})
    target.setdefault("instruction", episode.instruction)
    last = episode.last
    low, high = max(0, k - LIST_WINDOW), min(n, k + LIST_WINDOW + 1)
    done_page = k == n and episode.purchased
    t = loaded.table()
    play = play_of(t, position)
    goal_url = url_for("runs.goal_page", run=run, goal=int(episode.goal_index), **({"play": play} if play else {}))
    own = loaded.protocol_fields(position)  # which sample of its goal this episode is (a run of --samples K)
    samples = samples_per_goal(t)
    sample = {"sample": own.get("sample"), "of": samples, "price_seed": own.get("price_seed"), "play": play} \
        if samples > 1 and own.get("sample") is not None else None
    return render_page(
        "runs/episode.html", index=loaded, name=run, episode=episode, k=k, n=n, record=record, goal_url=goal_url,
        sample=sample,
        action=action_text(record) if record else None, replayed=replayed,
        has_page=replayed.has(k) and not done_page, done_page=done_page, diagnosis=diagnosis,
        observation=_observation(episode, k),
        steps=[(i, action_text(episode.log.steps[i]), episode.log.steps[i]) for i in range(low, high)],
        steps_before=low, steps_after=n - high,
        score={"reward": episode.reward, "success": episode.success, "asin": str(last.get("purchased_asin", "")).upper(),
               "options": last.get("purchased_options") or {}, "price": float(last.get("purchased_price") or 0.0),
               "info": last.get("reward_info") or {},
               "target": {"instruction": target.get("instruction", ""), "asin": target.get("asin", "?"),
                          "title": target.get("title", ""), "attributes": target.get("attributes", []),
                          "options": target_options(target.get("options")),
                          "price_upper": float(target.get("price_upper") or 0.0)}},
        has_target=bool(episode.log.record.get("target")), plain_nav=Nav(), answer_cut=ANSWER_CUT,
        prompt=_prompt(library, loaded, episode, k) if k < n or episode.log.record.get("errored") else None,
        prompt_cut=PROMPT_CUT,
    )


#: Characters of a model's answer (or reasoning) the step panel shows; the rest behind a link.
ANSWER_CUT = 20_000
#: Characters of each prompt message the step panel shows; the rest behind a link (as answers).
PROMPT_CUT = ANSWER_CUT
#: Messages of a prompt the step panel shows: the first two and the last ones (all of them in the JSON).
PROMPT_MESSAGES = 100


def _prompt_format(header: dict) -> str | None:
    """The prompt format of a served model's run (``eval --policy openai:MODEL``); ``None`` for any other run."""
    if not str(header.get("policy") or "").startswith("openai:"):
        return None
    name = header.get("prompt") or (header.get("policy_settings") or {}).get("prompt")
    return str(name) if name else None


def _prompt(library: RunLibrary, loaded: RunIndex, episode: RunEpisode, k: int) -> dict | None:
    """The messages the served model was sent for action ``k + 1`` (``k`` = the number of actions: the failed request).

    Rebuilt, not stored: :func:`~webshop_gym.agents.openai.request_messages` (the policy's own
    code) over the logged observations and answers and the infos the replay re-creates.
    ``None`` for a run that is not a served model's; else ``{"format", "messages"}`` (and
    ``problem``: the replay differs from the log) or ``{"format", "unavailable"}`` (why not).
    """
    fmt = _prompt_format(loaded.header)
    if fmt is None:
        return None
    log = episode.log
    states, problem, unavailable = library.states(loaded, episode, k)
    if unavailable:
        return {"format": fmt, "unavailable": unavailable}
    if len(states) <= k:
        return {"format": fmt, "unavailable": f"the replay stopped after {len(states)} states "
                                              f"({problem or 'the log goes on after the episode ended'})"}
    # the observations as logged (an errored episode's first one is not: the replay's, which it checks where logged)
    logged = [log.record.get("observation")] + [s.get("observation") for s in log.steps[:k]]
    states = [(seen if isinstance(seen, str) else obs, info) for seen, (obs, info) in zip(logged, states, strict=True)]
    silent = log.record.get("turns_without_action")
    try:
        if isinstance(silent, list) and fmt != "tools":  # replies were turns (RAGEN's): one request per turn
            messages = turn_request_messages(fmt, states, [s.get("model") or {} for s in log.steps], silent, k)
        else:
            messages = request_messages(fmt, states, [s.get("model") or {} for s in log.steps[:k]], k, log.max_steps)
    except (Error, ValueError, KeyError, TypeError) as exc:  # (a turn's record without its turn: not this package's)
        return {"format": fmt, "unavailable": str(exc).rstrip(".")}
    shown = list(enumerate(messages))
    if len(shown) > PROMPT_MESSAGES:
        shown = [*shown[:2], (None, len(shown) - PROMPT_MESSAGES), *shown[2 - PROMPT_MESSAGES:]]
    return {"format": fmt, "messages": messages, "shown": shown, "problem": problem,
            "characters": sum(len(m.get("content") or "") for m in messages)}


@bp.get("/<run>/<int:position>/prompt/<int:k>")
def prompt(run: str, position: int, k: int):
    """The prompt the served model saw for action ``k + 1``: its messages as JSON (``?message=i``: message i's text)."""
    library, loaded, episode = find_episode(run, position)
    n = len(episode.log.steps)
    if not 0 <= k <= n or (k == n and not episode.log.record.get("errored")):
        abort(404, f"The episode has {n} actions; there is no request for action {k + 1}.")
    found = _prompt(library, loaded, episode, k)
    if found is None:
        abort(404, "Only a served model's run (eval --policy openai:MODEL) has prompts.")
    if "unavailable" in found:
        abort(409, f"The prompt cannot be rebuilt: {found['unavailable']}.")
    messages = found["messages"]
    if "message" not in request.args:
        return current_app.response_class(json.dumps(messages, ensure_ascii=False, indent=1) + "\n",
                                          mimetype="application/json")
    try:
        i = int(request.args["message"])
    except ValueError:
        abort(400, "message must be a whole number")
    if not 0 <= i < len(messages):
        abort(404, f"The prompt has {len(messages)} messages (0 to {len(messages) - 1}); there is no message {i}.")
    return current_app.response_class(str(messages[i].get("content") or ""), mimetype="text/plain")


@bp.get("/<run>/<int:position>/answer/<int:k>")
def answer(run: str, position: int, k: int):
    """The whole model answer (``?part=response``) or reasoning (``part=reasoning``) of action ``k + 1``, as plain text."""
    _, _, episode = find_episode(run, position)
    if not 0 <= k < len(episode.log.steps):
        abort(404, f"The episode has {len(episode.log.steps)} actions; there is no action {k + 1}.")
    step = episode.log.steps[k]
    part = request.args.get("part", "response")
    if part not in ("response", "reasoning"):
        abort(400, "part must be response or reasoning")
    text = (step.get("model") or {}).get("response") if part == "response" else step.get("reasoning")
    if text is None:
        abort(404, f"Action {k + 1} has no model {part}.")
    return current_app.response_class(str(text), mimetype="text/plain")


def _css_string(text: str) -> str:
    """``text`` as a CSS string literal that cannot end the ``<style>`` element."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ").replace("\r", "\\d ")
    return '"' + out.replace("<", "\\3c ").replace(">", "\\3e ") + '"'


def _marked(html: str, episode: RunEpisode, k: int) -> str:
    """The env's page as the stepper shows it: marked, without its script, without image placeholders.

    Marks: the element action ``k + 1`` clicked (or the search box with the query typed) and the
    target product's row on a results page.
    """
    rules = ["span.thumb { display: none !important; }",
             ".results li { min-height: 0 !important; }"]
    record = episode.log.steps[k] if k < len(episode.log.steps) else None
    action = record.get("action") if record else None
    if isinstance(action, str) and action.startswith("click["):
        sel = f"[data-action={_css_string(action.lower())} i]"
        rules.append(f"{sel}, {sel} + label {{ outline: 3px solid #e8590c !important; outline-offset: 2px; "
                     "background: #fff4e6 !important; }")
        rules.append(f"li:has(> {sel}) {{ outline: 3px solid #e8590c; outline-offset: 2px; }}")
    elif isinstance(action, str) and action.startswith("search[") and action.endswith("]"):
        query = str(escape(action[7:-1]))
        html = html.replace('<input id="search_input" type="text" name="query"',
                            f'<input id="search_input" type="text" name="query" value="{query}"', 1)
        rules.append("#search_input { outline: 3px solid #e8590c !important; background: #fff4e6 !important; }")
    asin = str((episode.log.record.get("target") or {}).get("asin") or "")
    if asin:
        sel = f"a.product-link[data-action={_css_string('click[' + asin.lower() + ']')} i]"
        rules.append(f"li:has(> {sel}) {{ background: #e6fcf5 !important; box-shadow: inset 4px 0 0 #0ca678; }}")
        rules.append(f"{sel}::after {{ content: \"  \\2190  target\"; color: #0ca678; font-weight: 700; }}")
    # The frame runs no script (its sandbox has no allow-scripts): drop the page's one script and
    # its autofocus, which the browser would only report as blocked.
    html = re.sub(r"<script>.*?</script>", "", html, flags=re.S).replace(" autofocus>", ">")
    style = "<style>" + "\n".join(rules) + "</style>"
    if "</head>" in html:
        return html.replace("</head>", style + "</head>", 1)
    return style + html


@bp.get("/<run>/<int:position>/page/<int:k>")
def page(run: str, position: int, k: int):
    """The env's HTML of the state after ``k`` actions of the episode (``?mark=1``: with the viewer's marks)."""
    library, loaded, episode = find_episode(run, position)
    n = len(episode.log.steps)
    if not 0 <= k <= n:
        abort(404, f"The episode's pages run from 0 to {n}; there is no page {k}.")
    replayed = library.replayed(loaded, episode, k)
    if replayed.unavailable:
        abort(404, f"The pages of this episode cannot be re-created: {replayed.unavailable}.")
    if not replayed.has(k):
        abort(404, f"The replay stopped before page {k} (the log goes on after the episode ended).")
    html = replayed.pages[k]
    if request.args.get("mark") == "1":
        html = _marked(html, episode, k)
    return current_app.response_class(html, mimetype="text/html")
