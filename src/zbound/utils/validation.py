"""Input checks shared by bounds and models: one place decides dtype, layout and finiteness;
and :class:`Number`, the numeric parameter constraint of the estimators and solvers
(scikit-learn's ``Interval`` without booleans)."""

from __future__ import annotations

import math
from collections.abc import Set
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval


class Number(Interval):
    """scikit-learn's ``Interval`` constraint without booleans: True and False are not numbers
    here (``C=True`` is a mistake, not 1.0)."""

    def is_satisfied_by(self, val):
        if isinstance(val, bool | np.bool_):
            return False
        return super().is_satisfied_by(val)


class Choices(Set):
    """A fixed set of names that keeps the order it was given: ``StrOptions(Choices(...))``
    lists them in that order in its message (a plain set's order changes between runs)."""

    def __init__(self, *names):
        self._names = tuple(dict.fromkeys(names))

    @classmethod
    def _from_iterable(cls, it):
        return cls(*it)

    def __contains__(self, name) -> bool:
        return name in self._names

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


# The ends of the numeric range the fits handle (docs/input-contract.md). The data's own budget
# is rows x largest |entry of X| <= 1e150 (zbound.models.loss), so that sums of squares stay
# finite; within it, a penalty strength up to PENALTY_MAX times squared weights up to
# SCALE_MAX, or logits up to 1e150 x SCALE_MAX, stay far from float64's 1.8e308. Values beyond
# them are refused at validation, naming the parameter.

#: the largest L2 strength (alpha, reg, c2, 1 / C) a fit takes
PENALTY_MAX = 1e100
#: the largest magnitude of a box-constraint end or an initial weight scale
SCALE_MAX = 1e50

#: an integer >= 0 (with the others below: the numeric constraints parameters most often have)
NON_NEGATIVE_INT = Number(Integral, 0, None, closed="left")
#: an integer >= 1
POSITIVE_INT = Number(Integral, 1, None, closed="left")
#: a finite number >= 0
NON_NEGATIVE = Number(Real, 0, np.inf, closed="left")
#: a finite number > 0
POSITIVE = Number(Real, 0, np.inf, closed="neither")
#: an L2 strength, 0 to PENALTY_MAX
PENALTY = Number(Real, 0, PENALTY_MAX, closed="both")
#: an L2 strength, above 0 and at most PENALTY_MAX
POSITIVE_PENALTY = Number(Real, 0, PENALTY_MAX, closed="right")
#: an inverse L2 strength C, at least 1 / PENALTY_MAX (finite)
INVERSE_PENALTY = Number(Real, 1.0 / PENALTY_MAX, np.inf, closed="left")
#: a scale of initial weights, above 0 and at most SCALE_MAX
INIT_SCALE = Number(Real, 0, SCALE_MAX, closed="right")

def check_design(X, nonempty: bool = False):
    """X as float64 CSR (sparse input) or C-contiguous ndarray of shape (t, d).

    Raises ValueError naming the problem for a non-2-D array, NaN or inf entries and, with
    ``nonempty``, zero rows or columns.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        finite = bool(np.all(np.isfinite(X.data)))
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        finite = bool(np.all(np.isfinite(X)))
    if X.ndim != 2 or (nonempty and (X.shape[0] == 0 or X.shape[1] == 0)):
        kind = "a non-empty 2-D array" if nonempty else "2-D"
        raise ValueError(f"X must be {kind} (t, d), got shape {X.shape}")
    if not finite:
        raise ValueError("X contains NaN or inf")
    return X


def _plain_float_rows(X, order) -> bool:
    """Whether X is what :func:`validate_data`'s fast path passes through as it is: a plain
    2-D float64 ndarray with a row and a column at least, C-contiguous where ``order`` asks,
    whose entries sum to a finite number (so none is NaN or inf)."""
    if type(X) is not np.ndarray or X.ndim != 2 or X.dtype != np.float64 or \
            X.shape[0] < 1 or X.shape[1] < 1:
        return False
    if order == "C" and not X.flags.c_contiguous:
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(X.sum()))


def validate_data(estimator, X="no_validation", y="no_validation", reset: bool = True,
                  **check_params):
    """scikit-learn's ``validate_data``, with a fast path for the input most fits get.

    A plain float64 ndarray X (C-contiguous where ``order="C"`` is asked) with finite entries
    and, when y is given, a 1-D ndarray of integer, boolean or finite float labels of the same
    length, are what scikit-learn's checks return unchanged: they are passed through, and
    ``n_features_in_`` (and, with ``reset``, the absence of ``feature_names_in_``) set as
    scikit-learn sets them. Every other input, and every input that fails a check, goes
    through scikit-learn's own ``validate_data``, which converts it or raises its own error.
    (On a small fit scikit-learn's checks cost about a tenth of the fit, the fast path a
    tenth of that.) Options other than ``dtype=np.float64``,
    ``order``, ``accept_sparse`` and ``y_numeric`` always take scikit-learn's path."""
    from sklearn.utils.validation import validate_data as sk_validate_data

    if set(check_params) <= _FAST_OPTIONS and check_params.get("dtype") is np.float64 and \
            _plain_float_rows(X, check_params.get("order")):
        with_y = not (isinstance(y, str) and y == "no_validation")
        # y_numeric without y: scikit-learn passes it on to check_array, which refuses it
        fast = not with_y and "y_numeric" not in check_params or with_y and (
            type(y) is np.ndarray and y.ndim == 1 and y.shape[0] == X.shape[0] and
            (y.dtype.kind in "iub" or (y.dtype.kind == "f" and bool(np.isfinite(y).all()))))
        if fast and reset:
            if hasattr(estimator, "feature_names_in_"):
                delattr(estimator, "feature_names_in_")
            estimator.n_features_in_ = X.shape[1]
        if fast and (reset or not hasattr(estimator, "feature_names_in_") and
                     getattr(estimator, "n_features_in_", X.shape[1]) == X.shape[1]):
            return (X, y) if with_y else X
    # scikit-learn's finiteness check sums X with only overflow silenced: +inf and -inf
    # together make it warn "invalid value" before its own ValueError
    with np.errstate(over="ignore", invalid="ignore"):
        return sk_validate_data(estimator, X, y, reset=reset, **check_params)


#: the options of :func:`validate_data` its fast path knows
_FAST_OPTIONS = frozenset({"dtype", "order", "accept_sparse", "y_numeric"})


def check_reg(reg) -> float:
    """The L2 weight as a float; ValueError unless finite and >= 0."""
    if isinstance(reg, bool) or not isinstance(reg, int | float | np.integer | np.floating):
        raise TypeError(f"reg must be a real number, got {type(reg).__name__}")
    if not np.isfinite(reg) or reg < 0:
        raise ValueError(f"reg must be finite and >= 0, got {reg}")
    return float(reg)


def label_indices(y) -> tuple[np.ndarray, np.ndarray]:
    """(classes, indices): the sorted distinct labels of ``y`` and each label's position
    among them, as ``np.unique(y, return_inverse=True)`` gives them (intp indices). NumPy's
    ``return_inverse`` sorts all of y (up to half of a whole binary fit); here the distinct
    labels come by hashing, then labels 0..k-1 are used as they are and others found by
    binary search."""
    y = np.asarray(y)
    if y.dtype.kind not in "iufbUS":            # objects: NumPy's sort-based encoding
        classes, idx = np.unique(y, return_inverse=True)
        return classes, idx.reshape(-1).astype(np.intp, copy=False)
    classes = np.unique(y)
    if y.dtype.kind in "iub" and classes.size and classes[0] == 0 and \
            classes[-1] == classes.size - 1:
        return classes, y.astype(np.intp).reshape(-1)
    return classes, np.searchsorted(classes, y).astype(np.intp, copy=False).reshape(-1)


def check_weighted_classes(name: str, classes, y_idx, sample_weight) -> None:
    """The classes a classifier's fit can learn from: at least one positive sample weight,
    and samples of at least two classes with positive weight. A class whose samples all have
    zero weight stays in ``classes_`` (as in scikit-learn) and gets a probability driven
    towards zero; ValueError naming ``name`` otherwise (docs/input-contract.md)."""
    if sample_weight is not None and not np.any(sample_weight > 0):
        raise ValueError(f"{name}: every sample_weight is zero: nothing to fit")
    present = np.flatnonzero(np.bincount(
        y_idx if sample_weight is None else y_idx[sample_weight > 0], minlength=len(classes)))
    if present.size < 2:
        which = " with positive sample_weight" if sample_weight is not None else ""
        raise ValueError(f"{name} needs samples of at least 2 classes{which}; got 1 class "
                         f"({classes[present[0]].item()!r})")


def relative_weights(sw):
    """Sample weights brought near 1 by a power of two where the largest is beyond 2^+-64, for
    objectives that weigh rows over the weights' sum (their scale is free there, and weights
    of 1e307 must not overflow that sum). Weights in range are kept as they are (a weight of 2
    then stays exactly two rows of weight 1, through a full-batch finish too); None stays
    None."""
    if sw is None or not sw.size:
        return sw
    top = float(sw.max())
    if top <= 0.0 or 2.0**-64 <= top <= 2.0**64:
        return sw
    return np.ldexp(sw, -math.frexp(top)[1])


def check_penalty_against_weights(C: float, sample_weight) -> None:
    """A sum-of-losses objective's penalty 1 / (2C) against the total sample weight: beyond
    PENALTY_MAX times the total the data weigh nothing in float64 (weights of 1e-310 with
    C = 1), and the fit's ridge terms overflow. ValueError naming both. (A total that
    overflows is refused by the loss's own magnitude check.)"""
    with np.errstate(over="ignore"):
        total = float(np.sum(sample_weight))
    if 1.0 / C > PENALTY_MAX * total:
        raise ValueError(f"sample_weight sums to {total:.3g}: against the penalty 1/C = "
                         f"{1.0 / C:.3g} the data would weigh nothing (1 / (C x total weight) "
                         f"must stay below {PENALTY_MAX:.0e}); rescale sample_weight (weights "
                         "x c with C / c fit the same model)")


def finite_prediction(compute, *args):
    """``compute(*args)`` with NumPy's overflow and invalid-value warnings silenced, its result
    required finite: predict-time X whose values times the fitted weights leave float64 is a
    ValueError, as fit refuses such X (docs/input-contract.md), not a NaN or a warning."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = compute(*args)
    if not np.all(np.isfinite(out)):
        raise ValueError("X's values times the fitted weights overflow float64: the features "
                         "are far outside the range the model was fitted on")
    return out


def check_score_labels(classes, y) -> None:
    """``score``'s labels against ``classes_``: a label never seen in fit is a ValueError in
    every classifier (such rows can never be predicted correctly, and they usually mean a
    label-encoding mismatch, e.g. fitting on strings and scoring on integers). Python-level
    membership: NumPy would coerce 1 and "1" to a common dtype and match them."""
    known = set(np.asarray(classes).tolist())
    unknown = [v for v in dict.fromkeys(np.asarray(y).ravel().tolist()) if v not in known]
    if unknown:
        shown = ", ".join(repr(v) for v in unknown[:5])
        raise ValueError(f"y contains labels not seen during fit: {shown}"
                         f"{' ...' if len(unknown) > 5 else ''}; classes_ are "
                         f"{np.asarray(classes).tolist()!r}")


def check_class_targets(y) -> None:
    """scikit-learn's ``check_classification_targets`` for the labels of a classifier's fit:
    a ValueError for a continuous or multi-output y. One-dimensional integer or boolean
    labels always pass (binary or multiclass), so they skip its type inference, which costs
    about a tenth of a small fit (NumPy arrays only; other inputs go through it)."""
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "iub":
        return
    from sklearn.utils.multiclass import check_classification_targets

    check_classification_targets(y)


#: :func:`scaling_hint`: dense columns whose root mean squares leave [1 / this, this] (or
#: span more than this squared) are far from standardized
STANDARD_RANGE = 10.0


def scaling_hint(X, sample_weight=None) -> str:
    """A sentence for a convergence warning where the dense ``X``'s columns are far from
    standardized (root mean squares, zero columns left out, outside ``[1 / STANDARD_RANGE,
    STANDARD_RANGE]`` or spanning more than its square); "" otherwise, for sparse X (tf-idf
    columns are small by design) and for anything but a NumPy array. An L2 penalty in such
    units barely constrains the large columns: the fit is ill-conditioned, and a non-convex
    one (a latent model, a mixture) settles slowly, often with collapsed components (raw
    breast_cancer, wine and digits: 1000 iterations without converging, against 35-110
    standardized)."""
    import scipy.sparse as sp

    if sp.issparse(X) or not isinstance(X, np.ndarray) or X.ndim != 2 or not X.size:
        return ""                               # sparse, or Dask blocks: not computed here
    from zbound.utils.linalg import column_mean_squares

    with np.errstate(over="ignore", invalid="ignore"):
        ms = column_mean_squares(X, sample_weight)
    rms = np.sqrt(ms[ms > 0])           # all-zero columns say nothing of the units
    if not rms.size:
        return ""
    lo, hi = float(rms.min()), float(rms.max())
    r = STANDARD_RANGE
    if lo >= 1.0 / r and hi <= r and hi <= r * r * lo:
        return ""
    return (f" X's columns are far from standardized (root mean squares from {lo:.3g} to "
            f"{hi:.3g}): an L2 penalty in those units barely constrains the large ones and "
            "the fit is ill-conditioned; standardizing X (sklearn.preprocessing."
            "StandardScaler) usually helps more than a larger max_iter.")


__all__ = ["Number", "Choices", "NON_NEGATIVE_INT", "POSITIVE_INT", "NON_NEGATIVE", "POSITIVE",
           "STANDARD_RANGE", "check_design", "check_reg", "check_class_targets",
           "label_indices", "scaling_hint", "validate_data"]
