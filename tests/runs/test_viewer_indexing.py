"""A run indexed on the background thread: its pages answer "being indexed" until the index is whole, then the run."""

from __future__ import annotations

import shutil
import threading

from webshop_gym.server.run_library import RunLibrary


def test_every_page_of_a_run_waits_for_its_background_index(scripted_runs, make_viewer, tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(scripted_runs / "scripted.jsonl", folder / "scripted.jsonl")
    release = threading.Event()
    build = RunLibrary._build

    def held(self, entry, key, incremental, background=False):
        if background:
            assert release.wait(30), "the test never released the indexer"
        build(self, entry, key, incremental, background)

    monkeypatch.setattr(RunLibrary, "_build", held)
    client = make_viewer(folder, RUNS_INDEX_INLINE_BYTES=1)  # every file is indexed in the background

    # Pages that show the run: the indexing page, which reloads itself.
    for url in ("/runs/scripted", "/runs/scripted/0", "/runs/scripted/goal/0", "/runs/scripted/episodes.csv"):
        response = client.get(url)
        assert response.status_code == 202, url
        assert response.headers["Retry-After"] == "2", url
        assert "Indexing this run once" in response.get_data(as_text=True), url
    # What a page fetches (a replayed page, an answer): 503 with the reason.
    response = client.get("/runs/scripted/0/page/0")
    assert response.status_code == 503
    assert "is being indexed" in response.get_data(as_text=True)

    release.set()
    library = client.application.extensions["webshop_gym_runs"]
    library.state(folder / "scripted.jsonl", wait=True)
    for url in ("/runs/scripted", "/runs/scripted/0", "/runs/scripted/goal/0", "/runs/scripted/episodes.csv",
                "/runs/scripted/0/page/0"):
        assert client.get(url).status_code == 200, url
