#!/usr/bin/env python3
"""Checks that ctest runs every Catch2 test case of every test binary, each under its own name.

catch_discover_tests registers one ctest test per name a binary lists and hands the name back to the
binary as its test spec. A name that does not survive that trip gives ctest tests that run nothing and
pass: a ';' makes CMake split the name into a list of pieces, each a spec matching no case; a
backslash, a leading '~' or a '*' at either end changes what the spec selects. So every registered
spec must select exactly one case, and every case a binary lists must be selected by some spec.

usage: catch_test_names.py CTEST BUILD_DIR BINARY...
"""
import json
import os
import subprocess
import sys


def names_selected(command, cwd):
    """The case names a test command selects, as the binary lists them."""
    run = subprocess.run(command + ["--list-test-names-only"], cwd=cwd, capture_output=True, text=True,
                         check=False)
    if run.returncode < 0:
        raise RuntimeError(f"{command[0]} died of signal {-run.returncode}: {run.stderr.strip()}")
    return [line for line in run.stdout.splitlines() if line]


def registered_tests(ctest, build_dir):
    """Every ctest test as (name, command, working directory)."""
    listing = subprocess.run([ctest, "--test-dir", build_dir, "--show-only=json-v1"], capture_output=True,
                             text=True, check=True)
    tests = []
    for test in json.loads(listing.stdout)["tests"]:
        if "command" not in test:
            continue
        cwd = build_dir
        for prop in test.get("properties", []):
            if prop["name"] == "WORKING_DIRECTORY":
                cwd = prop["value"]
        tests.append((test["name"], test["command"], cwd))
    return tests


def check_binary(binary, tests):
    """The problems of one binary's cases and the ctest tests that run it."""
    problems = []
    cases = names_selected([binary], os.path.dirname(binary))
    for case in cases:
        if ";" in case:
            problems.append(f"{binary}: case name contains ';', which ctest's discovery splits: {case!r}")
    run_by = {case: [] for case in cases}
    mine = [t for t in tests if os.path.realpath(t[1][0]) == os.path.realpath(binary)]
    if not mine:
        problems.append(f"{binary}: no ctest test runs it (catch_discover_tests missing?)")
    for name, command, cwd in mine:
        selected = names_selected(command, cwd)
        if len(selected) != 1:
            shown = selected[:3] + (["..."] if len(selected) > 3 else [])
            problems.append(f"ctest test {name!r} selects {len(selected)} cases of {binary}, not one: "
                            f"{shown!r}")
        for case in selected:
            run_by.setdefault(case, []).append(name)
    for case, names in run_by.items():
        if not names:
            problems.append(f"{binary}: case {case!r} is run by no ctest test")
    return len(cases), problems


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    ctest, build_dir, binaries = argv[1], argv[2], argv[3:]
    tests = registered_tests(ctest, build_dir)
    problems = []
    total = 0
    for binary in binaries:
        if not os.path.exists(binary):
            problems.append(f"{binary}: not built")
            continue
        count, found = check_binary(binary, tests)
        total += count
        problems += found
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{total} cases in {len(binaries)} binaries, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
