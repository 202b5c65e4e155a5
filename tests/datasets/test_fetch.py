"""zbound.datasets.remote (fetch) and ``zbound data``: downloads from a mirror served on 127.0.0.1
(http.server in a thread, no network), a hash mismatch, an interrupted download, no server; the
conversions from the sources' layouts to the loaders'."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import shutil
import threading
import zipfile
from functools import partial
from pathlib import Path

import pytest

from zbound.cli import main
from zbound.datasets import SHA256, load_ionosphere
from zbound.datasets import remote as F
from zbound.datasets._base import CACHE_VAR, CONTENT_SHA256

pytest.importorskip("pooch", reason="the fetchers are built on pooch")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _Truncating(_Quiet):
    """Announces the whole file, sends half of it, closes the connection."""

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        self.close_connection = True


@pytest.fixture
def serve():
    servers = []

    def start(root: Path, handler=_Quiet) -> str:
        httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), partial(handler, directory=str(root)))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def _mirror_of(tmp_path: Path, real: Path, names=("ionosphere", "spect")) -> Path:
    root = tmp_path / "mirror"
    for name in names:
        for f in F.SOURCES[name].files:
            (root / f.target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(real / f.target, root / f.target)
    return root


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.data
def test_fetch_from_a_mirror_gives_identical_files_that_the_loaders_read(
        tmp_path, monkeypatch, serve, real_data_dir):
    url = serve(_mirror_of(tmp_path, real_data_dir))
    monkeypatch.setenv(F.MIRROR_VAR, url)
    monkeypatch.delenv("ZBOUND_DATA")
    monkeypatch.setenv(CACHE_VAR, str(tmp_path / "cache"))
    assert F.fetch("ionosphere") == tmp_path / "cache"
    F.fetch("spect")
    for name in ("ionosphere", "spect"):
        for f in F.SOURCES[name].files:
            assert _sha(tmp_path / "cache" / f.target) == SHA256[f.target]
    ds = load_ionosphere()                        # the loaders read the cache
    assert ds.X.shape == (351, 34)
    assert not list((tmp_path / "cache").glob(".zbound-fetch-*"))     # no temporaries left


@pytest.mark.data
def test_cli_fetch_into_a_directory_and_list(tmp_path, monkeypatch, serve, real_data_dir,
                                             capsys):
    url = serve(_mirror_of(tmp_path, real_data_dir))
    monkeypatch.setenv(F.MIRROR_VAR, url)
    out = tmp_path / "data"
    assert main(["data", "fetch", "ionosphere", "spect", "--dir", str(out)]) == 0
    assert (out / "spect" / "SPECT.test").is_file()
    assert main(["data", "list", "--dir", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ionosphere  (0.1 MB, fetched)" in text and "adult  (0.6 MB)" in text
    assert main(["data", "fetch", "nonsense", "--dir", str(out)]) == 2
    assert main(["data", "fetch", "--dir", str(out)]) == 2


@pytest.mark.data
def test_a_file_whose_hash_differs_is_refused_and_not_kept(tmp_path, monkeypatch, serve,
                                                           real_data_dir):
    root = _mirror_of(tmp_path, real_data_dir)
    target = root / "ionosphere" / "ionosphere.data"
    target.write_bytes(target.read_bytes().replace(b"g\n", b"b\n", 1))
    monkeypatch.setenv(F.MIRROR_VAR, serve(root))
    with pytest.raises(F.DataFetchError, match="sha256 differs"):
        F.fetch("ionosphere", tmp_path / "out")
    assert not (tmp_path / "out" / "ionosphere" / "ionosphere.data").exists()


@pytest.mark.data
def test_an_interrupted_download_fails_cleanly(tmp_path, monkeypatch, serve, real_data_dir):
    monkeypatch.setenv(F.MIRROR_VAR, serve(_mirror_of(tmp_path, real_data_dir), _Truncating))
    with pytest.raises(F.DataFetchError, match="could not download"):
        F.fetch("ionosphere", tmp_path / "out", retries=1)
    assert not (tmp_path / "out" / "ionosphere").exists()
    assert not list((tmp_path / "out").glob(".zbound-fetch-*"))


def test_no_server_is_one_clear_error(tmp_path, monkeypatch, capsys):
    import socket

    with socket.socket() as s:                    # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv(F.MIRROR_VAR, f"http://127.0.0.1:{port}")
    with pytest.raises(F.DataFetchError, match="could not download .*ZBOUND_DATA_MIRROR"):
        F.fetch("spect", tmp_path, retries=0)
    assert main(["data", "fetch", "spect", "--dir", str(tmp_path)]) == 1
    assert "could not download" in capsys.readouterr().err


def test_unknown_set_names_the_known_ones():
    with pytest.raises(ValueError, match="known: ionosphere"):
        F.fetch("mnist")


def test_every_loader_file_has_a_source_and_a_size():
    targets = [f.target for s in F.SOURCES.values() for f in s.files]
    assert len(targets) == len(set(targets))
    assert set(targets) == set(SHA256) == set(F.SIZES)
    assert set(CONTENT_SHA256) <= set(targets)
    for s in F.SOURCES.values():
        for f in s.files:
            assert f.url.startswith("https://"), f
            assert f.target.startswith(s.name + "/"), f
            if f.target in CONTENT_SHA256:
                assert f.convert is not None            # made here: checked by content


# -- conversions -------------------------------------------------------------------------------

def test_header_line_is_dropped():
    assert F._drop_first_line(b"DIE_LIVE,AGE\r\n1,2\r\n3,4\r\n") == b"1,2\r\n3,4\r\n"


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_treebank_trees_become_the_tagged_corpus():
    mrg = {"treebank/combined/wsj_0002.mrg":
           b"( (S (NP-SBJ (NNP Mr.) (NNP Vinken) ) (VP (VBZ is) (-NONE- *-1) ) (. .) ))\n",
           "treebank/combined/wsj_0001.mrg":
           b"( (S (NP-SBJ (NNP Pierre) ) (. .) ))\n\n( (FRAG (NN Hi) ))\n",
           "treebank/parsed/wsj_0001.prd": b"( (X (Y z) ))"}
    out = F.treebank_tagged(_zip(mrg))
    assert out == (b"Pierre\tNNP\n.\t.\n\nHi\tNN\n\n"
                   b"Mr.\tNNP\nVinken\tNNP\nis\tVBZ\n*-1\t-NONE-\n.\t.\n\n")


def test_zip_members_are_extracted_and_gzipped_to_verified_content(tmp_path):
    text = b"Confidence NN B-NP\nin IN B-PP\n\n"
    conv = [f for f in F.SOURCES["conll2000"].files if f.target.endswith("test.txt.gz")][0]
    data = conv.convert(_zip({"conll2000/test.txt": text, "conll2000/README": b"x"}))
    assert gzip.decompress(data) == text
    out = tmp_path / "test.txt.gz"
    out.write_bytes(data)
    assert not F.verified(out, conv.target)       # not the real corpus: refused


@pytest.mark.data
@pytest.mark.slow
def test_conversions_reproduce_the_stored_files(real_data_dir, tmp_path):
    """Each converter, on the source's layout rebuilt from the stored files, gives a file the
    registry accepts: the header lines put back, the uncompressed files, NLTK's zips."""
    convs = {f.target: f for s in F.SOURCES.values() for f in s.files if f.convert}

    def check(target: str, source: bytes):
        out = tmp_path / target.replace("/", "_")
        out.write_bytes(convs[target].convert(source))
        assert F.verified(out, target), target

    hep = (real_data_dir / "hepatitis/hepatitis.data").read_bytes()
    check("hepatitis/hepatitis.data", b"DIE_LIVE,AGE,SEX\n" + hep)
    for part in ("train", "test"):
        spect = (real_data_dir / f"spect/SPECT.{part}").read_bytes()
        check(f"spect/SPECT.{part}", b"outcome,0,0\r\n" + spect)
    check("srbct/SRBCT.arff.gz", gzip.decompress((real_data_dir / "srbct/SRBCT.arff.gz")
                                                .read_bytes()))
    check("treebank/wsj_sample_tagged.txt.gz",
          (real_data_dir / "treebank/treebank.zip").read_bytes())
    c2000 = _zip({f"conll2000/{p}.txt": gzip.decompress(
        (real_data_dir / f"conll2000/{p}.txt.gz").read_bytes()) for p in ("train", "test")})
    check("conll2000/train.txt.gz", c2000)
    check("conll2000/test.txt.gz", c2000)
    c2002 = _zip({f"conll2002/esp.{p}": gzip.decompress(
        (real_data_dir / f"conll2002/nltk_with_pos/esp.{p}.gz").read_bytes())
        for p in ("train", "testa", "testb")})
    for p in ("train", "testa", "testb"):
        check(f"conll2002/nltk_with_pos/esp.{p}.gz", c2002)
