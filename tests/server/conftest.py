"""Fixtures of the play-server tests: an app per test (flaskr pattern) and a scripted player."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from bs4 import BeautifulSoup
from webshop_gym.server import create_app


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_app(default_shop, tmp_path, clock):
    """Build apps with TESTING on, the embedded shop, logs in tmp_path; closed after the test."""
    apps = []

    def make(**config):
        base = {"TESTING": True, "SHOP": default_shop, "LOG_DIR": str(tmp_path / "logs"), "SEED": 0,
                "MAX_SESSIONS": 64, "CLOCK": clock}
        base.update(config)
        app = create_app(base)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.extensions["webshop_gym"].close()


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def store(app):
    return app.extensions["webshop_gym"]


class Player:
    """Plays a session through the test client the way a browser does.

    ``act(action)`` finds the control on the current page that sends ``action`` (a button, a
    product link, an option's radio input, or the search form) and uses it; an action with no
    control (an invalid one) is posted as is, as a stale page or a hand-made request would.
    """

    def __init__(self, client, url: str):
        self.client = client
        self.url = url
        self.sid = url.rsplit("/", 1)[-1]
        self.used_control: bool | None = None

    @classmethod
    def start(cls, client, goal: int) -> Player:
        response = client.get(f"/goal/{goal}")
        assert response.status_code == 303, response.status_code
        return cls(client, urlsplit(response.headers["Location"]).path)

    def html(self) -> str:
        response = self.client.get(self.url)
        assert response.status_code == 200, response.status_code
        return response.get_data(as_text=True)

    def soup(self) -> BeautifulSoup:
        return BeautifulSoup(self.html(), "html.parser")

    def controls(self, soup: BeautifulSoup | None = None) -> dict[str, tuple]:
        """Action string -> how the page sends it: ('post', url, data) or ('get', url)."""
        soup = soup or self.soup()
        found: dict[str, tuple] = {}
        act_form = soup.find("form", id="act")
        for button in soup.select("form button[name=action]"):
            form = button.find_parent("form")
            if button["value"] != "search":
                found[button["value"]] = ("post", form["action"], {"action": button["value"]})
        for link in soup.select("a.product-link"):
            found[link["data-action"]] = ("get", link["href"])
        for radio in soup.select("input[type=radio][data-action]"):
            found[radio["data-action"]] = ("post", act_form["action"], {"action": radio["data-action"]})
        return found

    def act(self, action: str):
        soup = self.soup()
        if action.startswith("search[") and action.endswith("]"):
            form = soup.select_one("form.search")
            if form is not None:
                self.used_control = True
                return self._check(self.client.post(form["action"], data={"action": "search", "query": action[7:-1]}))
        control = self.controls(soup).get(action)
        self.used_control = control is not None
        if control is None:
            return self._check(self.client.post(self.url, data={"action": action}))
        if control[0] == "get":
            return self._check(self.client.get(control[1]))
        return self._check(self.client.post(control[1], data=control[2]))

    def _check(self, response):
        assert response.status_code == 303, (response.status_code, response.get_data(as_text=True)[:500])
        assert urlsplit(response.headers["Location"]).path == self.url
        return response

    def state(self) -> dict:
        response = self.client.get(self.url + "/state.json")
        assert response.status_code == 200
        return response.get_json()


@pytest.fixture
def serve(make_app):
    """Serve an app built by ``make_app(**config)`` on 127.0.0.1 (a free port) in a thread; returns its base URL."""
    import threading

    from werkzeug.serving import make_server

    servers = []

    def start(**config) -> str:
        server = make_server("127.0.0.1", 0, make_app(**config), threaded=True)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["uvicorn", "werkzeug"])
def live(request, make_app):
    """Serve an app on 127.0.0.1 (a free port) in a thread; yields (app, base URL).

    ``uvicorn``: as ``webshop-gym serve`` serves it (the ASGI front: AgentGym requests answered on
    the event loop, steps batched; the rest through Flask); ``werkzeug``: the Flask app alone
    (``serve --dev``), each step alone.
    """
    import threading

    stops = []

    def start(**config):
        app = make_app(**config)
        if request.param == "werkzeug":
            from werkzeug.serving import make_server

            server = make_server("127.0.0.1", 0, app, threaded=True)
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            thread.start()
            stops.append(lambda: (server.shutdown(), server.server_close()))
            return app, f"http://127.0.0.1:{server.server_port}"
        from webshop_gym.server.asgi import Front, Listener

        listener = Listener(Front(app, threads=4), "127.0.0.1", 0)
        thread = threading.Thread(target=listener.serve, daemon=True)
        thread.start()

        def stop():
            listener.server.should_exit = True
            thread.join(30)
            listener.close()

        stops.append(stop)
        return app, f"http://127.0.0.1:{listener.port}"

    yield start
    for stop in stops:
        stop()
