"""Download the reference's published shop files: ``webshop-gym data download small|full``.

The reference (princeton-nlp/WebShop) publishes its data only as Google-Drive files, which its
``setup.sh`` fetches with ``gdown``; so do we (:data:`RELEASES` holds the file ids of that
script).  ``mirror=URL`` fetches the same file names from a plain HTTP(S) folder instead (an
offline site's copy).

What a download guarantees:

* **Resumable.**  Files are fetched into a staging folder beside the target,
  ``.<name>.download/``, whose name is the same on every run: an interrupted transfer (a lost
  connection, Ctrl-C) keeps its bytes there (gdown's ``*.part`` files), and rerunning the same
  command continues them with HTTP ``Range`` requests.  Within one run a cut connection is
  retried and resumed ``retries`` times.
* **Verified.**  Every file must have the published file's SHA-256 (:attr:`PublishedFile.sha256`),
  or, where the canonical content digest of the published file is known
  (:attr:`PublishedFile.content`, :func:`webshop_gym.data.records.content_sha256`), that
  content: a mirror that re-wrote the JSON (indentation, key order) is accepted, a different
  file is not.  A file that fails is deleted, so the next run fetches it afresh.
* **Never half-written.**  Staged files are named ``<file>.fetched`` (no shop file name
  matches them); only when every file is verified are they moved into a temporary sibling
  ``<name>.tmp-<random>`` (the product file last) and that folder is renamed to the target.
  So the target either does not exist or is the whole verified release.
* **One line per failure** (:class:`~webshop_gym.error.DownloadFailed`): no network, a refusal
  (Google Drive's quota page, an HTTP error, an HTML page instead of JSON), the wrong file.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import re
import shutil
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from webshop_gym.data.records import content_sha256
from webshop_gym.error import DataError, DownloadFailed
from webshop_gym.utils import progress as _progress
from webshop_gym.utils.paths import TMP_INFIX, umask

__all__ = ["DRIVE_URL", "RELEASES", "DownloadReport", "PublishedFile", "download_release", "file_problem"]

DRIVE_URL = "https://drive.google.com/uc?id={id}"
"""Where a Google-Drive file id is fetched (the URL form of the reference's ``setup.sh``)."""


@dataclass(frozen=True)
class PublishedFile:
    """One file of the reference's release.

    Attributes:
        name: its file name (the name the reference's code reads).
        drive_id: its Google-Drive id, from the reference's ``setup.sh``.
        size: the published file's size in bytes.
        sha256: the SHA-256 of the published file's bytes.
        content: the canonical content digest of the published file
            (:func:`~webshop_gym.data.records.content_sha256`), where it was computed from a copy
            with those very bytes; ``None`` where it could not be.
    """

    name: str
    drive_id: str
    size: int
    sha256: str
    content: str | None = None


_HUMAN = PublishedFile("items_human_ins.json", "14Kb5SPBk_jfdLZ_CDBNitW98QLDlKR5O", 5_137_548,
                       "cf78667548a71786e1d9049c24b802e48e1084ad4bb021cae56ce1f6d96954a3")

RELEASES: dict[str, tuple[PublishedFile, ...]] = {
    # Sizes and byte digests of the published files (docs/data.md says where they come from and
    # which were checked here); the product file goes last, so it is the last one published.
    "small": (
        PublishedFile("items_ins_v2_1000.json", "1IduG0xl544V_A_jv3tHXC0kyFi7PnyBu", 147_099,
                      "f88a36314a397b53b3d9c3fa5878e5f7b26d35019a51ec83fbedeca61a948f6f",
                      "8447a900e7c5e9966f84b39d7d02d81ca7dbe47075754e9e782813fc61138bb9"),
        _HUMAN,
        PublishedFile("items_shuffle_1000.json", "1EgHdxQ_YxqIQlvvq5iKlCrkEKR6-j0Ib", 4_467_013,
                      "30a4765c3a327af72d9a9a95a6b2486d516f0fa1d3ecd83681901ce82a21b269"),
    ),
    "full": (
        PublishedFile("items_ins_v2.json", "1s2j6NgHljiZzQNL3veZaAiyW_qDEgBNi", 186_295_270,
                      "1d36af476bdb8f82a5da62bd8acdabe54cd8de2fa84010d37da5c4890feb447e"),
        _HUMAN,
        PublishedFile("items_shuffle.json", "1A2whVgOO0euk5O13n2iYDM0bQRkkRduB", 5_479_720_229,
                      "2ef591d65df3af89e972ab72468eb82cbf124d876552d9f3678667edd620a6c8"),
    ),
}
"""The reference's two releases (``setup.sh -d small`` and ``-d all``), product file last."""

STAGED_SUFFIX = ".fetched"
"""A staged file is ``<file name>.fetched``: no shop reader takes it for a shop file."""
_HEAD_BYTES = 65_536
_QUOTA = re.compile(rb"quota|too many users|download limit", re.IGNORECASE)


@dataclass(frozen=True)
class DownloadReport:
    """What :func:`download_release` did.

    Attributes:
        folder: the shop folder.
        release: ``"small"`` or ``"full"``.
        files: the release's file names.
        bytes: their total size.
        source: ``"Google Drive"`` or the mirror's URL.
        already: the folder already held the verified release (nothing was fetched).
    """

    folder: Path
    release: str
    files: tuple[str, ...]
    bytes: int
    source: str
    already: bool = False


def staging_dir(out: Path) -> Path:
    """The folder where the files for ``out`` are fetched (the same on every run, so it resumes)."""
    return out.parent / f".{out.name}.download"


def download_release(release: str, out: str | os.PathLike, mirror: str | None = None, *, progress: bool = True,
                     retries: int = 3, timeout: float = 60.0) -> DownloadReport:
    """Fetch, verify and publish one release of the reference's shop files into the folder ``out``.

    Args:
        release: ``"small"`` (1,000 products) or ``"full"`` (the whole scraped catalog).
        out: the shop folder to create; it must not exist, be empty, or already hold this release.
        mirror: a base URL (``http(s)://host/path/``) serving the files by name, instead of Google Drive.
        progress: draw a progress bar per file (on a terminal only, :mod:`webshop_gym.utils.progress`).
        retries: how many times one run reconnects (and resumes) after a lost connection.
        timeout: seconds to wait for the server between bytes.

    Raises:
        DownloadFailed: no network, a refusal, the wrong file, a folder in the way, or another
            download into the same folder running now (one line each).
    """
    from filelock import FileLock, Timeout

    files = RELEASES[release]
    out = Path(out)
    source = "Google Drive" if mirror is None else mirror
    total = sum(f.size for f in files)
    report = DownloadReport(out, release, tuple(f.name for f in files), total, source)
    if _holds_release(out, files):
        return DownloadReport(out, release, report.files, total, source, already=True)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DownloadFailed(f"{out} already exists and is not the verified {release} release: "
                             "remove it or choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_dir(out)
    lock = FileLock(str(staging) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise DownloadFailed(f"another download into {out} is running now (its lock: {lock.lock_file})") from None
    try:
        for old in out.parent.glob(glob.escape(out.name) + TMP_INFIX + "*"):  # a publish that was killed
            shutil.rmtree(old, ignore_errors=True)
        staging.mkdir(exist_ok=True)
        for spec in files:
            _fetch(spec, staging, mirror, progress=progress, retries=retries, timeout=timeout)
        _publish(files, staging, out)
    finally:
        with contextlib.suppress(OSError):
            staging.rmdir()  # only when nothing was received (a resume keeps what was)
        lock.release()
        with contextlib.suppress(OSError):
            os.unlink(lock.lock_file)
    return report


def _holds_release(out: Path, files) -> bool:
    """Whether ``out`` holds exactly the release's files, each verified (a rerun after success is a no-op)."""
    if not out.is_dir():
        return False
    names = {f.name for f in files}
    present = {p.name for p in out.iterdir()}
    return names <= present and all(file_problem(out / f.name, f) is None for f in files)


def _url(spec: PublishedFile, mirror: str | None) -> str:
    if mirror is None:
        return DRIVE_URL.format(id=spec.drive_id)
    return mirror.rstrip("/") + "/" + urllib.parse.quote(spec.name)


def _fetch(spec: PublishedFile, staging: Path, mirror: str | None, *, progress: bool, retries: int,
           timeout: float) -> None:
    """Fetch one file into ``staging/<name>.fetched`` (resuming its ``.part``) and verify it."""
    target = staging / (spec.name + STAGED_SUFFIX)
    if target.is_file():
        if file_problem(target, spec) is None:
            return
        target.unlink()
    url = _url(spec, mirror)
    try:
        _transfer(url, target, spec, progress=progress, retries=retries, timeout=timeout, drive=mirror is None)
    except DownloadFailed:
        raise
    except Exception as exc:
        if _range_refused(exc):  # the server cannot resume: start this file again, from its first byte
            for part in _partials(target):
                part.unlink()
            try:
                _transfer(url, target, spec, progress=progress, retries=retries, timeout=timeout,
                          drive=mirror is None)
            except Exception as again:
                raise _failure(again, spec, url, target) from None
        else:
            raise _failure(exc, spec, url, target) from None
    problem = file_problem(target, spec)
    if problem is not None:
        target.unlink()
        raise DownloadFailed(f"{url}: {problem}")


def _transfer(url: str, target: Path, spec: PublishedFile, *, progress: bool, retries: int, timeout: float,
              drive: bool) -> None:
    import gdown
    from tqdm import tqdm

    bar = tqdm(total=spec.size, desc=spec.name, unit="B", unit_scale=True, unit_divisor=1024,
               disable=True if not progress else _progress.disable(), leave=False)

    def advance(done: int, _total) -> None:
        bar.update(done - bar.n)

    try:
        gdown.download(url, output=str(target), quiet=True, resume=True, progress=advance, retries=retries,
                       timeout=(min(timeout, 30.0), timeout), use_cookies=drive)
    finally:
        bar.close()


def _partials(target: Path) -> list[Path]:
    """The partial files that gdown keeps for ``target`` (``<target name><8 characters>.part``)."""
    return [p for p in target.parent.iterdir()
            if p.name.startswith(target.name) and p.name.endswith(".part")
            and len(p.name) == len(target.name) + 8 + len(".part")]


def _causes(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _range_refused(exc: BaseException) -> bool:
    return any("did not honor the requested byte range" in str(e) for e in _causes(exc))


def _failure(exc: BaseException, spec: PublishedFile, url: str, target: Path) -> DownloadFailed:
    """The one-line error for a transfer that failed."""
    import requests

    host = urllib.parse.urlsplit(url).hostname or url
    kept = sum(p.stat().st_size for p in _partials(target)) if target.parent.is_dir() else 0
    resume = (f"the {kept:,} bytes received are kept: rerun the same command to resume" if kept
              else "rerun the same command")
    for cause in _causes(exc):
        if isinstance(cause, requests.HTTPError) and cause.response is not None:
            status = cause.response.status_code
            if status in (403, 429):
                return DownloadFailed(f"{host} refused {spec.name} (HTTP {status}: a quota or rate limit): "
                                      f"try again later, or use --mirror URL")
            return DownloadFailed(f"{url} answered HTTP {status} for {spec.name}"
                                  + (": check --mirror" if not host.endswith("google.com") else ""))
        if type(cause).__name__ == "FileURLRetrievalError":
            text = " ".join(str(cause).split())
            if _QUOTA.search(text.encode("utf-8", "replace")):
                return DownloadFailed(f"Google Drive refused {spec.name}: its download quota for the file is "
                                      "used up for now ('too many users have viewed or downloaded this file "
                                      "recently'); try again in a few hours, or use --mirror URL")
            return DownloadFailed(f"Google Drive gave no file for {spec.name} (id {spec.drive_id}): "
                                  f"{text[:200]}")
        if isinstance(cause, (requests.ConnectionError, requests.Timeout)) and not isinstance(
                cause, requests.exceptions.ChunkedEncodingError):
            reason = _reason(cause)
            if kept or "incomplete" in str(exc).lower():
                return DownloadFailed(f"the connection to {host} broke while fetching {spec.name} ({reason}); "
                                      f"{resume}")
            return DownloadFailed(f"cannot reach {host} for {spec.name} ({reason}): no network? "
                                  f"Rerun when online, or use --mirror URL")
    if "incomplete" in str(exc).lower() or isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return DownloadFailed(f"the connection to {host} broke while fetching {spec.name}; {resume}")
    if isinstance(exc, OSError):
        return DownloadFailed(f"cannot write {spec.name} into {target.parent}: {exc.strerror or exc}")
    return DownloadFailed(f"fetching {spec.name} from {host} failed: {' '.join(str(exc).split())[:200]}")


def _reason(exc: BaseException) -> str:
    text = str(exc)
    for needle in ("Connection refused", "Name or service not known", "Temporary failure in name resolution",
                   "Network is unreachable", "No route to host", "timed out", "Connection reset"):
        if needle.lower() in text.lower():
            return needle.lower()
    return type(exc).__name__


def file_problem(path: Path, spec: PublishedFile) -> str | None:
    """Why ``path`` is not the published file ``spec`` (``None`` when it is).

    The bytes' SHA-256 must be the published one; where the published file's canonical content
    digest is known, a copy with that content but other formatting passes too.  An HTML page
    (a quota, login or error page saved in its place) is named as such.
    """
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"<":
        if _QUOTA.search(head):
            return (f"an HTML page about a quota came instead of {spec.name} (the host refuses the download "
                    "for now): try again later, or use another --mirror")
        return f"an HTML page came instead of {spec.name} (an error or login page?): check the URL"
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    sha = digest.hexdigest()
    if sha == spec.sha256:
        return None
    if spec.content is not None:
        try:
            if content_sha256(path, sha) == spec.content:
                return None
        except DataError:
            pass
    size = path.stat().st_size
    return (f"not the published {spec.name}: SHA-256 {sha[:16]}... ({size:,} bytes), expected "
            f"{spec.sha256[:16]}... ({spec.size:,} bytes)")


def _publish(files, staging: Path, out: Path) -> None:
    """Move the verified staged files into a temporary sibling (the product file last), then rename it to ``out``."""
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=out.name + TMP_INFIX))
    try:
        for spec in files:
            os.replace(staging / (spec.name + STAGED_SUFFIX), tmp / spec.name)
            os.chmod(tmp / spec.name, 0o666 & ~umask())  # gdown's partial files are private
        os.chmod(tmp, 0o777 & ~umask())
        if out.is_dir():
            out.rmdir()  # empty (checked first); a folder that filled meanwhile stops the rename below
        os.rename(tmp, out)
    except BaseException:
        for spec in files:  # back to staging, so nothing verified is fetched again
            with contextlib.suppress(OSError):
                os.replace(tmp / spec.name, staging / (spec.name + STAGED_SUFFIX))
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(staging, ignore_errors=True)
