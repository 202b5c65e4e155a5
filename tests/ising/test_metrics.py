import numpy as np
import pytest

from zbound.ising.metrics import (
    l1_marginal_error,
    normalized_bound_error,
    normalized_gain,
    relative_error_to_logdet,
)


def test_metric_values():
    assert normalized_bound_error(12.0, 10.0, 4) == pytest.approx(0.5)
    assert relative_error_to_logdet(9.0, 10.0, 2) == pytest.approx(-0.5)
    assert normalized_gain(8.0, 10.0, 4) == pytest.approx(-0.5)
    assert l1_marginal_error(np.array([0.2, 0.9]), np.array([0.4, 0.6])) == pytest.approx(0.25)


def test_metric_errors():
    with pytest.raises(ValueError, match="finite"):
        normalized_bound_error(np.nan, 1.0, 3)
    with pytest.raises(ValueError, match="positive integer"):
        normalized_bound_error(1.0, 1.0, 0)
    with pytest.raises(ValueError, match=r"\(d,\)"):
        l1_marginal_error(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="probabilities"):
        l1_marginal_error(np.array([-0.5]), np.array([0.5]))
