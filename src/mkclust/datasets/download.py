"""Checksummed raw files: a local mirror first, then the publisher's URL.

A raw file is a :class:`RawFile`: its path relative to the raw-data folder (``data/raw``) and to the
mirror (the same layout as ``../shared/datasets``), its sha256, and where it is published:

- ``kind="file"``: the URL serves exactly these bytes;
- ``kind="gzip-member"``: the URL serves the gzip of this file (the digest is of the decompressed
  bytes, as the MNIST files are listed);
- ``kind="archive-member"``: the file sits inside a zip or tar archive at the URL, as ``member``;
  ``strip_header=True`` drops the archive copy's KEEL ``@`` header lines, which the listed copy lacks
  (the digest is of the file as listed).

:func:`fetch` looks in the mirror (``data_mirror`` in the config, else the ``MKCLUST_DATA_MIRROR``
environment variable) and uses a verified mirror file in place, read-only. Otherwise it downloads
into ``data/raw/<path>``: to a temporary file beside the target, renamed only once its sha256
matches, with bounded retries on network and server errors. A digest mismatch is a
:class:`ChecksumError` naming the file and both digests, and leaves nothing behind.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import logging
import os
import shutil
import socket
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("mkclust.datasets")

MIRROR_ENV = "MKCLUST_DATA_MIRROR"
KINDS = ("file", "gzip-member", "archive-member")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class RawFile:
    """One raw file of a data set, as published (see the module docstring for ``kind``)."""

    path: str
    sha256: str
    url: str
    kind: str = "file"
    member: str | None = None
    strip_header: bool = False
    size: int | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.path}: unknown raw-file kind {self.kind!r}; one of {KINDS}")
        if (self.kind == "archive-member") != (self.member is not None):
            raise ValueError(f"{self.path}: 'member' is required for, and only for, archive-member files")
        if len(self.sha256) != 64:
            raise ValueError(f"{self.path}: sha256 must be 64 hex digits")

    def describe(self) -> dict:
        d = {"path": self.path, "sha256": self.sha256, "url": self.url, "kind": self.kind}
        if self.member:
            d["member"] = self.member
        return d


class DownloadError(RuntimeError):
    """A raw file could not be obtained."""


class ChecksumError(DownloadError):
    """A raw file's sha256 differs from the registered one."""


class NotLocal(DownloadError):
    """A raw file is neither in the mirror nor in the raw-data folder, and downloading is off."""


class Unreachable(DownloadError):
    """The host of a raw file's URL cannot be reached (no network, a name that does not resolve, a
    refused connection): not retried, and no later download in this process tries that host again."""


#: hosts found unreachable in this process (their later files fail at once)
_UNREACHABLE: dict[str, str] = {}


def data_mirror(mirror: str | os.PathLike | None = None) -> Path | None:
    """The mirror folder: ``mirror`` if given, else ``$MKCLUST_DATA_MIRROR``, else None."""
    value = mirror if mirror not in (None, "") else os.environ.get(MIRROR_ENV) or None
    return None if value is None else Path(value).expanduser()


def local_copy(raw: RawFile, raw_dir: str | os.PathLike = "data/raw",
               mirror: str | os.PathLike | None = None) -> Path | None:
    """Where a copy of ``raw`` lies, the mirror first, then ``raw_dir`` (not verified: :func:`fetch`
    checks its sha256 when it uses it); None when there is none."""
    for folder in (data_mirror(mirror), Path(raw_dir)):
        if folder is not None and (folder / raw.path).is_file():
            return folder / raw.path
    return None


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _check(raw: RawFile, path: Path, what: str) -> None:
    actual = sha256_file(path)
    if actual != raw.sha256:
        raise ChecksumError(f"{raw.path} ({what}): sha256 mismatch: expected {raw.sha256}, got {actual}")


def fetch(raw: RawFile, raw_dir: str | os.PathLike = "data/raw", mirror: str | os.PathLike | None = None,
          *, download: bool = True, retries: int = 3, timeout: float = 60.0,
          backoff: float = 2.0) -> tuple[Path, str]:
    """Return ``(local path, how)`` of a verified copy of ``raw``; ``how`` is mirror | cache | download.

    The mirror is searched first (a mismatching mirror file is an error: the mirror is meant to
    hold the published bytes). A cached file in ``raw_dir`` that fails its checksum is downloaded
    again. ``retries`` bounds the attempts per download; server errors (5xx, 429), timeouts and
    connection failures are retried after ``backoff * 2**k`` seconds, other HTTP errors are not.
    ``download=False`` raises :class:`NotLocal` instead of downloading.
    """
    mdir = data_mirror(mirror)
    if mdir is not None and not mdir.is_dir():
        raise DownloadError(f"the data mirror {mdir} is not a folder (data_mirror in the config or ${MIRROR_ENV})")
    if mdir is not None:
        cand = mdir / raw.path
        if cand.is_file():
            _check(raw, cand, f"mirror file {cand}")
            return cand, "mirror"
    target = Path(raw_dir) / raw.path
    if target.is_file():
        if sha256_file(target) == raw.sha256:
            return target, "cache"
        log.warning("%s: cached copy fails its checksum; downloading it again", target)
    if not download:
        raise NotLocal(f"{raw.path}: not in the mirror ({mdir}) nor in {Path(raw_dir)}, and downloading is off")
    if not raw.url:
        raise DownloadError(f"{raw.path}: no download URL is known; put the file in a data mirror "
                            f"(data_mirror in the config or ${MIRROR_ENV})")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}.", dir=target.parent) as tmpdir:
        got = Path(tmpdir) / "download"
        _download(raw, got, retries=retries, timeout=timeout, backoff=backoff)
        out = _unpack(raw, got, Path(tmpdir) / "file")
        _check(raw, out, f"downloaded from {raw.url}")
        os.replace(out, target)
    log.info("%s: downloaded and verified (sha256 %s)", target, raw.sha256[:12])
    return target, "download"


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500 or exc.code == 429
    return isinstance(exc, (urllib.error.URLError, TimeoutError, ConnectionError, OSError))


def _unreachable(exc: Exception) -> bool:
    """A failure to reach the host at all (resolving its name, connecting), as opposed to a server
    error or a transfer cut short: retrying seconds later does not help."""
    if isinstance(exc, urllib.error.HTTPError):
        return False
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, (socket.gaierror, ConnectionRefusedError)) or (
        isinstance(reason, OSError) and reason.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH))


def _offline_hint(raw: RawFile) -> str:
    return (f"without network, put the file at <mirror>/{raw.path} and set data_mirror (or ${MIRROR_ENV}), "
            "or list what is missing with --no-download")


def _download(raw: RawFile, dest: Path, *, retries: int, timeout: float, backoff: float) -> None:
    host = urllib.parse.urlsplit(raw.url).hostname or raw.url
    if host in _UNREACHABLE:
        raise Unreachable(f"{raw.path}: {host} was unreachable earlier ({_UNREACHABLE[host]}); {_offline_hint(raw)}")
    attempts = max(1, int(retries))
    for k in range(attempts):
        try:
            req = urllib.request.Request(raw.url, headers={"User-Agent": "mkclust"})
            with urllib.request.urlopen(req, timeout=timeout) as resp, open(dest, "wb") as fh:
                total = resp.headers.get("Content-Length")
                log.info("downloading %s (%s bytes) for %s", raw.url, total or "?", raw.path)
                shutil.copyfileobj(resp, fh, _CHUNK)
            return
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised as DownloadError
            last = exc
            if _unreachable(exc):
                _UNREACHABLE[host] = str(getattr(exc, "reason", exc))
                raise Unreachable(f"{raw.path}: {host} is unreachable ({_UNREACHABLE[host]}); "
                                  f"{_offline_hint(raw)}") from None
            if not _retryable(exc) or k == attempts - 1:
                break
            wait = backoff * 2**k
            log.warning("%s: attempt %d of %d failed (%s); retrying in %.1f s", raw.url, k + 1, attempts, exc, wait)
            time.sleep(wait)
    raise DownloadError(f"{raw.path}: download from {raw.url} failed after {k + 1} attempt(s): {last}. "
                        f"Without network, put the file at <mirror>/{raw.path} and set data_mirror "
                        f"(or ${MIRROR_ENV})") from None


def _unpack(raw: RawFile, got: Path, out: Path) -> Path:
    """Turn the downloaded object into the listed file (identity for kind ``file``)."""
    if raw.kind == "file":
        return got
    if raw.kind == "gzip-member":
        with gzip.open(got, "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)
        return out
    data = _archive_member(got, raw.member)
    if raw.strip_header:
        data = b"".join(line for line in io.BytesIO(data) if not line.lstrip().startswith(b"@"))
    out.write_bytes(data)
    return out


def _archive_member(archive: Path, member: str) -> bytes:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
            name = _find_member(names, member, archive)
            return zf.read(name)
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            name = _find_member(tf.getnames(), member, archive)
            fh = tf.extractfile(name)
            if fh is None:
                raise DownloadError(f"{archive}: member {name} is not a regular file")
            return fh.read()
    raise DownloadError(f"{archive}: not a zip or tar archive, cannot extract {member}")


def _find_member(names: list[str], member: str, archive: Path) -> str:
    if member in names:
        return member
    tail = [n for n in names if n.rsplit("/", 1)[-1] == member]
    if len(tail) == 1:
        return tail[0]
    raise DownloadError(f"archive {archive.name} has no unique member {member!r} (members: {', '.join(names[:20])})")
