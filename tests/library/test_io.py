"""Atomic outputs: an interrupted write leaves neither a finished-looking file nor a temporary."""

import os

import numpy as np
import pytest

from mkclust._io import atomic_open, atomic_savez, write_json


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "sub" / "r.json"
    write_json(path, {"a": 1})
    with pytest.raises(RuntimeError):
        with atomic_open(path, "w") as fh:
            fh.write('{"a": 2, "trunc')
            raise RuntimeError("killed mid-write")
    assert path.read_text().startswith('{\n "a": 1')
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.json"]


def test_finished_files_get_the_mode_of_a_plain_open(tmp_path):
    mask = os.umask(0o027)
    try:
        import importlib

        import mkclust._io as io

        importlib.reload(io)  # the umask is read at import
        io.write_json(tmp_path / "a.json", [1])
        with open(tmp_path / "plain", "w") as fh:
            fh.write("x")
    finally:
        os.umask(mask)
        importlib.reload(io)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777 == 0o640


def test_savez_keeps_the_exact_name(tmp_path):
    atomic_savez(tmp_path / "b.npz", K=np.eye(2))
    assert (tmp_path / "b.npz").exists() and not (tmp_path / "b.npz.npz").exists()
    np.testing.assert_array_equal(np.load(tmp_path / "b.npz")["K"], np.eye(2))


@pytest.mark.parametrize("what", ["bank", "dataset"])
def test_a_truncated_npz_is_named_with_the_command_that_rebuilds_it(tmp_path, what):
    """A bank or data set file cut short on disk used to fail with zipfile's "File is not a zip file"
    naming no file; now the error names it and says to delete it and rerun."""
    from mkclust._io import CorruptFile
    from mkclust.datasets import Dataset, load
    from mkclust.kernels import KernelBank, build_bank

    ds = load("digits1v7")
    obj, reader = (build_bank("mkc3", ds.X), KernelBank.load) if what == "bank" else (ds, Dataset.load)
    path = tmp_path / "x.npz"
    obj.save(path)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(CorruptFile, match=rf"{path} is not a readable .*BadZipFile.*rm -f '{path}'"):
        reader(path)
    path.write_bytes(whole)
    assert reader(path).meta == obj.meta
    with pytest.raises(FileNotFoundError, match="no such"):
        reader(tmp_path / "missing.npz")
