#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""rdma-core's own conformance suite (pyverbs, tests/run_tests.py) on every
node against its own rxe0, rxe_rs compared with rdma_rxe:

  qemu-test/run --drivers rs,c qemu-test/tests/verbs/rdma_core_suite.py

Debian installs the suite with python3-pyverbs under
/usr/share/doc/rdma-core/tests, some files gzipped: each node copies it to
a temporary folder, unpacks it and runs all of it with /usr/bin/python3
(the pyenv python3 first in PATH has no pyverbs), recording every test's
outcome and skip reason. Node 1 then prints each driver's tally (ok,
errors, failures, skipped), the skip reasons, and fails when:

  - an rxe_rs node has any error or failure;
  - a test passes on rdma_rxe but not on rxe_rs;
  - a test skips on rxe_rs but not on rdma_rxe.

It also lists the tests that pass on rxe_rs only. With no rdma_rxe node
only the first rule applies. The suite draws random sizes, so tallies move
a little from run to run.
"""

import collections
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SUITE = "/usr/share/doc/rdma-core/tests"
NAMES = {"rs": "rxe_rs", "c": "rdma_rxe"}
# The whole suite takes about a minute on the plain kernel.
RUN_LIMIT = 1200


def unpack(dest):
    """Copies the suite to dest/tests, gunzipping the .gz files."""
    tests = os.path.join(dest, "tests")
    os.mkdir(tests)
    for name in os.listdir(SUITE):
        src = os.path.join(SUITE, name)
        if name.endswith(".gz"):
            with gzip.open(src, "rb") as f, open(os.path.join(tests, name[:-3]), "wb") as g:
                shutil.copyfileobj(f, g)
        elif os.path.isfile(src):
            shutil.copy(src, tests)
    return tests


def run_suite(tests, out, args):
    """In a child process: runs the suite in folder tests as run_tests.py
    does, with unittest's verbose output, and writes each test's outcome
    ([id, outcome, detail]) as JSON to out."""
    import unittest
    from importlib.machinery import SourceFileLoader

    sys.path.insert(0, tests)
    from args_parser import parser

    sys.argv = [os.path.join(tests, "run_tests.py")] + args
    parser.parse_args()
    module = SourceFileLoader("tests", os.path.join(tests, "__init__.py")).load_module()
    records = []

    class Result(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)
            records.append([test.id(), "ok", ""])

        def addError(self, test, err):
            super().addError(test, err)
            records.append([test.id(), "error", self._exc_info_to_string(err, test)])

        def addFailure(self, test, err):
            super().addFailure(test, err)
            records.append([test.id(), "failure", self._exc_info_to_string(err, test)])

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            records.append([test.id(), "skipped", reason])

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            records.append([test.id(), "expected failure", ""])

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            records.append([test.id(), "unexpected success", ""])

    suite = unittest.TestLoader().loadTestsFromModule(module)
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Result)
    runner.run(suite)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(records, f)


def tally(records):
    counts = collections.Counter(outcome for outcome, _ in records.values())
    return (f"{counts['ok']} ok, {counts['error']} errors, {counts['failure']} failures, "
            f"{counts['skipped']} skipped"
            + (f", {counts['expected failure']} expected failures"
               if counts["expected failure"] else "")
            + (f", {counts['unexpected success']} unexpected successes"
               if counts["unexpected success"] else ""))


def short(detail, lines=12):
    """The last lines of a traceback: where and why."""
    return "\n".join("      " + line for line in detail.rstrip().splitlines()[-lines:])


def compare(shared, count):
    """Node 1: tallies, skip reasons and the verdict; the exit status."""
    nodes = []
    for n in range(1, count + 1):
        with open(f"{shared}/suite.node{n}.json", encoding="utf-8") as f:
            data = json.load(f)
        records = {test: (outcome, detail) for test, outcome, detail in data["records"]}
        nodes.append((n, data["driver"], records))
        print(f"TALLY node{n} {NAMES.get(data['driver'], data['driver'])}: {tally(records)}"
              f" ({data['seconds']} s)")
    problems = []
    rs_nodes = [x for x in nodes if x[1] == "rs"]
    c_nodes = [x for x in nodes if x[1] == "c"]
    for n, _, records in rs_nodes:
        for test, (outcome, detail) in sorted(records.items()):
            if outcome in ("error", "failure", "unexpected success"):
                problems.append(f"node{n} rxe_rs: {test}: {outcome.upper()}")
                print(f"FAIL node{n} rxe_rs {outcome.upper()} {test}\n{short(detail)}")
    for cn, _, c_rec in c_nodes:
        for test, (outcome, detail) in sorted(c_rec.items()):
            if outcome in ("error", "failure"):
                print(f"INFO node{cn} rdma_rxe {outcome.upper()} {test}\n{short(detail, 4)}")
    for rn, _, rs_rec in rs_nodes:
        for cn, _, c_rec in c_nodes:
            pair = f"node{rn} rxe_rs vs node{cn} rdma_rxe"
            only_rs = []
            for test in sorted(set(rs_rec) | set(c_rec)):
                rs_out, rs_why = rs_rec.get(test, ("missing", ""))
                c_out, c_why = c_rec.get(test, ("missing", ""))
                if c_out == "ok" and rs_out != "ok":
                    what = (f"{pair}: {test}: ok on rdma_rxe, {rs_out} on rxe_rs"
                            + (f" ({rs_why})" if rs_out == "skipped" else ""))
                    problems.append(what)
                    print(f"FAIL {what}")
                if rs_out == "skipped" and c_out not in ("skipped", "ok"):
                    problems.append(f"{pair}: {test}: skipped on rxe_rs only ({rs_why})")
                    print(f"FAIL {pair}: {test}: skipped on rxe_rs only: {rs_why}")
                if rs_out == "ok" and c_out != "ok":
                    only_rs.append(f"{test} ({c_out} on rdma_rxe"
                                   + (f": {c_why}" if c_out == "skipped" else "") + ")")
                if rs_out == c_out == "skipped" and rs_why != c_why:
                    print(f"INFO {pair}: {test}: skip reasons differ:\n"
                          f"      rxe_rs:   {rs_why}\n      rdma_rxe: {c_why}")
            print(f"INFO {pair}: {len(only_rs)} tests pass on rxe_rs only")
            for line in only_rs:
                print(f"      {line}")
    # Every skip reason, with how many tests each driver skips for it.
    reasons = collections.defaultdict(collections.Counter)
    for n, driver, records in nodes:
        for outcome, why in records.values():
            if outcome == "skipped":
                reasons[why.strip().splitlines()[0] if why.strip() else "(none)"][f"node{n}"] += 1
    print("INFO skip reasons (tests skipped per node):")
    for why, per_node in sorted(reasons.items(), key=lambda x: -sum(x[1].values())):
        counts = " ".join(f"node{n}={per_node[f'node{n}']}" for n, _, _ in nodes)
        print(f"      {counts}  {why}")
    for n, _, records in nodes:
        if not records:
            problems.append(f"node{n}: no test ran")
    print(f"rdma_core_suite: {len(problems)} problems")
    for p in problems:
        print(f"  {p}")
    return 1 if problems else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--run":
        run_suite(sys.argv[2], sys.argv[3], sys.argv[4:])
        return 0
    node = int(os.environ["NODE_INDEX"])
    count = int(os.environ["NODE_COUNT"])
    shared = os.environ["SHARED_DIR"]
    out_dir = os.environ.get("OUT_DIR", ".")
    driver = os.environ.get("RXE_DRIVER", "")
    dev = os.environ.get("RXE_DEV", "rxe0")
    lib = os.path.join(os.environ["REPO"], "qemu-test", "lib", "lib.sh")

    work = tempfile.mkdtemp(prefix="rdma-core-suite.")
    tests = unpack(work)
    out = os.path.join(work, "records.json")
    log = os.path.join(out_dir, "suite.log")
    print(f"INFO node{node} ({NAMES.get(driver, driver)}): rdma-core's suite on {dev}, "
          f"output in {log}", flush=True)
    start = time.monotonic()
    with open(log, "w", encoding="utf-8") as f:
        try:
            status = subprocess.run(
                ["/usr/bin/python3", os.path.abspath(__file__), "--run", tests, out, "--dev", dev],
                stdout=f, stderr=subprocess.STDOUT, cwd=work, timeout=RUN_LIMIT,
                check=False).returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
    seconds = round(time.monotonic() - start)
    records = []
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            records = json.load(f)
    else:
        print(f"FAIL node{node}: the suite ended ({status}) without its results; "
              f"the end of its output:")
        with open(log, encoding="utf-8", errors="replace") as f:
            print("".join(f.readlines()[-30:]))
    shutil.rmtree(work, ignore_errors=True)
    tmp = f"{shared}/suite.node{node}.json.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"driver": driver, "seconds": seconds, "records": records}, f)
    os.rename(tmp, f"{shared}/suite.node{node}.json")
    print(f"INFO node{node}: suite done in {seconds} s", flush=True)
    # The other nodes' results, then node 1 compares.
    if subprocess.run(["bash", "-c", '. "$1" && barrier suite-done ' + str(RUN_LIMIT + 60),
                       "lib.sh", lib], check=False).returncode:
        return 1
    rc = compare(shared, count) if node == 1 else 0
    if not records:
        rc = 1
    sys.stdout.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main())
