"""scikit-learn's own estimator checks on gpuml's estimators, for every available device."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from conftest import DEVICES

from gpuml.cluster import KMeans
from gpuml.decomposition import PCA, TruncatedSVD
from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor
from gpuml.linear_model import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge

# Checks that cannot pass for a sound reason, with the reason.
EXPECTED_FAILED_CHECKS = {
    "KMeans": {
        # scikit-learn marks this very check as an expected failure of its own KMeans.
        "check_sample_weight_equivalence_on_dense_data": (
            "k-means++ (and k-means||) draws its initial centers by position in the data, and the check shuffles the "
            "weighted rows but not the repeated ones, so the two fits start from different centers and "
            "number their clusters differently. Weights are checked exactly in test_kmeans.py "
            "(test_integer_weights_equal_repeated_rows: same initial centers, same order)."
        ),
    },
}
# The same check on sparse X (KMeans takes it): scikit-learn marks it on its own KMeans too.
EXPECTED_FAILED_CHECKS["KMeans"]["check_sample_weight_equivalence_on_sparse_data"] = EXPECTED_FAILED_CHECKS["KMeans"][
    "check_sample_weight_equivalence_on_dense_data"
]
# scikit-learn marks this very check as an expected failure of its own Ridge ("n_iter_ cannot be
# easily accessed"): Ridge has max_iter, and its direct solvers set n_iter_ = None, as gpuml's do.
EXPECTED_FAILED_CHECKS["Ridge"] = {
    "check_non_transformer_estimators_n_iter": "n_iter_ is None: the solves are direct (as scikit-learn's own)"
}
# scikit-learn marks the same check as an expected failure of its own forests: the bootstrap draws
# rows in proportion to their weights, so a weighted fit and a fit on repeated rows draw
# differently (equal only in distribution). test_ensemble.py checks the weighted draws.
_FOREST_WEIGHTS = "the bootstrap draws rows in proportion to the weights, unlike repeated rows (random, as in scikit-learn)"
# The forests take sparse X, so the sparse variant runs too (scikit-learn marks both on its forests).
_FOREST_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": _FOREST_WEIGHTS,
    "check_sample_weight_equivalence_on_sparse_data": _FOREST_WEIGHTS,
}
EXPECTED_FAILED_CHECKS["RandomForestClassifier"] = dict(_FOREST_CHECKS)
EXPECTED_FAILED_CHECKS["RandomForestRegressor"] = dict(_FOREST_CHECKS)


def expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


ESTIMATORS = [
    make(device=d)
    for make in (
        KMeans,
        LinearRegression,
        Ridge,
        Lasso,
        ElasticNet,
        LogisticRegression,
        PCA,
        TruncatedSVD,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    for d in DEVICES
] + [KMeans(init="k-means||", device=d) for d in DEVICES]  # gpuml's own init, through the same checks


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
