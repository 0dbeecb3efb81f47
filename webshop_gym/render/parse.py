"""The observation rule applied to HTML, as the reference does it with BeautifulSoup.

The environment never calls this (text observations come from the state); it exists so that
tests, and users who hold only HTML, can check that a page and its text observation agree.
"""

from __future__ import annotations

from collections.abc import Container

__all__ = ["available_actions", "html_to_text", "html_to_text_rich", "visible_strings"]

_INVISIBLE = {"style", "script", "head", "title", "meta", "[document]"}


def visible_strings(html: str) -> list:
    """The page's visible strings (BeautifulSoup ``html.parser``; comments and head excluded)."""
    from bs4 import BeautifulSoup
    from bs4.element import Comment

    soup = BeautifulSoup(html, "html.parser")
    return [t for t in soup.find_all(string=True) if t.parent.name not in _INVISIBLE and not isinstance(t, Comment)]


def html_to_text(html: str) -> str:
    """SPEC section 5's ``text`` rule: visible strings, stripped, joined with ``" [SEP] "``."""
    return " [SEP] ".join(t.strip() for t in visible_strings(html) if t != "\n")


def html_to_text_rich(html: str, url: str, visited_asins: Container[str] = ()) -> str:
    """SPEC section 5's ``text_rich`` rule, given the page's URL and the visited asins."""
    observation = ""
    for t in visible_strings(html):
        if t == "\n":
            continue
        if t.parent.name == "button":
            processed = f"[button] {t} [button_]"
        elif t.parent.name == "label":
            if f'"{t}"' in url:
                processed = f"  [clicked button] {t} [clicked button_]"
                observation = f"You have clicked {t}.\n" + observation
            else:
                processed = f"  [button] {t} [button_]"
        elif t.parent.get("class") == ["product-link"]:
            mark = "clicked button" if str(t) in visited_asins else "button"
            processed = f"\n[{mark}] {t} [{mark}_]"
        else:
            processed = str(t)
        observation += processed + "\n"
    return observation


def available_actions(html: str) -> dict:
    """The reference's available actions read off a page: search bar, buttons, links, options."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    labels = {}
    for element in soup.find_all("button") + soup.find_all(class_="product-link"):
        labels.setdefault(element.get_text().lower(), None)
    for radio in soup.select('input[type="radio"]'):
        labels.setdefault(str(radio.get("value")), None)
    return {"has_search_bar": soup.find(id="search_input") is not None, "clickables": list(labels)}
