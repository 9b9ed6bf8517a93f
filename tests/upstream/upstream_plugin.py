"""pytest plugin of the upstream harness (tests/upstream/run.py loads it with -p upstream_plugin).

- Swaps scikit-learn's estimators (and networkx.pagerank) for gpuml's before the test modules are
  imported (swapped.install()).
- Deselects the tests about other estimators: a test runs when a parameter of its parametrization
  names a target estimator of its file, or, with no estimator among its parameters, when its body
  (or a check_* function of the test module that it calls) names one (TARGETS below).
- Marks each test sparse (ids or parameters naming a sparse container, a body building one, or a
  failure saying sparse data was passed) or dense.
- Turns the failures listed in expected_failures.txt into expected failures (shown as x), when
  the failure's message matches its group's pattern (GROUPS); any other failure stays a failure.
- A per-test timeout (SIGALRM, GPUML_UPSTREAM_TIMEOUT seconds, default 120), and faulthandler as
  the backstop for a hang inside C code: it dumps the stacks and ends the process.
- Writes every test's outcome to the JSON file named by GPUML_UPSTREAM_RESULTS, for run.py.
"""

import faulthandler
import inspect
import json
import os
import re
import signal
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
EXPECTED_FAILURES = HERE / "expected_failures.txt"
TIMEOUT_S = int(os.environ.get("GPUML_UPSTREAM_TIMEOUT", "120"))

# Test module (path inside site-packages) -> {target name: regex that finds it in a test's body}.
_SK = r"(?<![\w.]){}\b"  # a bare name: KMeans but not MiniBatchKMeans or self.KMeans
TARGETS = {
    "sklearn/cluster/tests/test_k_means.py": ("KMeans",),
    "sklearn/linear_model/tests/test_base.py": ("LinearRegression",),
    "sklearn/linear_model/tests/test_ridge.py": ("Ridge",),
    "sklearn/linear_model/tests/test_coordinate_descent.py": ("Lasso", "ElasticNet"),
    "sklearn/linear_model/tests/test_logistic.py": ("LogisticRegression",),
    "sklearn/decomposition/tests/test_pca.py": ("PCA",),
    "sklearn/decomposition/tests/test_truncated_svd.py": ("TruncatedSVD",),
    "sklearn/ensemble/tests/test_forest.py": ("RandomForestClassifier", "RandomForestRegressor"),
    "sklearn/tests/test_base.py": ("KMeans", "PCA"),
    "networkx/algorithms/link_analysis/tests/test_pagerank.py": ("pagerank", "_pagerank_scipy"),
}
TARGET_PATTERNS = {
    "networkx/algorithms/link_analysis/tests/test_pagerank.py": re.compile(r"\bnx\.pagerank\(|\b_pagerank_scipy\("),
}
MODULES = {path: path[: -len(".py")].replace("/", ".") for path in TARGETS}

# Failure groups, in the order a message is tried: name -> (reason, regex over "ExceptionType: message").
# A failure that matches none is "other"; timeouts are never expected.
GROUPS = {
    "unknown-parameter": (
        "gpuml's estimator lacks this constructor parameter of scikit-learn's (issue 23 item 1)",
        r"unexpected keyword argument|Invalid parameter .* for estimator",
    ),
    "sparse-input": (
        "sparse X or y: gpuml takes dense arrays only (issue 13)",
        r"Sparse data was passed|sparse inputs",
    ),
    "multi-output": (
        "multi-output y (2-d targets) for the forests",
        r"y should be a 1d array|supports one target|multi-?output",
    ),
    "missing-values": (
        "NaN in X: scikit-learn 1.9's forests accept missing values, gpuml's raise",
        r"contains NaN|does not accept missing values",
    ),
    "unsupported-value": (
        "a parameter value scikit-learn accepts and gpuml does not (arpack, mle, callables, criteria, solvers...)",
        r"^ValueError: .*(must be|one of|not supported|unsupported)|^NotImplementedError",
    ),
    "private-attribute": (
        "the test reads or calls scikit-learn's private internals (_n_init, _fit_svd_solver, ...)",
        r"^AttributeError: .* has no attribute '_",
    ),
    "missing-attribute": (
        "a method or fitted attribute scikit-learn has and gpuml does not (estimators_, score, get_covariance, ...)",
        r"^AttributeError: |has no len\(\)|not subscriptable|not iterable",
    ),
    "no-warning-or-error": (
        "scikit-learn warns or raises here (its messages, ConvergenceWarning, FutureWarning) and gpuml does not, "
        "or says it differently",
        r"DID NOT (WARN|RAISE)|Regex pattern did not match|[Nn]o warnings of type|warning.*(was|were) raised",
    ),
    "result-differs": (
        "a numerical result differs from scikit-learn's beyond the test's tolerance (to triage one by one)",
        r"^AssertionError",
    ),
    "other": ("another exception (its message is in run.py --report's results.json)", r""),
}
COMPILED = {name: re.compile(pattern) for name, (_, pattern) in GROUPS.items()}

_SPARSE_ID = re.compile(r"csr|csc|coo|bsr|dok|lil|dia_|sparse", re.IGNORECASE)
_SPARSE_BODY = re.compile(
    r"\b(sp|sparse|scipy\.sparse)\.(csr|csc|coo|lil|dok|bsr|dia)_(matrix|array)\b|\bsp(arse)?\.(random|eye|rand)\("
    r"|\b[A-Z]+_CONTAINERS\b|\b(csr|csc|coo|sparse)_container\("
)


class UpstreamTimeout(Exception):
    pass


def classify(message):
    for name, pattern in COMPILED.items():
        if pattern.search(message):
            return name
    return "other"


def read_expected(path=EXPECTED_FAILURES):
    """{test id: group} from expected_failures.txt ([group] headers, then one test id a line)."""
    expected, group = {}, None
    if not path.exists():
        return expected
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        header = re.match(r"^\[([\w-]+)\]", line)
        if header:
            group = header.group(1)
            if group not in GROUPS:
                raise ValueError(f"{path}: unknown group [{group}]; the groups are {list(GROUPS)}")
        else:
            expected[line] = group
    return expected


def _site_key(item):
    """The item's id with its path relative to site-packages: sklearn/.../test_x.py::test_y[ids]."""
    path = Path(str(item.path)).resolve().as_posix()
    for root in ("sklearn/", "networkx/"):
        at = path.rfind("/site-packages/" + root)
        if at >= 0:
            rel = path[at + len("/site-packages/"):]
            break
    else:
        return None, item.nodeid
    return rel, rel + "::" + item.nodeid.split("::", 1)[1]


def _body(function):
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return ""
    at = re.search(r"^\s*(async\s+)?def\s", source, re.MULTILINE)  # drop the decorators
    return source[at.start():] if at else source


def _body_with_helpers(function, module_globals, depth=3):
    """The body of `function` and of the test module's own check_* functions it calls (to a depth of
    3): a test that builds its estimator in such a helper is still about that estimator."""
    seen, texts, todo = set(), [], [(function, 0)]
    while todo:
        current, level = todo.pop()
        text = _body(current)
        texts.append(text)
        if level == depth:
            continue
        for name in set(re.findall(r"\b([A-Za-z_]\w*)\(", text)) - seen:
            helper = module_globals.get(name)
            # check_* only: scikit-learn's convention for a test's body moved out; _helpers that
            # compute a reference (with Ridge, say, for a RidgeCV test) do not make the test Ridge's.
            if (name.startswith("check") and inspect.isfunction(helper)
                    and helper.__module__ == module_globals.get("__name__")):
                seen.add(name)
                todo.append((helper, level + 1))
    return "\n".join(texts)


_KNOWN_ESTIMATORS = None


def _known_names():
    """Names that, as a test parameter, make it about one estimator or algorithm."""
    global _KNOWN_ESTIMATORS
    if _KNOWN_ESTIMATORS is None:
        from sklearn.utils.discovery import all_estimators

        names = {name for name, _ in all_estimators()}
        names |= {"pagerank", "_pagerank_python", "_pagerank_numpy", "_pagerank_scipy", "google_matrix"}
        _KNOWN_ESTIMATORS = names
    return _KNOWN_ESTIMATORS


def _param_names(value):
    """The estimator / algorithm names a parametrization value refers to."""
    import functools

    if isinstance(value, functools.partial):
        value = value.func
    if isinstance(value, str):
        name = value
    elif isinstance(value, type):
        name = value.__name__
    elif callable(value) and hasattr(value, "__name__"):
        name = value.__name__
    elif hasattr(value, "get_params"):
        name = type(value).__name__
    else:
        return set()
    return {name} & _known_names()


def _is_sparse_value(value):
    import scipy.sparse as sp

    if sp.issparse(value):
        return True
    return isinstance(value, type) and value.__module__.startswith("scipy.sparse")


class Harness:
    def __init__(self, config):
        self.config = config
        self.expected = read_expected()
        self.records = {}
        self.deselected = {}
        self.current = os.environ.get("GPUML_UPSTREAM_CURRENT")

    # -- selection ----------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        import swapped

        keep, drop = [], []
        for item in items:
            rel, key = _site_key(item)
            targets = TARGETS.get(rel)
            if targets is None:
                reason = "not one of the harness's test modules"
            else:
                if rel.startswith("sklearn/"):  # the swap took: the module sees gpuml's classes
                    module_globals = item.module.__dict__
                    for name in targets:
                        if name in module_globals and module_globals[name] is not getattr(swapped, name):
                            raise RuntimeError(f"{rel}: {name} is not gpuml's; swapped.install() ran too late")
                reason = self._deselect_reason(item, rel, targets)
            if reason:
                drop.append(item)
                self.deselected[key] = {"file": rel, "reason": reason}
            else:
                keep.append(item)
                item.stash[_KEY] = (rel, key, self._is_sparse(item))
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep

    def _deselect_reason(self, item, rel, targets):
        callspec = getattr(item, "callspec", None)
        named = set()
        if callspec is not None:
            for value in callspec.params.values():
                named |= _param_names(value)
        if named:
            if named & set(targets):
                return None
            return "parametrized with other estimators: " + ", ".join(sorted(named))
        pattern = TARGET_PATTERNS.get(rel) or re.compile("|".join(_SK.format(re.escape(t)) for t in targets))
        if pattern.search(_body_with_helpers(item.function, item.module.__dict__)):
            return None
        return "its body uses none of " + ", ".join(targets)

    def _is_sparse(self, item):
        callspec = getattr(item, "callspec", None)
        if callspec is not None:
            if _SPARSE_ID.search(callspec.id):
                return True
            if any(_is_sparse_value(v) for v in callspec.params.values()):
                return True
        return bool(_SPARSE_BODY.search(_body(item.function)))

    # -- running ------------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.current:  # which test was running, if the process dies
            Path(self.current).write_text(item.nodeid)

        def on_alarm(signum, frame):
            raise UpstreamTimeout(f"timeout: the test ran past {TIMEOUT_S} s")

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(TIMEOUT_S)
        faulthandler.dump_traceback_later(TIMEOUT_S + 30, exit=True)  # a hang the alarm cannot break
        try:
            yield
        finally:
            signal.alarm(0)
            faulthandler.cancel_dump_traceback_later()
            signal.signal(signal.SIGALRM, previous)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        info = item.stash.get(_KEY, None)
        if info is None:
            return
        rel, key, sparse = info
        record = self.records.setdefault(key, {"file": rel, "sparse": sparse, "outcome": "passed"})
        if report.when == "call" and report.passed and record["outcome"] == "passed":
            record["expected"] = self.expected.get(key)
        if report.skipped:
            if record["outcome"] == "passed":
                record["outcome"] = "upstream-xfail" if hasattr(report, "wasxfail") else "skipped"
            return
        if not report.failed or record["outcome"] == "failed":
            return
        if call.excinfo is not None:
            message = f"{call.excinfo.typename}: {call.excinfo.value}"
        else:  # e.g. an upstream strict xfail that passed
            message = str(report.longrepr).strip().splitlines()[-1] if report.longrepr else "failed"
        message = " ".join(message.split())[:400]
        group = "timeout" if call.excinfo is not None and call.excinfo.errisinstance(UpstreamTimeout) else classify(message)
        record.update(outcome="failed", group=group, message=message, when=report.when)
        if group == "sparse-input":  # sparse data from a module-level fixture the static check cannot see
            record["sparse"] = True
        listed = self.expected.get(key)
        record["expected"] = listed
        if listed is not None and listed == group and group != "timeout":
            report.outcome = "skipped"  # shown as x: an expected failure of a listed reason
            report.wasxfail = f"[{group}] {message[:200]}"

    def pytest_sessionfinish(self, session, exitstatus):
        path = os.environ.get("GPUML_UPSTREAM_RESULTS")
        if path:
            Path(path).write_text(json.dumps({"tests": self.records, "deselected": self.deselected}, indent=0))


_KEY = pytest.StashKey()


def pytest_configure(config):
    import swapped

    swapped.install()
    config.pluginmanager.register(Harness(config), "gpuml-upstream-harness")
