"""Small UCI sets and adult: shapes and class counts of SOURCES.md, label handling."""

import numpy as np
import pytest

from zbound.datasets import (
    TABLE3,
    design_matrix,
    load,
    load_adult,
    load_bupa,
    load_hepatitis,
    load_ionosphere,
    load_spect,
)

pytestmark = pytest.mark.data


def test_bupa_shape_and_selector_label():
    ds = load_bupa()
    assert ds.X.shape == (345, 6) and ds.X.dtype == np.float64
    assert ds.target_names == ("1", "2")
    assert np.bincount(ds.y).tolist() == [145, 200]
    # First row of the file: 85,92,45,27,31,0.0,1
    np.testing.assert_array_equal(ds.X[0], [85, 92, 45, 27, 31, 0.0])
    assert ds.y[0] == 0


def test_ionosphere_shape_labels_and_constant_column():
    ds = load_ionosphere()
    assert ds.X.shape == (351, 34)
    assert ds.target_names == ("b", "g")
    assert np.bincount(ds.y).tolist() == [126, 225]
    assert np.all(ds.X[:, 1] == 0.0)
    assert np.ptp(ds.X, axis=0).nonzero()[0].size == 33
    assert ds.y[0] == 1 and ds.y[1] == 0  # rows 1, 2 of the file end in g, b


@pytest.mark.parametrize(
    ("subset", "rows", "counts"),
    [("test", 187, [15, 172]), ("train", 80, [40, 40]), ("all", 267, [55, 212])],
)
def test_spect_subsets(subset, rows, counts):
    ds = load_spect(subset)
    assert ds.X.shape == (rows, 22)
    assert set(np.unique(ds.X)) == {0.0, 1.0}
    assert np.bincount(ds.y).tolist() == counts


def test_spect_default_is_the_test_file_used_by_the_paper():
    assert load_spect().X.shape == (187, 22)
    with pytest.raises(ValueError, match="subset"):
        load_spect("validation")


def test_hepatitis_missing_cells_and_imputation():
    raw = load_hepatitis(impute=False)
    assert raw.X.shape == (155, 19)
    assert np.bincount(raw.y).tolist() == [32, 123]
    missing = np.isnan(raw.X)
    # SOURCES.md: 167 missing cells in 75 rows; per column as in hepatitis.names.
    assert missing.sum() == 167 and missing.any(axis=1).sum() == 75
    expected_per_column = {"steroid": 1, "fatigue": 1, "malaise": 1, "anorexia": 1,
                           "liver_big": 10, "liver_firm": 11, "spleen_palpable": 5,
                           "spiders": 5, "ascites": 5, "varices": 5, "bilirubin": 6,
                           "alk_phosphate": 29, "sgot": 4, "albumin": 16, "protime": 67}
    got = dict(zip(raw.feature_names, missing.sum(axis=0).tolist()))
    assert {k: v for k, v in got.items() if v} == expected_per_column

    filled = load_hepatitis()
    assert not np.isnan(filled.X).any()
    np.testing.assert_array_equal(filled.meta["missing"], missing)
    np.testing.assert_array_equal(filled.X[~missing], raw.X[~missing])
    protime = raw.feature_names.index("protime")
    observed = raw.X[~missing[:, protime], protime]
    assert observed.size == 155 - 67
    np.testing.assert_allclose(filled.X[missing[:, protime], protime], observed.mean())


@pytest.mark.parametrize(
    ("name", "t", "dim"),
    [("bupa", 345, 7), ("wine", 178, 14), ("spect", 187, 23), ("ionosphere", 351, 34),
     ("hepatitis", 155, 20)],
)
def test_table3_dimensions_of_the_paper(name, t, dim):
    """Jebara & Choromanska (2012), supplement Table 3: t and dim per data set."""
    Z = design_matrix(load(name).X)
    assert Z.shape == (t, dim)
    np.testing.assert_array_equal(Z[:, -1], 1.0)
    np.testing.assert_allclose(Z[:, :-1].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :-1].std(axis=0), 1.0)


def test_table3_lists_the_five_sets_in_table_order():
    assert TABLE3 == ("bupa", "wine", "spect", "ionosphere", "hepatitis")


def test_registry_aliases():
    assert load("liver-disorders").name == "bupa"
    assert load("heart").X.shape == (187, 22)
    assert load("ion").name == "ionosphere"
    assert load("spect", subset="train").X.shape == (80, 22)


def test_adult_onehot_default():
    ds = load_adult()
    assert ds.X.shape == (32561, 108) and ds.X_test.shape == (16281, 108)
    assert np.bincount(ds.y).tolist() == [24720, 7841]
    assert np.bincount(ds.y_test).tolist() == [12435, 3846]  # labels had a trailing period
    assert ds.target_names == ("<=50K", ">50K")
    assert ds.feature_names[:6] == ("age", "fnlwgt", "education-num", "capital-gain",
                                    "capital-loss", "hours-per-week")
    onehot = ds.X[:, 6:]
    assert set(np.unique(onehot)) == {0.0, 1.0}
    # Exactly one category per categorical column in every row, train and test.
    np.testing.assert_array_equal(onehot.sum(axis=1), 8.0)
    np.testing.assert_array_equal(ds.X_test[:, 6:].sum(axis=1), 8.0)
    # '?' kept as its own category: SOURCES.md counts 4262 missing cells in adult.data.
    qcols = [j for j, f in enumerate(ds.feature_names) if f.endswith("=?")]
    assert len(qcols) == 3 and ds.X[:, qcols].sum() == 4262
    assert ds.X_test[:, qcols].sum() == 2203
    # First test record: 25, Private, ..., <=50K.
    assert ds.X_test[0, 0] == 25.0 and ds.y_test[0] == 0
    assert ds.X_test[0, ds.feature_names.index("workclass=Private")] == 1.0


def test_adult_drop_missing_and_ordinal():
    dropped = load_adult(missing="drop")
    assert dropped.X.shape[0] == 32561 - 2399 and dropped.X_test.shape[0] == 16281 - 1221
    assert not any(f.endswith("=?") for f in dropped.feature_names)
    ordinal = load_adult(encoding="ordinal")
    assert ordinal.X.shape == (32561, 14) and ordinal.X_test.shape == (16281, 14)
    assert ordinal.feature_names[1] == "workclass"
    assert ordinal.X[:, 1].max() == len(ordinal.meta["categories"]["workclass"]) - 1
    with pytest.raises(ValueError, match="encoding"):
        load_adult(encoding="hash")
