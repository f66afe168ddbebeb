"""A run group in progress, kept run by run: each finished run's record is written (atomically, as
JSON in a ``.json.kept`` file) into a folder beside the group's records file, so that a job stopped
part-way (a cluster's time limit, a killed session, a power cut) starts again from the runs it had
not finished instead of from its first one. The rule ``run`` keeps it in ``<records file>.partial/``
and removes it once the records file is written.

A kept record is used again only for the same run, computed the same way: its file name is a digest
of the run's spec, of the bytes of the group's input files (data set and kernel bank), of the
package versions a record lists (:func:`mkclust.repro.provenance.record_versions`) and of the source
of ``mkclust.algorithms`` (the code that decides labels). Anything else finds no record and fits.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
import logging
from pathlib import Path

from mkclust._io import write_json
from mkclust.datasets.download import sha256_file
from mkclust.repro.provenance import record_versions
from mkclust.repro.run_spec import Run

log = logging.getLogger("mkclust.repro.checkpoint")
SUFFIX = ".json.kept"   # not *.json: a kept record is not a records file to anything that looks for those


def algorithms_digest() -> str:
    """sha256 of the source files of ``mkclust.algorithms`` (names and bytes, in name order)."""
    h = hashlib.sha256()
    sources = [f for f in resources.files("mkclust.algorithms").iterdir() if f.name.endswith(".py")]
    for source in sorted(sources, key=lambda f: f.name):
        h.update(source.name.encode())
        h.update(source.read_bytes())
    return h.hexdigest()


class GroupCheckpoint:
    """The finished runs of one group, one JSON file each in ``folder`` (see the module docstring).
    ``inputs``: the group's input files (None entries are skipped)."""

    def __init__(self, folder, inputs):
        self.folder = Path(folder)
        self._context = {"inputs": [sha256_file(p) for p in inputs if p is not None],
                         "versions": record_versions(), "algorithms": algorithms_digest()}

    def _path(self, run: Run) -> Path:
        text = json.dumps({"run": run.spec(), **self._context}, sort_keys=True)
        return self.folder / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}{SUFFIX}"

    def get(self, run: Run) -> dict | None:
        """The kept record of ``run``, or None."""
        path = self._path(run)
        if not path.exists():
            return None
        log.info("run %s seed %d: its record kept by an earlier attempt (%s)", run.params_json, run.seed, path.name)
        return json.loads(path.read_text(encoding="utf-8"))

    def put(self, run: Run, record: dict) -> dict:
        """Keep ``record`` (atomically) and return it."""
        write_json(self._path(run), record)
        return record

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob(f"*{SUFFIX}")) if self.folder.is_dir() else 0
