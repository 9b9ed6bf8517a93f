"""The sparse workloads' loaders: datasets/debian_packages.py and datasets/sparse_tfidf.py."""

import gzip
import lzma
import os

import numpy as np
import pytest
import scipy.sparse as sp

from debian_packages import MIN_SECTION_SIZE, list_files, load_debian_descriptions
from sparse_tfidf import make_sparse_tfidf

try:
    import debian.deb822  # noqa: F401

    HAVE_DEB822 = True
except ImportError:
    HAVE_DEB822 = False

# ---- Debian package descriptions --------------------------------------------------------------


def _stanza(name, section, short, md5, extra=""):
    return f"Package: {name}\nVersion: 1.0\n{extra}Section: {section}\nDescription: {short}\nDescription-md5: {md5}\n\n"


@pytest.fixture
def small_lists(tmp_path, rng):
    """A folder of apt lists: two suites (one .xz, one plain) sharing a package, a contrib/ section,
    and a gzipped Translation-en with long descriptions for some of them. Section sizes are random."""
    sizes = {"utils": int(rng.integers(3, 7)), "devel": int(rng.integers(3, 7)), "rare": 1}
    main, expected = [], {}
    for section, size in sizes.items():
        for i in range(size):
            name = f"{section}-pkg{i}"
            short = f"{section} tool number {rng.integers(1000)}"
            main.append(_stanza(name, section if i else f"contrib/{section}", short, f"md5{name}",
                                extra="Depends: libc6 (>= 2.36),\n libfoo\n"))
            expected[name] = (section, short)
    shared = "utils-pkg0"
    updates = _stanza(shared, "utils", "the updated short line", "md5new")
    translation = (f"Package: {shared}\nDescription-md5: md5new\nDescription-en: the updated short line\n"
                   " First paragraph of the long text.\n .\n Second paragraph.\n\n"
                   # the old stanza's translation, which must not be used
                   f"Package: {shared}\nDescription-md5: md5{shared}\nDescription-en: old\n old long text\n\n")
    # "..._bookworm-updates_..." sorts before "..._bookworm_main_...": the update is the first stanza.
    with lzma.open(tmp_path / "x_bookworm_main_binary-amd64_Packages.xz", "wt") as f:
        f.write("".join(main))
    (tmp_path / "x_bookworm-updates_main_binary-amd64_Packages").write_text(updates)
    with gzip.open(tmp_path / "x_bookworm-updates_main_i18n_Translation-en.gz", "wt") as f:
        f.write(translation)
    (tmp_path / "x_bookworm_InRelease").write_text("not a list")
    expected[shared] = ("utils", "the updated short line\nFirst paragraph of the long text.\n\nSecond paragraph.")
    return tmp_path, sizes, expected


@pytest.mark.parametrize("use_deb822", [False, pytest.param(True, marks=pytest.mark.skipif(
    not HAVE_DEB822, reason="python-debian not installed"))])
def test_debian_loader_on_small_lists(small_lists, use_deb822):
    folder, sizes, expected = small_lists
    assert [os.path.basename(p) for p in list_files(folder, "Packages")] == [
        "x_bookworm-updates_main_binary-amd64_Packages", "x_bookworm_main_binary-amd64_Packages.xz"]
    texts, y, sections, names = load_debian_descriptions(str(folder), min_section_size=2, use_deb822=use_deb822)
    kept = sorted(s for s, n in sizes.items() if n >= 2)
    assert sections == tuple(kept)  # "rare" has 1 package; "contrib/" prefixes are dropped
    assert names == sorted(n for n, (s, _) in expected.items() if s in kept)
    for text, label, name in zip(texts, y, names):
        assert sections[label] == expected[name][0]
        assert text == expected[name][1]
    assert np.bincount(y).tolist() == [sizes[s] for s in kept]


def test_debian_loader_env_var_and_errors(small_lists, tmp_path_factory, monkeypatch):
    folder, sizes, _ = small_lists
    monkeypatch.setenv("GPUML_APT_LISTS", str(folder))
    texts, y, sections, names = load_debian_descriptions(min_section_size=1, use_deb822=False)
    assert len(sections) == len(sizes) and len(texts) == sum(sizes.values())
    with pytest.raises(ValueError, match="min_section_size"):
        load_debian_descriptions(min_section_size=0)
    with pytest.raises(ValueError, match="no section"):
        load_debian_descriptions(min_section_size=100, use_deb822=False)
    with pytest.raises(FileNotFoundError, match="GPUML_APT_LISTS"):
        load_debian_descriptions(str(tmp_path_factory.mktemp("empty")))


def test_debian_loader_on_apt_lists():
    """The real lists ($GPUML_APT_LISTS or /var/lib/apt/lists), when this machine has them."""
    try:
        texts, y, sections, names = load_debian_descriptions(use_deb822=False)
    except FileNotFoundError as error:
        pytest.skip(f"no apt lists: {error}")
    # Debian main alone has tens of thousands of packages in dozens of sections (documented size:
    # 62,211 packages in 43 sections on bookworm); the bounds allow other releases and mirrors.
    assert len(texts) == len(y) == len(names) > 10_000
    assert 10 <= len(sections) <= 100
    assert names == sorted(set(names))
    assert all(isinstance(t, str) and t.strip() for t in texts)
    assert all("/" not in s for s in sections) and list(sections) == sorted(sections)
    assert y.dtype == np.int64 and np.bincount(y, minlength=len(sections)).min() >= MIN_SECTION_SIZE
    # Deterministic: a second read of the same lists gives the same rows.
    texts_again, y_again, sections_again, names_again = load_debian_descriptions(use_deb822=False)
    assert texts_again == texts and np.array_equal(y_again, y) and names_again == names


# ---- synthetic TF-IDF-like sparse matrix ------------------------------------------------------


def test_sparse_tfidf_structure(rng):
    seed = int(rng.integers(2**31))
    n_rows, n_features = 3000, 1 << 18
    X, y = make_sparse_tfidf(n_rows, seed=seed)
    assert isinstance(X, sp.csr_matrix) and X.shape == (n_rows, n_features) and X.dtype == np.float32
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
    X.check_format(full_check=True)
    # Canonical: sorted column indices without duplicates in every row.
    canonical = X.copy()
    canonical.sum_duplicates()
    assert canonical.nnz == X.nnz and np.array_equal(canonical.indices, X.indices)
    # Distinct terms a row: 100 expected by construction; their per-row spread is about 10, so the
    # mean of 3000 rows is within 1 with overwhelming probability.
    assert abs(X.nnz / n_rows - 100) < 1.0
    assert (X.data > 0).all() and np.isfinite(X.data).all()
    row_norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(row_norms, 1.0, rtol=1e-5)  # float32 rows scaled to unit L2 norm
    assert y.dtype == np.int64 and set(np.unique(y)) <= {0, 1}
    assert 0.3 < y.mean() < 0.7  # a standardized margin: classes roughly balanced


def test_sparse_tfidf_power_law(rng):
    X, _ = make_sparse_tfidf(20000, seed=int(rng.integers(2**31)))
    frequency = np.sort(np.bincount(X.indices, minlength=X.shape[1]))[::-1]
    # Document frequencies of the columns ranked 100 to 2000 fall like rank^-1 (the default
    # exponent; the top ranks saturate near every row, the tail is Poisson noise): the slope of
    # log frequency against log rank, fitted over that range, is within 0.15 of -1.
    ranks = np.arange(100, 2000)
    slope = np.polyfit(np.log(ranks + 1), np.log(frequency[ranks]), 1)[0]
    assert -1.15 < slope < -0.85, slope


def test_sparse_tfidf_deterministic_and_prefix_stable(rng):
    seed = int(rng.integers(2**31))
    X, y = make_sparse_tfidf(10000, seed=seed)
    X_again, y_again = make_sparse_tfidf(10000, seed=seed)
    assert (X != X_again).nnz == 0 and np.array_equal(y, y_again)
    # Chunks come from their own streams: fewer rows give the first rows of the larger draw.
    X_head, y_head = make_sparse_tfidf(5000, seed=seed)
    assert (X_head != X[:5000]).nnz == 0 and np.array_equal(y_head, y[:5000])
    X_other, _ = make_sparse_tfidf(10000, seed=seed + 1)
    assert (X_other != X).nnz > 0


def test_sparse_tfidf_label_is_learnable(rng):
    from sklearn.linear_model import LogisticRegression

    X, y, extras = make_sparse_tfidf(24000, seed=int(rng.integers(2**31)), return_extras=True)
    model = LogisticRegression().fit(X[:20000], y[:20000])
    held_out = model.score(X[20000:], y[20000:])
    # The rule's own accuracy is about 0.85 (sigmoid(4 m) noise); 20k rows of 262,144 columns learn
    # part of it: well above chance (0.5 +- 0.016 at 4000 rows), below the rule's own.
    assert 0.8 < extras["bayes_accuracy"] < 0.9
    assert 0.6 < held_out <= extras["bayes_accuracy"] + 0.03


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_rows=0), "n_rows"), (dict(n_rows=10, n_features=1), "n_features"),
    (dict(n_rows=10, nnz_per_row=0), "nnz_per_row"), (dict(n_rows=10, n_features=100, nnz_per_row=60), "nnz_per_row"),
    (dict(n_rows=10, zipf_exponent=0.0), "zipf_exponent"), (dict(n_rows=2.5), "n_rows"),
])
def test_sparse_tfidf_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_sparse_tfidf(**kwargs)
