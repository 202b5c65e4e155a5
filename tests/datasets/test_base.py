"""data_dir, checksums and the error messages for missing or corrupted files."""

import shutil

import numpy as np
import pytest

from zbound.datasets import SHA256, Dataset, _base, data_dir, data_file, load, load_ionosphere


def test_unset_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ZBOUND_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="ZBOUND_DATA is not set"):
        data_dir()
    with pytest.raises(FileNotFoundError, match="ZBOUND_DATA"):
        load("bupa")


def test_variable_naming_no_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("ZBOUND_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="does not name an existing directory"):
        data_dir()


def test_missing_file_message_names_file_and_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("ZBOUND_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        load_ionosphere()
    message = str(err.value)
    assert "ionosphere/ionosphere.data" in message
    assert "ZBOUND_DATA" in message and str(tmp_path) in message


def test_every_checksum_is_a_sha256_hex_digest():
    assert len(SHA256) >= 20
    for relpath, digest in SHA256.items():
        assert len(digest) == 64 and int(digest, 16) >= 0, relpath


@pytest.mark.data
def test_all_listed_files_match_their_checksums(real_data_dir, fresh_checksums):
    for relpath in SHA256:
        assert data_file(relpath).is_file()


def _copy_ionosphere(real_data_dir, tmp_path):
    (tmp_path / "ionosphere").mkdir()
    target = tmp_path / "ionosphere" / "ionosphere.data"
    shutil.copyfile(real_data_dir / "ionosphere" / "ionosphere.data", target)
    return target


@pytest.mark.data
def test_corrupted_copy_fails_checksum(monkeypatch, tmp_path, real_data_dir, fresh_checksums):
    target = _copy_ionosphere(real_data_dir, tmp_path)
    data = bytearray(target.read_bytes())
    data[100] ^= 0x01  # one flipped bit
    target.write_bytes(bytes(data))
    monkeypatch.setenv("ZBOUND_DATA", str(tmp_path))
    with pytest.raises(ValueError) as err:
        load_ionosphere()
    message = str(err.value)
    assert "Checksum mismatch" in message and "ionosphere/ionosphere.data" in message
    assert "ZBOUND_DATA" in message and SHA256["ionosphere/ionosphere.data"] in message


@pytest.mark.data
def test_checksum_verified_once_and_again_after_change(
    monkeypatch, tmp_path, real_data_dir, fresh_checksums
):
    target = _copy_ionosphere(real_data_dir, tmp_path)
    monkeypatch.setenv("ZBOUND_DATA", str(tmp_path))
    calls = []
    real_sha = _base.file_sha256
    monkeypatch.setattr(_base, "file_sha256", lambda p: calls.append(p) or real_sha(p))
    assert load_ionosphere().X.shape == (351, 34)
    assert load_ionosphere().X.shape == (351, 34)
    assert len(calls) == 1  # cached after the first successful check
    # A file changed after it was verified is checked again (size differs).
    target.write_bytes(target.read_bytes() + b"1,0" + b",0" * 33 + b",g\n")
    with pytest.raises(ValueError, match="Checksum mismatch"):
        load_ionosphere()
    assert len(calls) == 2


def test_dataset_record_properties():
    ds = Dataset(X=np.zeros((4, 2)), y=np.array([0, 1, 1, 2]), feature_names=("a", "b"),
                 name="toy", description="toy")
    assert (ds.n_samples, ds.n_features, ds.n_classes, ds.has_test) == (4, 2, 3, False)
    assert "toy" in repr(ds) and "(4, 2)" in repr(ds)
