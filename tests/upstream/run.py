#!/usr/bin/env python3
"""The upstream harness: scikit-learn 1.9.1's and NetworkX's own tests, run on gpuml's estimators.

    GPUML_LIBRARY=build/libgpuml.so .venv/bin/python tests/upstream/run.py [options] [-- pytest args]

Runs the test modules of upstream_plugin.TARGETS from the installed packages (nothing of theirs is
copied here) in one pytest process with upstream_plugin, then prints the pass rate per file and
overall (all relevant tests; dense ones only) and the failures by group. Exits 1 on a real failure
(a failure not in expected_failures.txt with its group), a crash or a hang, or when the dense pass
rate falls below the one recorded in ratchet.json for the device.

Extra pytest arguments after -- (e.g. -- --tb=short -k test_name) come after run.py's own.

Options:
  --device cpu|cuda   the estimators' device (default: $GPUML_UPSTREAM_DEVICE, else cpu)
  --update-ratchet    record the dense pass rate in ratchet.json when it rose (or GPUML_UPSTREAM_UPDATE_RATCHET=1)
  --write-expected    rewrite expected_failures.txt from this run's failures, grouped by reason
  --report DIR        write results.json (every test's outcome and message) and summary.txt to DIR
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RATCHET = HERE / "ratchet.json"
SKLEARN_VERSION = "1.9.1"  # scripts/requirements-test.txt's
sys.path.insert(0, str(HERE))

import upstream_plugin as plugin  # noqa: E402


def _rate(passed, total):
    return passed / total if total else 1.0


def _pct(passed, total):
    return f"{100 * _rate(passed, total):5.1f}% ({passed}/{total})"


def summarize(results):
    """Per file and overall: [passed, run] for all relevant tests and for dense ones, skips, deselections."""
    rows = defaultdict(lambda: {"all": [0, 0], "dense": [0, 0], "skipped": 0, "deselected": 0})
    for record in results["deselected"].values():
        rows[record["file"]]["deselected"] += 1
    for record in results["tests"].values():
        row = rows[record["file"]]
        if record["outcome"] in ("skipped", "upstream-xfail"):
            row["skipped"] += 1
            continue
        passed = record["outcome"] == "passed"
        for kind in ("all",) + (() if record["sparse"] else ("dense",)):
            row[kind][0] += passed
            row[kind][1] += 1
    total = {"all": [0, 0], "dense": [0, 0], "skipped": 0, "deselected": 0}
    for path, row in rows.items():
        if path.startswith("sklearn/"):  # the overall rate is scikit-learn's; NetworkX's is its own line
            for kind in ("all", "dense"):
                total[kind][0] += row[kind][0]
                total[kind][1] += row[kind][1]
            total["skipped"] += row["skipped"]
            total["deselected"] += row["deselected"]
    return dict(sorted(rows.items())), total


def report_text(results, device, seconds):
    rows, total = summarize(results)
    lines = [f"== upstream harness: gpuml on device={device}, {seconds:.0f} s", ""]
    lines.append(f"{'file':58} {'all relevant':>18} {'dense only':>18} {'skipped':>8} {'deselected':>10}")
    for path, row in rows.items():
        lines.append(f"{path:58} {_pct(*row['all']):>18} {_pct(*row['dense']):>18} {row['skipped']:>8} {row['deselected']:>10}")
    lines.append(f"{'scikit-learn overall':58} {_pct(*total['all']):>18} {_pct(*total['dense']):>18} "
                 f"{total['skipped']:>8} {total['deselected']:>10}")
    groups = Counter(r["group"] for r in results["tests"].values() if r["outcome"] == "failed")
    dense_groups = Counter(r["group"] for r in results["tests"].values() if r["outcome"] == "failed" and not r["sparse"])
    lines += ["", "failures by group (all / dense):"]
    for name in list(plugin.GROUPS) + ["timeout"]:
        if groups[name]:
            reason = plugin.GROUPS.get(name, ("the test ran past the per-test timeout",))[0]
            lines.append(f"  {name:22} {groups[name]:5} / {dense_groups[name]:<5} {reason}")
    return lines, total


def real_failures(results):
    out = []
    for key, record in results["tests"].items():
        if record["outcome"] == "failed" and (record["group"] == "timeout" or record.get("expected") != record["group"]):
            listed = record.get("expected")
            why = f"listed as [{listed}] but failed as [{record['group']}]" if listed else f"[{record['group']}]"
            out.append(f"  {key}: {why} {record['message'][:300]}")
    return out


def write_expected(results, path=plugin.EXPECTED_FAILURES):
    by_group = defaultdict(list)
    for key, record in results["tests"].items():
        if record["outcome"] == "failed" and record["group"] != "timeout":
            by_group[record["group"]].append(key)
    lines = [
        "# The upstream harness's expected failures (tests/upstream/run.py), grouped by reason.",
        "# Written by `run.py --write-expected` from a real run; a listed test must fail with a message",
        "# matching its group's pattern (upstream_plugin.GROUPS), or it counts as a real failure.",
        "# Remove a line when the test passes (run.py lists those).",
    ]
    for name in plugin.GROUPS:
        if by_group[name]:
            lines += ["", f"[{name}] {plugin.GROUPS[name][0]} ({len(by_group[name])} tests)"]
            lines += sorted(by_group[name])
    path.write_text("\n".join(lines) + "\n")


def check_ratchet(total, device, update):
    records = json.loads(RATCHET.read_text()) if RATCHET.exists() else {}
    passed, run = total["dense"]
    rate = round(_rate(passed, run), 4)
    recorded = records.get(device, records.get("cpu"))
    lines, ok = [], True
    if recorded is None:
        lines.append(f"ratchet: no rate recorded for {device}; dense pass rate {rate:.4f}")
    elif rate < recorded["dense_rate"]:
        ok = False
        lines.append(f"RATCHET: the dense pass rate fell to {rate:.4f} ({passed}/{run}) below the recorded "
                     f"{recorded['dense_rate']:.4f} ({recorded['dense_passed']}/{recorded['dense_run']}) for {device}")
    else:
        lines.append(f"ratchet: dense pass rate {rate:.4f} ({passed}/{run}) >= recorded {recorded['dense_rate']:.4f}")
    if update and ok and (device not in records or rate > records[device]["dense_rate"]):
        all_passed, all_run = total["all"]
        records[device] = {"dense_rate": rate, "dense_passed": passed, "dense_run": run,
                           "all_rate": round(_rate(all_passed, all_run), 4), "all_passed": all_passed, "all_run": all_run}
        RATCHET.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")
        lines.append(f"ratchet: recorded {rate:.4f} for {device} in {RATCHET.relative_to(REPO)}")
    return ok, lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=os.environ.get("GPUML_UPSTREAM_DEVICE", "cpu"), choices=("cpu", "cuda"))
    parser.add_argument("--update-ratchet", action="store_true",
                        default=os.environ.get("GPUML_UPSTREAM_UPDATE_RATCHET", "") == "1")
    parser.add_argument("--write-expected", action="store_true")
    parser.add_argument("--report", type=Path)
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)

    import sklearn

    site = Path(sklearn.__file__).resolve().parents[1]
    if sklearn.__version__ != SKLEARN_VERSION:  # other test modules and ids: listed failures may not match
        print(f"note: scikit-learn {sklearn.__version__} is installed; expected_failures.txt and ratchet.json "
              f"were made with {SKLEARN_VERSION}")
    with tempfile.TemporaryDirectory(prefix="gpuml-upstream-") as tmp:
        results_path, current_path = Path(tmp, "results.json"), Path(tmp, "current")
        env = dict(os.environ, GPUML_UPSTREAM_DEVICE=args.device, GPUML_UPSTREAM_RESULTS=str(results_path),
                   GPUML_UPSTREAM_CURRENT=str(current_path), PYTHONFAULTHANDLER="1")
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(REPO / "bindings" / "python")]
                                            + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        command = [sys.executable, "-m", "pytest", "-p", "upstream_plugin", "-p", "no:cacheprovider", "-q",
                   "--tb=no",  # formatting ~1500 expected tracebacks took 5/6 of the time; run.py prints the messages
                   "--rootdir", str(site), "--pyargs", *plugin.MODULES.values(), *args.pytest_args]
        start = time.monotonic()
        rc = subprocess.run(command, env=env, cwd=tmp).returncode
        seconds = time.monotonic() - start
        if not results_path.exists() or rc not in (0, 1):
            running = current_path.read_text() if current_path.exists() else "(none)"
            print(f"\nUPSTREAM HARNESS DID NOT FINISH (a crash, a hang past the timeout, or a usage error): "
                  f"pytest exit status {rc}; the test running was {running}")
            return 1
        results = json.loads(results_path.read_text())

    lines, total = report_text(results, args.device, seconds)
    failures = real_failures(results)
    newly_passing = sorted(k for k, r in results["tests"].items() if r["outcome"] == "passed" and r.get("expected"))
    if newly_passing:
        lines += ["", f"{len(newly_passing)} listed tests now pass; remove them (run.py --write-expected):"]
        lines += [f"  {key}" for key in newly_passing]
    if failures:
        lines += ["", f"REAL FAILURES ({len(failures)}): failed for a reason not in expected_failures.txt "
                  "(tracebacks: run.py -- --tb=short -k NAME)"] + failures
    ok, ratchet_lines = check_ratchet(total, args.device, args.update_ratchet and (not failures or args.write_expected))
    lines += [""] + ratchet_lines
    if args.write_expected:
        write_expected(results)
        lines.append(f"wrote {plugin.EXPECTED_FAILURES.relative_to(REPO)}")
    print("\n".join(lines))
    if args.report:
        args.report.mkdir(parents=True, exist_ok=True)
        (args.report / "results.json").write_text(json.dumps(results, indent=0, sort_keys=True))
        (args.report / "summary.txt").write_text("\n".join(lines) + "\n")
    return 0 if ok and (not failures or args.write_expected) else 1


if __name__ == "__main__":
    sys.exit(main())
