"""The download layer against an HTTP server on 127.0.0.1, the mirror, and the raw-format parsers
on small files written here. Nothing here needs the network or ../shared."""

import gzip
import hashlib
import http.server
import io
import threading
import zipfile

import numpy as np
import pytest

from mkclust.datasets import download as dl
from mkclust.datasets import parsers
from mkclust.datasets.download import ChecksumError, DownloadError, NotLocal, RawFile, fetch


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


class Server:
    """A local HTTP server: ``routes[path] = list of (status, body)`` served in turn (the last one
    repeats); every request is counted."""

    def __init__(self):
        self.routes: dict[str, list[tuple[int, bytes]]] = {}
        self.hits: dict[str, int] = {}
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.hits[self.path] = server.hits.get(self.path, 0) + 1
                seq = server.routes.get(self.path, [(404, b"not found")])
                status, body = seq[min(server.hits[self.path], len(seq)) - 1]
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture(autouse=True)
def no_env_mirror(monkeypatch):
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


PAYLOAD = b"1,2,3\n4,5,6\n" * 100


def leftovers(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_download_success_then_cache(server, tmp_path):
    server.routes["/a.csv"] = [(200, PAYLOAD)]
    raw = RawFile("set/a.csv", sha(PAYLOAD), server.url + "/a.csv")
    path, how = fetch(raw, tmp_path / "raw")
    assert how == "download" and path == tmp_path / "raw/set/a.csv" and path.read_bytes() == PAYLOAD
    path2, how2 = fetch(raw, tmp_path / "raw")
    assert how2 == "cache" and path2 == path and server.hits["/a.csv"] == 1
    assert leftovers(tmp_path / "raw") == ["set/a.csv"]


def test_checksum_mismatch_names_both_digests_and_leaves_nothing(server, tmp_path):
    server.routes["/a.csv"] = [(200, PAYLOAD + b"tampered")]
    raw = RawFile("set/a.csv", sha(PAYLOAD), server.url + "/a.csv")
    with pytest.raises(ChecksumError) as err:
        fetch(raw, tmp_path / "raw")
    msg = str(err.value)
    assert "set/a.csv" in msg and sha(PAYLOAD) in msg and sha(PAYLOAD + b"tampered") in msg
    assert leftovers(tmp_path / "raw") == []


def test_server_error_is_retried_a_bounded_number_of_times(server, tmp_path):
    server.routes["/a.csv"] = [(500, b"boom")]
    raw = RawFile("set/a.csv", sha(PAYLOAD), server.url + "/a.csv")
    with pytest.raises(DownloadError, match=r"failed after 3 attempt\(s\): HTTP Error 500") as err:
        fetch(raw, tmp_path / "raw", retries=3, backoff=0)
    assert "set data_mirror" in str(err.value)
    assert server.hits["/a.csv"] == 3
    assert leftovers(tmp_path / "raw") == []


def test_transient_error_then_success(server, tmp_path):
    server.routes["/a.csv"] = [(503, b"busy"), (200, PAYLOAD)]
    raw = RawFile("set/a.csv", sha(PAYLOAD), server.url + "/a.csv")
    _, how = fetch(raw, tmp_path / "raw", retries=3, backoff=0)
    assert how == "download" and server.hits["/a.csv"] == 2


def test_client_error_is_not_retried(server, tmp_path):
    raw = RawFile("set/a.csv", sha(PAYLOAD), server.url + "/missing.csv")
    with pytest.raises(DownloadError, match="HTTP Error 404"):
        fetch(raw, tmp_path / "raw", retries=3, backoff=0)
    assert server.hits["/missing.csv"] == 1


def test_corrupt_cache_is_downloaded_again(server, tmp_path):
    server.routes["/a.csv"] = [(200, PAYLOAD)]
    raw = RawFile("set/a.csv", sha(PAYLOAD), server.url + "/a.csv")
    (tmp_path / "raw/set").mkdir(parents=True)
    (tmp_path / "raw/set/a.csv").write_bytes(b"half a fi")
    path, how = fetch(raw, tmp_path / "raw")
    assert how == "download" and path.read_bytes() == PAYLOAD


def test_gzip_member_is_checked_after_decompression(server, tmp_path):
    server.routes["/a.csv.gz"] = [(200, gzip.compress(PAYLOAD))]
    raw = RawFile("set/a.csv", sha(PAYLOAD), server.url + "/a.csv.gz", kind="gzip-member")
    path, _ = fetch(raw, tmp_path / "raw")
    assert path.read_bytes() == PAYLOAD


def test_archive_member_with_keel_header_stripped(server, tmp_path):
    member = b"@relation r\n@attribute a real\n@attribute class {0,1}\n@data\n" + PAYLOAD
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ring/ring.dat", member)
        zf.writestr("ring/ring-names.txt", b"about")
    server.routes["/ring.zip"] = [(200, buf.getvalue())]
    raw = RawFile("ring/ring.dat", sha(PAYLOAD), server.url + "/ring.zip", kind="archive-member",
                  member="ring.dat", strip_header=True)
    path, _ = fetch(raw, tmp_path / "raw")
    assert path.read_bytes() == PAYLOAD
    bad = RawFile("ring/x.dat", sha(PAYLOAD), server.url + "/ring.zip", kind="archive-member", member="x.dat")
    with pytest.raises(DownloadError, match="no unique member 'x.dat'"):
        fetch(bad, tmp_path / "raw")
    assert leftovers(tmp_path / "raw") == ["ring/ring.dat"]


def test_mirror_first_in_place_and_verified(server, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "set").mkdir(parents=True)
    (mirror / "set/a.csv").write_bytes(PAYLOAD)
    raw = RawFile("set/a.csv", sha(PAYLOAD), server.url + "/a.csv")
    path, how = fetch(raw, tmp_path / "raw", mirror)
    assert how == "mirror" and path == mirror / "set/a.csv"
    assert not (tmp_path / "raw").exists() and server.hits == {}
    monkeypatch.setenv(dl.MIRROR_ENV, str(mirror))  # the environment variable is honoured
    assert fetch(raw, tmp_path / "raw")[1] == "mirror"
    (mirror / "set/a.csv").write_bytes(PAYLOAD[:-1])
    with pytest.raises(ChecksumError, match="mirror file"):
        fetch(raw, tmp_path / "raw", mirror)


def test_missing_mirror_folder_is_an_error(tmp_path):
    raw = RawFile("set/a.csv", sha(PAYLOAD), "http://127.0.0.1:9/a.csv")
    with pytest.raises(DownloadError, match="is not a folder"):
        fetch(raw, tmp_path / "raw", tmp_path / "no-such-mirror")


def test_no_download_raises_not_local(tmp_path):
    raw = RawFile("set/a.csv", sha(PAYLOAD), "http://127.0.0.1:9/a.csv")
    with pytest.raises(NotLocal, match="downloading is off"):
        fetch(raw, tmp_path / "raw", download=False)


def test_rawfile_validation():
    with pytest.raises(ValueError, match="member"):
        RawFile("a", "0" * 64, "u", kind="archive-member")
    with pytest.raises(ValueError, match="kind"):
        RawFile("a", "0" * 64, "u", kind="torrent")


# ------------------------------------------------------------------------------------ parsers
ARFF = """% comment
@relation toy
@attribute 'size' real
@attribute colour { red, 'dark blue', green}
@attribute flag {no, yes}
@attribute class {neg, pos}
@data
?,'dark blue',yes,pos
1.5,red,no,neg
3,?,yes,pos
4,green,no,neg
"""


def test_read_arff_codes_missing_and_onehot(tmp_path):
    p = tmp_path / "toy.arff"
    p.write_text(ARFF)
    t = parsers.read_arff(p)
    assert t.names == ["size", "colour", "flag", "class"]
    assert t.nominal[1] == ["red", "dark blue", "green"] and t.nominal[0] is None
    np.testing.assert_array_equal(t.data[:, 1], [1, 0, np.nan, 2])
    assert np.isnan(t.data[0, 0])
    assert list(t.values("class")) == ["pos", "neg", "pos", "neg"]
    X, names = parsers.encode_features(t.drop(["class"]), "onehot")
    assert names == ["size", "colour=red", "colour=dark blue", "colour=green", "flag=no", "flag=yes"]
    np.testing.assert_array_equal(X[1], [1.5, 1, 0, 0, 1, 0])
    assert np.isnan(X[2, 1:4]).all() and X[3, 3] == 1
    with pytest.raises(ValueError, match="codes' or 'onehot"):
        parsers.encode_features(t, "ordinal")


def test_read_keel_with_and_without_header(tmp_path):
    body = "1.0, 2.5, positive\n3.0, ?, negative\n-1, 4, positive\n"
    (tmp_path / "a.dat").write_text("@relation r\n@attribute x real\n@attribute z real\n"
                                    "@attribute class {positive, negative}\n@inputs x, z\n@data\n" + body)
    (tmp_path / "b.dat").write_text(body)
    a, b = parsers.read_keel(tmp_path / "a.dat"), parsers.read_keel(tmp_path / "b.dat")
    assert a.names == ["x", "z", "class"] and a.nominal[2] == ["positive", "negative"]
    np.testing.assert_array_equal(a.data[:, 2], [0, 1, 0])
    assert b.nominal[2] == ["negative", "positive"]  # no header: sorted values
    np.testing.assert_array_equal(b.data[:, 2], [1, 0, 1])
    np.testing.assert_array_equal(a.data[:, :2], b.data[:, :2])
    assert np.isnan(a.data[1, 1])


def test_read_idx_raw_and_gzip(tmp_path):
    imgs = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    blob = bytes([0, 0, 8, 3]) + b"".join(int(s).to_bytes(4, "big") for s in imgs.shape) + imgs.tobytes()
    (tmp_path / "x.idx").write_bytes(blob)
    (tmp_path / "x.idx.gz").write_bytes(gzip.compress(blob))
    np.testing.assert_array_equal(parsers.read_idx(tmp_path / "x.idx"), imgs)
    np.testing.assert_array_equal(parsers.read_idx(tmp_path / "x.idx.gz"), imgs)
    (tmp_path / "bad.idx").write_bytes(blob[:-3])
    with pytest.raises(ValueError, match="holds"):
        parsers.read_idx(tmp_path / "bad.idx")


def test_read_libsvm_crlf_and_table(tmp_path):
    (tmp_path / "a").write_bytes(b"1 1:0.5 3:2\r\n-1 2:1\r\n")
    (tmp_path / "b").write_bytes(b"1 1:1\n")
    X, y = parsers.read_libsvm([tmp_path / "a", tmp_path / "b"])
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2], [0, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(y, [1, -1, 1])
    (tmp_path / "t.data").write_text("1,2,name,?\n3,4,name,5\n")
    T = parsers.read_table(tmp_path / "t.data", sep=",")
    assert T.shape == (2, 4) and np.isnan(T[:, 2]).all() and np.isnan(T[0, 3]) and T[1, 3] == 5
    (tmp_path / "w.txt").write_text("  1.0  2.0\n  3.0  4.0\n")
    np.testing.assert_array_equal(parsers.read_table(tmp_path / "w.txt"), [[1, 2], [3, 4]])


# ------------------------------------------------------------------------------------ offline
def _offline(monkeypatch):
    """urlopen as on a machine without network: the host name does not resolve. Returns the calls."""
    import socket
    import urllib.error

    calls = []

    def urlopen(req, timeout=None):
        calls.append(req.full_url)
        raise urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))

    monkeypatch.setattr(dl.urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(dl, "_UNREACHABLE", {})
    monkeypatch.setattr(dl.time, "sleep", lambda s: pytest.fail(f"slept {s} s retrying an unreachable host"))
    return calls


def test_an_unreachable_host_is_tried_once_and_never_again(monkeypatch, tmp_path):
    """Offline, every file was tried 3 times with 2 + 4 s of back-off (5 min 48 s for --list)."""
    calls = _offline(monkeypatch)
    a = RawFile("x/a.bin", "0" * 64, "https://nowhere.example/a.bin")
    b = RawFile("x/b.bin", "0" * 64, "https://nowhere.example/b.bin")
    message = (r"x/a.bin: nowhere.example is unreachable \(.*Name or service not known\); "
               r"without network, put the file at <mirror>/x/a.bin")
    with pytest.raises(dl.Unreachable, match=message):
        fetch(a, tmp_path)
    with pytest.raises(dl.Unreachable, match="nowhere.example was unreachable earlier"):
        fetch(b, tmp_path)
    assert calls == ["https://nowhere.example/a.bin"]
    assert not list(tmp_path.rglob("*.bin"))


def test_dataset_cli_offline(monkeypatch, tmp_path, capsys):
    """--show reads the registry's static metadata (it ended in a traceback offline); --list stops
    downloading after the first unreachable host and says so in one line."""
    from mkclust.datasets import __main__ as cli

    calls = _offline(monkeypatch)
    monkeypatch.setattr(cli, "load", lambda *a, **k: pytest.fail("--show loaded the data set"))
    assert cli.main(["--show", "colic", "--raw-dir", str(tmp_path)]) == 0
    shown = __import__("json").loads(capsys.readouterr().out)
    assert shown["paper"][0]["n"] == 188 and shown["raw_files"][0]["path"] == "colic/colic.arff"
    assert shown["raw_files"][0]["present"] is None and not calls
    from mkclust._cli import run_tool     # an unknown name: one line and status 2, as the command ends
    assert run_tool(cli.main, ["--show", "nope"], cli.PROG) == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)
    calls = _offline(monkeypatch)
    assert cli.main(["--list", "--raw-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert len(calls) == 1                                   # one host tried, once
    assert "not local (no network)" in out and " not local, 0 failed" in out
    no_net = [line for line in err.splitlines() if line.startswith("no network:")]
    assert len(no_net) == 1 and "--no-download" in no_net[0]
