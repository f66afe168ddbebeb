"""Atomic file output: an interrupted write never leaves a file that looks finished; and reading
back what was written, with a corrupt file named (:func:`read_npz`, :class:`CorruptFile`)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import IO, Iterator


def _read_umask() -> int:
    mask = os.umask(0o022)  # os.umask can only be read by setting it: done once, at import
    os.umask(mask)
    return mask


_UMASK = _read_umask()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds.

    The temporary file lives in the destination folder (same file system), so the final
    ``os.replace`` is atomic. On any exception the temporary file is removed and ``path`` is
    left untouched. The file gets the mode a plain ``open`` would give it (0666 less the umask),
    so results stay readable by collaborators on a shared cluster.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_UMASK)   # mkstemp makes 0600; a result gets the usual mode
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open a temporary file for writing and rename it onto ``path`` when closed successfully."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())


def write_json(path: str | os.PathLike, obj, **kwargs) -> None:
    """Write ``obj`` as JSON atomically."""
    kwargs.setdefault("indent", 1)
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, **kwargs)
        fh.write("\n")


def atomic_savez(path: str | os.PathLike, **arrays) -> None:
    """``np.savez`` to ``path`` exactly (no ``.npz`` appended), atomically."""
    import numpy as np

    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


class CorruptFile(ValueError):
    """A file that exists but cannot be read as what it should be (truncated, overwritten, a full
    disk): the message names it and says how to get it back."""


def corrupt(path, what: str, exc: BaseException) -> CorruptFile:
    """The :class:`CorruptFile` error for ``path``, a ``what`` that failed to read with ``exc``."""
    return CorruptFile(f"{path} is not a readable {what} ({type(exc).__name__}: {exc}): it is truncated or "
                       f"corrupt. Delete it and rerun the same command, which rebuilds it: rm -f '{path}'")


def read_json(path: str | os.PathLike, what: str):
    """A JSON file written by the workflow; one that is not JSON is a :class:`CorruptFile` naming it."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise corrupt(path, what, exc) from None


@contextlib.contextmanager
def read_npz(path: str | os.PathLike, what: str) -> Iterator:
    """``np.load`` of an ``.npz`` file whose reading errors (not a zip file, a missing array, a
    damaged member) become a :class:`CorruptFile` naming ``path``; a missing file stays a
    FileNotFoundError."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such {what}")
    try:
        with np.load(path, allow_pickle=False) as z:
            yield z
    except (zipfile.BadZipFile, EOFError, KeyError, OSError, ValueError) as exc:
        raise corrupt(path, what, exc) from None


def read_csv_exact(source):
    """A results CSV read back as the archive and the tables read it: pandas' default float parsing, which
    gives back every float ``to_csv`` wrote, and each column's type from the whole file
    (``low_memory=False``: a parameter column holds numbers for some algorithms and words for others,
    ``param.kernel``: 2, ``ew``; read in chunks, its type would change from chunk to chunk)."""
    import pandas as pd   # here: the package's file helpers do not need pandas to import

    return pd.read_csv(source, low_memory=False)

