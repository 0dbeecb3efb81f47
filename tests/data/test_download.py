"""``webshop-gym data download``: fetched from a local HTTP mirror on 127.0.0.1, never from Google.

The mirror is a real HTTP server in a thread that honours ``Range`` requests and can cut a
response mid-file, answer an HTML quota page, a 404 or the wrong bytes.  The release table is
replaced by one of small synthetic files whose digests the test pins, so every check of the
real command runs (through ``main``) in well under a second.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import SHARED, shared_available
from webshop_gym.cli import main
from webshop_gym.data import download as dl
from webshop_gym.data.catalog import find_shop_files
from webshop_gym.data.records import content_sha256
from webshop_gym.error import ShopNotFound

PRODUCTS = [{"asin": f"B00000000{i}", "name": f"product {i}", "pricing": "$1.00", "query": "things",
             "category": "beauty", "product_category": "Beauty", "small_description": ["x"],
             "full_description": "y", "customization_options": {}, "images": []} for i in range(3)]
ATTRIBUTES = {"B000000000": {"attributes": ["soft"], "instruction": "i want a soft thing",
                             "instruction_attributes": ["soft"]}}
HUMAN = {"B000000001": [{"instruction": "a thing please", "instruction_attributes": ["soft"],
                         "instruction_options": []}]}


def _dump(value) -> bytes:
    return json.dumps(value, indent=1).encode()


@pytest.fixture
def release(tmp_path, monkeypatch):
    """Three small shop files, pinned as the "small" release (product file last, as in the real table)."""
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WEBSHOP_GYM_PROGRESS", "0")
    files = {"items_ins_v2_1000.json": _dump(ATTRIBUTES), "items_human_ins.json": _dump(HUMAN),
             # big enough to be cut mid-file, and sent in several chunks
             "items_shuffle_1000.json": _dump(PRODUCTS * 2000)}
    specs = []
    for name, data in files.items():
        path = tmp_path / "pinned" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        specs.append(dl.PublishedFile(name, "drive-id-" + name, len(data), hashlib.sha256(data).hexdigest(),
                                      content_sha256(path) if name == "items_ins_v2_1000.json" else None))
    monkeypatch.setitem(dl.RELEASES, "small", tuple(specs))
    monkeypatch.chdir(tmp_path)
    return files


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that closed a response early (gdown's probe before a resumed request)


class Mirror:
    """A threaded HTTP server on 127.0.0.1 serving ``files`` by name, with faults to inject."""

    def __init__(self, files: dict[str, bytes]):
        self.files = dict(files)
        self.cut: dict[str, int] = {}  # name -> bytes sent before the connection is cut (once per entry)
        self.html: dict[str, bytes] = {}  # name -> an HTML page answered instead
        self.no_range = False
        self.requests: list[tuple[str, str | None]] = []
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                name = self.path.rsplit("/", 1)[-1]
                wanted = self.headers.get("Range")
                mirror.requests.append((name, wanted))
                if name in mirror.html:
                    return self._answer(200, mirror.html[name], "text/html; charset=utf-8")
                if name not in mirror.files:
                    return self._answer(404, b"not found", "text/plain")
                data = mirror.files[name]
                start = 0
                if wanted and not mirror.no_range:
                    start = int(wanted.removeprefix("bytes=").split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                body = data[start:]
                cut = mirror.cut.pop(name, None)
                if cut is not None:
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(body)

            def _answer(self, status, body, kind):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webshop/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def mirror(release):
    server = Mirror(release)
    yield server
    server.close()


def _run(capsys, *argv) -> tuple[int, str, str]:
    status = main(["data", "download", "small", "--quiet", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("webshop-gym data download: error: ")
    assert "Traceback" not in err
    return lines[0]


def _no_shop_left(tmp_path: Path, name: str = "shop") -> None:
    """Nothing that loads as a shop: no target folder, and the staging folder holds no shop file name."""
    assert not (tmp_path / name).exists()
    assert not list(tmp_path.glob(f"{name}.tmp-*"))
    staging = tmp_path / f".{name}.download"
    if staging.exists():
        assert not list(staging.glob("items_*.json"))
        with pytest.raises(ShopNotFound):
            find_shop_files(staging)


def test_download_from_a_mirror_verifies_and_publishes_the_folder(mirror, release, tmp_path, capsys):
    status, out, err = _run(capsys, "--out", "shop", "--mirror", mirror.url)
    assert status == 0, err
    assert err == ""
    assert out.startswith("downloaded the small release into shop: 3 files, ")
    assert "next: webshop-gym data compile shop" in out
    for name, data in release.items():
        assert (tmp_path / "shop" / name).read_bytes() == data
    assert sorted(p.name for p in (tmp_path / "shop").iterdir()) == sorted(release)
    assert not (tmp_path / ".shop.download").exists() and not (tmp_path / ".shop.download.lock").exists()
    assert find_shop_files(tmp_path / "shop").products.name == "items_shuffle_1000.json"
    assert {name for name, _ in mirror.requests} == set(release)

    # a rerun finds the verified release and fetches nothing
    mirror.requests.clear()
    status, out, err = _run(capsys, "--out", "shop", "--mirror", mirror.url)
    assert status == 0 and out.startswith("shop already holds the verified small release") and not mirror.requests


def test_a_connection_cut_mid_file_is_resumed_within_the_run(mirror, release, tmp_path, capsys):
    size = len(release["items_shuffle_1000.json"])
    mirror.cut["items_shuffle_1000.json"] = size // 3
    status, _, err = _run(capsys, "--out", "shop", "--mirror", mirror.url, "--retries", "1")
    assert status == 0, err
    assert (tmp_path / "shop" / "items_shuffle_1000.json").read_bytes() == release["items_shuffle_1000.json"]
    ranges = [wanted for name, wanted in mirror.requests if name == "items_shuffle_1000.json"]
    assert len(ranges) == 2 and ranges[0] is None
    start = int(ranges[1].removeprefix("bytes=").removesuffix("-"))
    assert 0 < start <= size // 3  # the second request continued from what had arrived (whole chunks)


def test_an_interrupted_download_resumes_on_the_next_run(mirror, release, tmp_path, capsys):
    size = len(release["items_shuffle_1000.json"])
    mirror.cut["items_shuffle_1000.json"] = size // 2
    status, out, err = _run(capsys, "--out", "shop", "--mirror", mirror.url, "--retries", "0")
    assert status == 2 and out == ""
    line = _one_error_line(err)
    assert "broke while fetching items_shuffle_1000.json" in line
    _no_shop_left(tmp_path)
    (part,) = (tmp_path / ".shop.download").glob("items_shuffle_1000.json.fetched*.part")
    kept = part.stat().st_size
    assert 0 < kept <= size // 2
    assert f"the {kept:,} bytes received are kept: rerun the same command to resume" in line

    mirror.requests.clear()
    status, _, err = _run(capsys, "--out", "shop", "--mirror", mirror.url, "--retries", "0")
    assert status == 0, err
    assert (tmp_path / "shop" / "items_shuffle_1000.json").read_bytes() == release["items_shuffle_1000.json"]
    # the two files already fetched were not fetched again; the third resumed at the cut
    # (gdown opens the file once plainly, then asks for the rest)
    assert mirror.requests[-1] == ("items_shuffle_1000.json", f"bytes={kept}-")
    assert {name for name, _ in mirror.requests} == {"items_shuffle_1000.json"}


def test_a_server_that_ignores_range_restarts_the_file(mirror, release, tmp_path, capsys):
    size = len(release["items_shuffle_1000.json"])
    mirror.cut["items_shuffle_1000.json"] = size // 2
    assert _run(capsys, "--out", "shop", "--mirror", mirror.url, "--retries", "0")[0] == 2
    mirror.no_range = True
    status, _, err = _run(capsys, "--out", "shop", "--mirror", mirror.url, "--retries", "0")
    assert status == 0, err
    assert (tmp_path / "shop" / "items_shuffle_1000.json").read_bytes() == release["items_shuffle_1000.json"]


QUOTA_PAGE = (b"<!DOCTYPE html><html><head><title>Google Drive - Quota exceeded</title></head><body>"
              b"<p class=\"uc-error-subcaption\">Too many users have viewed or downloaded this file recently. "
              b"Please try accessing the file again later.</p></body></html>")


def test_a_quota_page_instead_of_the_file_is_one_line(mirror, tmp_path, capsys):
    mirror.html["items_human_ins.json"] = QUOTA_PAGE
    status, out, err = _run(capsys, "--out", "shop", "--mirror", mirror.url)
    assert status == 2 and out == ""
    line = _one_error_line(err)
    assert "items_human_ins.json" in line and "quota" in line and "try again later" in line
    _no_shop_left(tmp_path)
    assert not (tmp_path / ".shop.download" / "items_human_ins.json.fetched").exists()  # fetched afresh next time


def test_another_html_page_is_named(mirror, tmp_path, capsys):
    mirror.html["items_ins_v2_1000.json"] = b"<html><body>Sign in to continue</body></html>"
    status, _, err = _run(capsys, "--out", "shop", "--mirror", mirror.url)
    assert status == 2
    assert "an HTML page came instead of items_ins_v2_1000.json" in _one_error_line(err)
    _no_shop_left(tmp_path)


def test_the_wrong_file_is_refused(mirror, release, tmp_path, capsys):
    wrong = _dump(PRODUCTS[:1])
    mirror.files["items_shuffle_1000.json"] = wrong
    status, _, err = _run(capsys, "--out", "shop", "--mirror", mirror.url)
    assert status == 2
    line = _one_error_line(err)
    expected = hashlib.sha256(release["items_shuffle_1000.json"]).hexdigest()[:16]
    assert "not the published items_shuffle_1000.json" in line
    assert f"SHA-256 {hashlib.sha256(wrong).hexdigest()[:16]}... ({len(wrong):,} bytes), expected {expected}" in line
    _no_shop_left(tmp_path)
    assert not (tmp_path / ".shop.download" / "items_shuffle_1000.json.fetched").exists()


def test_a_reformatted_copy_passes_where_the_content_digest_is_pinned(mirror, tmp_path, capsys):
    # the attribute file's canonical content digest is pinned: a copy written without indentation
    # and with its keys in another order is the same content
    mirror.files["items_ins_v2_1000.json"] = json.dumps(
        {k: dict(reversed(list(v.items()))) for k, v in ATTRIBUTES.items()}).encode()
    status, _, err = _run(capsys, "--out", "shop", "--mirror", mirror.url)
    assert status == 0, err
    # the product file has no pinned content digest: only its published bytes pass
    mirror.files["items_shuffle_1000.json"] = json.dumps(PRODUCTS * 2000).encode()
    status, _, err = _run(capsys, "--out", "other", "--mirror", mirror.url)
    assert status == 2 and "not the published items_shuffle_1000.json" in _one_error_line(err)


def test_no_network_is_one_line(release, tmp_path, capsys):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    status, out, err = _run(capsys, "--out", "shop", "--mirror", f"http://127.0.0.1:{port}/", "--retries", "0")
    assert status == 2 and out == ""
    line = _one_error_line(err)
    assert "cannot reach 127.0.0.1 for items_ins_v2_1000.json (connection refused): no network?" in line
    _no_shop_left(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "pinned"]  # no empty staging folder, no lock file


def test_a_missing_file_on_the_mirror_is_one_line(mirror, tmp_path, capsys):
    del mirror.files["items_human_ins.json"]
    status, _, err = _run(capsys, "--out", "shop", "--mirror", mirror.url)
    assert status == 2
    assert f"{mirror.url}items_human_ins.json answered HTTP 404 for items_human_ins.json" in _one_error_line(err)
    _no_shop_left(tmp_path)


def test_a_folder_in_the_way_is_refused(mirror, tmp_path, capsys):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "notes.txt").write_text("mine")
    status, _, err = _run(capsys, "--out", "shop", "--mirror", mirror.url)
    assert status == 2
    assert "shop already exists and is not the verified small release" in _one_error_line(err)
    assert (tmp_path / "shop" / "notes.txt").read_text() == "mine" and not mirror.requests
    # an empty folder is filled
    (tmp_path / "shop" / "notes.txt").unlink()
    assert _run(capsys, "--out", "shop", "--mirror", mirror.url)[0] == 0


def test_bad_flags_are_one_line(release, capsys):
    for argv in (["--mirror", "ftp://example.org/x"], ["--mirror", "not a url"], ["--retries", "-1"]):
        with pytest.raises(SystemExit) as stop:
            main(["data", "download", "small", *argv])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "error:" in err
    with pytest.raises(SystemExit):
        main(["data", "download", "medium"])
    assert "invalid choice: 'medium'" in capsys.readouterr().err


def test_progress_bar_only_when_asked(mirror, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WEBSHOP_GYM_PROGRESS", "1")
    assert main(["data", "download", "small", "--out", "shop", "--mirror", mirror.url]) == 0
    assert "items_shuffle_1000.json" in capsys.readouterr().err  # the bar, forced on by the variable
    monkeypatch.setenv("WEBSHOP_GYM_PROGRESS", "0")
    assert main(["data", "download", "small", "--out", "two", "--mirror", mirror.url]) == 0
    assert capsys.readouterr().err == ""


def test_google_drive_refusals_are_one_line(tmp_path):
    """gdown's errors for Drive (which the tests cannot reach) map to the same one-line messages."""
    from gdown.exceptions import FileURLRetrievalError

    spec = dl.RELEASES["full"][-1]
    url = dl.DRIVE_URL.format(id=spec.drive_id)
    quota = FileURLRetrievalError("Failed to retrieve file url:\n\n\tToo many users have viewed or downloaded "
                                  "this file recently. Please try accessing the file again later.")
    message = str(dl._failure(quota, spec, url, tmp_path / "x.fetched"))
    assert message.startswith("Google Drive refused items_shuffle.json: its download quota") and "\n" not in message
    other = FileURLRetrievalError("Cannot retrieve the public link of the file.")
    assert "Google Drive gave no file for items_shuffle.json (id 1A2whVgOO0euk5O13n2iYDM0bQRkkRduB)" in str(
        dl._failure(other, spec, url, tmp_path / "x.fetched"))


def test_the_release_table_matches_the_reference_setup_script():
    small = {f.name: f.drive_id for f in dl.RELEASES["small"]}
    full = {f.name: f.drive_id for f in dl.RELEASES["full"]}
    assert small == {"items_shuffle_1000.json": "1EgHdxQ_YxqIQlvvq5iKlCrkEKR6-j0Ib",
                     "items_ins_v2_1000.json": "1IduG0xl544V_A_jv3tHXC0kyFi7PnyBu",
                     "items_human_ins.json": "14Kb5SPBk_jfdLZ_CDBNitW98QLDlKR5O"}
    assert full == {"items_shuffle.json": "1A2whVgOO0euk5O13n2iYDM0bQRkkRduB",
                    "items_ins_v2.json": "1s2j6NgHljiZzQNL3veZaAiyW_qDEgBNi",
                    "items_human_ins.json": "14Kb5SPBk_jfdLZ_CDBNitW98QLDlKR5O"}
    for files in dl.RELEASES.values():
        assert files[-1].name.startswith("items_shuffle")  # the product file is published last


@pytest.mark.shared
@pytest.mark.skipif(not shared_available(), reason="../shared/webshop-small is not present")
def test_the_pinned_attribute_file_is_the_shared_copy(tmp_path, monkeypatch):
    """The one published file we hold byte for byte: its pinned size, SHA-256 and content digest."""
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path))
    spec = dl.RELEASES["small"][0]
    path = SHARED / spec.name
    assert path.stat().st_size == spec.size
    assert dl.file_problem(path, spec) is None
    assert content_sha256(path) == spec.content
    # the shared product and human files are not the published bytes (rebuilt, and a subset): refused
    for spec in dl.RELEASES["small"][1:]:
        assert "not the published" in dl.file_problem(SHARED / spec.name, spec)
