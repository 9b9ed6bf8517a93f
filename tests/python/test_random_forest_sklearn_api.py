"""The random forests as scikit-learn 1.9.1's drop-in (issue 23): its constructor parameters and
their errors, min_weight_fraction_leaf, warm_start, apply / decision_path / estimators_ against
the tree arrays, a callable oob_score, and the deprecated "friedman_mse"."""

import inspect
import pickle
import warnings

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier as SkForestClassifier
from sklearn.ensemble import RandomForestRegressor as SkForestRegressor
from sklearn.metrics import accuracy_score
from sklearn.utils._param_validation import InvalidParameterError

from conftest import DEVICES, cuda_or_skip
from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor

PAIRS = [(RandomForestClassifier, SkForestClassifier), (RandomForestRegressor, SkForestRegressor)]


def data(rng, kind, n=300, d=5):
    X = rng.normal(size=(n, d)).astype(np.float32)
    signal = X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n)
    if kind is RandomForestClassifier:
        return X, np.digitize(signal, [-0.8, 0.0, 0.8])
    return X, signal * float(rng.uniform(0.5, 50.0))


@pytest.mark.parametrize("Forest, SkForest", PAIRS)
def test_constructor_is_sklearns_plus_n_bins_and_device(Forest, SkForest):
    ours = list(inspect.signature(Forest).parameters.values())
    theirs = list(inspect.signature(SkForest).parameters.values())
    assert [p.name for p in ours] == [p.name for p in theirs] + ["n_bins", "device"]
    for mine, sk in zip(ours, theirs):
        assert (mine.default, mine.kind) == (sk.default, sk.kind), mine.name


@pytest.mark.parametrize("Forest, SkForest", PAIRS)
@pytest.mark.parametrize(
    "params",
    [dict(min_weight_fraction_leaf=0.6), dict(ccp_alpha=-1.0), dict(warm_start="yes"), dict(n_jobs=1.5),
     dict(verbose=-1), dict(oob_score="accuracy"), dict(max_samples=0.0), dict(min_samples_leaf=1.0)],
)
def test_bad_parameters_raise_sklearns_error(rng, Forest, SkForest, params):
    X, y = data(rng, Forest, n=40)
    with pytest.raises(InvalidParameterError) as theirs:
        SkForest(**params).fit(X, y)
    with pytest.raises(InvalidParameterError) as ours:
        Forest(**params).fit(X, y)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_values_gpuml_cannot_honour_raise_not_implemented(rng, Forest):
    X, y = data(rng, Forest, n=40)
    with pytest.raises(NotImplementedError, match="monotonic_cst"):
        Forest(n_estimators=2, monotonic_cst=[1, 0, 0, 0, 0]).fit(X, y)
    if Forest is RandomForestRegressor:
        with pytest.raises(NotImplementedError, match="absolute_error"):
            Forest(n_estimators=2, criterion="absolute_error").fit(X, y)


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_accepted_parameters_that_do_not_change_the_fit(rng, Forest):
    X, y = data(rng, Forest)
    seed = int(rng.integers(1 << 30))
    plain = Forest(n_estimators=4, random_state=seed, device="cpu").fit(X, y)
    other = Forest(n_estimators=4, random_state=seed, device="cpu", n_jobs=-1, verbose=2).fit(X, y)
    np.testing.assert_array_equal(plain.apply(X), other.apply(X))


@pytest.mark.parametrize("bootstrap", [False, True])
def test_min_weight_fraction_leaf_bounds_every_leaf(rng, device, bootstrap):
    X, y = data(rng, RandomForestRegressor)
    weights = rng.uniform(0.1, 3.0, size=len(y))
    fraction = float(rng.uniform(0.05, 0.2))
    forest = RandomForestRegressor(n_estimators=5, min_weight_fraction_leaf=fraction, bootstrap=bootstrap,
                                   random_state=int(rng.integers(1 << 30)), device=device).fit(X, y, sample_weight=weights)
    plain = RandomForestRegressor(n_estimators=5, bootstrap=bootstrap, random_state=forest.random_state,
                                  device=device).fit(X, y, sample_weight=weights)
    offsets, weighted = forest.estimator_node_offsets_, forest.nodes_weighted_n_samples_
    for t in range(len(offsets) - 1):
        nodes = slice(offsets[t], offsets[t + 1])
        leaves = forest.nodes_feature_[nodes] < 0
        # Each leaf carries at least the fraction of its tree's weight (the root's); 1e-12
        # relative: the weights are summed in another order than the bound is computed.
        assert weighted[nodes][leaves].min() >= fraction * weighted[nodes][0] * (1 - 1e-12)
    assert len(forest.nodes_feature_) < len(plain.nodes_feature_)  # the bound did cut the trees


def test_min_weight_fraction_leaf_grows_sklearns_tree(rng):
    # Without bootstrap and with every feature drawn, a tree is a function of the data: with at
    # most 256 distinct values per feature (250 rows), the bins give scikit-learn's
    # thresholds, so the trees are scikit-learn's (up to ties between features, which the
    # bound's large leaves make unlikely).
    X, y = data(rng, RandomForestRegressor, n=250)
    weights = rng.uniform(0.1, 3.0, size=len(y))
    params = dict(n_estimators=1, bootstrap=False, max_features=None, min_weight_fraction_leaf=float(rng.uniform(0.02, 0.1)))
    ours = RandomForestRegressor(**params, device="cpu").fit(X, y, sample_weight=weights)
    theirs = SkForestRegressor(**params, random_state=0).fit(X, y, sample_weight=weights)
    assert ours.estimators_[0].tree_.node_count == theirs.estimators_[0].tree_.node_count
    # The same leaves' means: 1e-6 relative, as gpuml fits float32 X with y and the weights in
    # float32 too, where scikit-learn takes them in float64.
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-6, atol=1e-6 * np.abs(y).max())


def preorder(tree):
    """A tree's nodes from the root, left subtrees first, as (feature, threshold, rows, values):
    the same for trees that differ only in how their nodes are numbered."""
    nodes, stack = [], [0]
    while stack:
        node = stack.pop()
        nodes.append((int(tree.feature[node]), float(tree.threshold[node]), int(tree.n_node_samples[node]),
                      tuple(np.asarray(tree.value[node]).ravel().tolist())))
        if tree.children_left[node] >= 0:
            stack += [int(tree.children_right[node]), int(tree.children_left[node])]
    return nodes


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_ccp_alpha_prunes_as_sklearn(rng, Forest):
    # scikit-learn's own pruning (its private _build_pruned_tree_ccp) of the unpruned trees gives
    # the trees gpuml prunes; alpha halfway between two distinct steps of a tree's pruning path.
    from sklearn.tree._tree import Tree, _build_pruned_tree_ccp, ccp_pruning_path

    X, y = data(rng, Forest, n=400)
    params = dict(n_estimators=3, max_depth=int(rng.integers(4, 12)), random_state=int(rng.integers(1 << 30)), device="cpu")
    unpruned = Forest(**params).fit(X, y)
    alphas = np.unique(ccp_pruning_path(unpruned.estimators_[0].tree_)["ccp_alphas"])
    i = int(rng.integers(1, len(alphas) - 1))  # past alphas[0] = 0: the first tree is pruned
    alpha = float((alphas[i] + alphas[i + 1]) / 2)
    pruned = Forest(**params, ccp_alpha=alpha).fit(X, y)
    assert len(pruned.nodes_feature_) < len(unpruned.nodes_feature_)
    for ours, full in zip(pruned.estimators_, unpruned.estimators_):
        theirs = Tree(full.tree_.n_features, full.tree_.n_classes, full.tree_.n_outputs)
        _build_pruned_tree_ccp(theirs, full.tree_, alpha)
        assert preorder(ours.tree_) == preorder(theirs)
    # The importances and predictions are those of the pruned trees.
    assert not np.array_equal(pruned.feature_importances_, unpruned.feature_importances_)
    leaves = pruned.apply(X)
    offsets = pruned.estimator_node_offsets_
    assert (pruned.nodes_feature_[offsets[:-1] + leaves] < 0).all()


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_warm_start_grows_the_forest_of_one_fit(rng, device, Forest):
    X, y = data(rng, Forest)
    seed = int(rng.integers(1 << 30))
    first, total = int(rng.integers(2, 6)), int(rng.integers(7, 12))
    grown = Forest(n_estimators=first, random_state=seed, warm_start=True, device=device).fit(X, y)
    grown.set_params(n_estimators=total, oob_score=True)
    grown.fit(X, y)
    once = Forest(n_estimators=total, random_state=seed, oob_score=True, device=device).fit(X, y)
    assert len(grown) == total and len(list(grown)) == total
    np.testing.assert_array_equal(grown.apply(X), once.apply(X))
    np.testing.assert_array_equal(grown.estimator_seeds_, once.estimator_seeds_)
    assert {t.random_state for t in grown} == {t.random_state for t in once}
    # The kept trees' importances come back from the node arrays: a few ulps.
    np.testing.assert_allclose(grown.feature_importances_, once.feature_importances_, rtol=1e-12, atol=1e-15)
    assert grown.oob_score_ == pytest.approx(once.oob_score_, rel=1e-12)  # the same trees' out-of-bag rows
    predict = "predict_proba" if Forest is RandomForestClassifier else "predict"
    np.testing.assert_array_equal(getattr(grown, predict)(X), getattr(once, predict)(X))
    # The model keeps everything: a pickled warm-started forest predicts the same.
    np.testing.assert_array_equal(getattr(pickle.loads(pickle.dumps(grown)), predict)(X), getattr(grown, predict)(X))


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_warm_start_errors_and_warning_are_sklearns(rng, Forest):
    X, y = data(rng, Forest, n=80)
    forest = Forest(n_estimators=5, max_depth=3, warm_start=True, random_state=1).fit(X, y)
    leaves = forest.apply(X)
    forest.set_params(random_state=2)
    with pytest.warns(UserWarning, match="Warm-start fitting without increasing n_estimators does not fit new trees"):
        forest.fit(X, y)
    np.testing.assert_array_equal(forest.apply(X), leaves)  # nothing refitted
    forest.set_params(n_estimators=4)
    with pytest.raises(ValueError, match=r"n_estimators=4 must be larger or equal to len\(estimators_\)=5"):
        forest.fit(X, y)
    forest.set_params(warm_start=False, random_state=1, n_estimators=3)
    assert len(forest.fit(X, y)) == 3  # without warm_start, a new forest
    if Forest is RandomForestClassifier:
        forest.set_params(warm_start=True, n_estimators=6)
        with pytest.raises(ValueError, match="classes"):
            forest.fit(X, (y + 1) % 5)  # other classes: the kept trees cannot vote on them


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_apply_and_decision_path_follow_the_tree_arrays(rng, Forest):
    X, y = data(rng, Forest)
    forest = Forest(n_estimators=int(rng.integers(3, 8)), max_depth=int(rng.integers(2, 9)),
                    random_state=int(rng.integers(1 << 30)), device="cpu").fit(X, y)
    X_new = rng.normal(size=(200, X.shape[1]))  # float64: compared as the trees predict
    leaves = forest.apply(X_new)
    offsets = forest.estimator_node_offsets_
    assert leaves.dtype == np.int64 and leaves.shape == (200, len(offsets) - 1)
    values = np.mean([forest.nodes_value_[offsets[t] + leaves[:, t]] for t in range(len(offsets) - 1)], axis=0)
    # The mean of the leaves' values is the prediction: the same terms, summed in tree order.
    if Forest is RandomForestClassifier:
        np.testing.assert_allclose(values, forest.predict_proba(X_new), rtol=0, atol=1e-15)
    else:
        np.testing.assert_allclose(values[:, 0], forest.predict(X_new), rtol=1e-15, atol=1e-12 * np.abs(y).max())
    assert (forest.nodes_feature_[offsets[:-1] + leaves] < 0).all()
    indicator, ptr = forest.decision_path(X_new)
    np.testing.assert_array_equal(ptr, offsets)
    assert indicator.shape == (200, offsets[-1])
    dense = indicator.toarray()
    rows = np.arange(200)
    for t in range(len(offsets) - 1):
        assert (dense[rows, offsets[t] + leaves[:, t]] == 1).all() and (dense[:, offsets[t]] == 1).all()
    # scikit-learn's trees built from the arrays agree (on float32 X, which they compare).
    X32 = X_new.astype(np.float32)
    np.testing.assert_array_equal(forest.to_sklearn().apply(X32), forest.apply(X32))
    depths = [tree.get_depth() for tree in forest.estimators_]
    assert max(depths) <= forest.max_depth
    np.testing.assert_array_equal([t.tree_.node_count for t in forest.estimators_], np.diff(offsets))
    with pytest.raises(ValueError, match="NaN"):
        forest.apply(np.full((2, X.shape[1]), np.nan))


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_callable_oob_score(rng, Forest):
    X, y = data(rng, Forest)
    seed = int(rng.integers(1 << 30))
    calls = []

    def score(y_true, y_pred):
        calls.append((np.array(y_true), np.array(y_pred)))
        return float(rng.uniform())

    forest = Forest(n_estimators=15, oob_score=score, random_state=seed, device="cpu").fit(X, y)
    plain = Forest(n_estimators=15, oob_score=True, random_state=seed, device="cpu").fit(X, y)
    assert len(calls) == 1
    y_true, y_pred = calls[0]
    assert y_true.shape == (len(y), 1)  # as scikit-learn passes it: a column
    if Forest is RandomForestClassifier:
        np.testing.assert_array_equal(y_pred, np.argmax(plain.oob_decision_function_, axis=1))
        # With accuracy_score the callable gives the built-in score.
        accurate = Forest(n_estimators=15, oob_score=accuracy_score, random_state=seed, device="cpu").fit(X, y)
        assert accurate.oob_score_ == plain.oob_score_
    else:
        np.testing.assert_array_equal(y_pred, plain.oob_prediction_)


def test_friedman_mse_is_sklearns_deprecated_alias(rng):
    X, y = data(rng, RandomForestRegressor)
    with pytest.warns(FutureWarning, match="friedman_mse"):
        forest = RandomForestRegressor(criterion="friedman_mse", n_estimators=3, random_state=3, device="cpu")
    assert forest.criterion == "squared_error"  # as scikit-learn 1.9's constructor sets it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = RandomForestRegressor(n_estimators=3, random_state=3, device="cpu").fit(X, y)
    np.testing.assert_array_equal(forest.fit(X, y).predict(X), plain.predict(X))


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_cuda_warm_start_weight_fraction_and_pruning_grow_the_cpu_forest(rng, Forest):
    if "cuda" not in DEVICES:
        cuda_or_skip("no CUDA device: nothing to compare the host fit with")
    X, y = data(rng, Forest, n=3000)
    seed = int(rng.integers(1 << 30))
    forests = []
    for device in ("cpu", "cuda"):
        forest = Forest(n_estimators=4, random_state=seed, warm_start=True, device=device).fit(X, y)
        forest.set_params(n_estimators=9, min_weight_fraction_leaf=0.01, ccp_alpha=1e-4, oob_score=True).fit(X, y)
        forests.append(pickle.dumps(forest.set_params(device="cpu")))
    assert forests[0] == forests[1]
