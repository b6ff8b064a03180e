#!/usr/bin/env python3
"""Prints criterion's median for every benchmark of a group, and its ratio to
a baseline in the same group, from target/criterion (after `cargo bench`).

The ratio is of median times (median / baseline median) unless --throughput
is given: then it is of throughputs (baseline median / median), so above 1
means faster than the baseline.

    python3 benches/ratios.py deadline_overhead [--baseline tokio_timeout]
    python3 benches/ratios.py server_overhead --baseline bare --throughput
"""
import argparse
import json
import pathlib
import sys


def medians(root: pathlib.Path, prefix: str):
    for estimates in sorted(root.glob("**/new/estimates.json")):
        bench = json.loads((estimates.parent / "benchmark.json").read_text())
        group = bench["group_id"]
        if not group.startswith(prefix):
            continue
        median = json.loads(estimates.read_text())["median"]["point_estimate"]
        yield group, bench["function_id"] or bench.get("value_str") or "", median


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("prefix", help="group name or its prefix")
    parser.add_argument("--baseline", default="tokio_timeout")
    parser.add_argument("--target", default="target/criterion")
    parser.add_argument(
        "--throughput",
        action="store_true",
        help="print throughput ratios (baseline median / median) instead of time ratios",
    )
    args = parser.parse_args()
    rows = list(medians(pathlib.Path(args.target), args.prefix))
    if not rows:
        print(f"no results for {args.prefix!r} under {args.target}", file=sys.stderr)
        return 1
    base = {g: m for g, f, m in rows if f == args.baseline}
    kind = "throughput ratio" if args.throughput else "ratio"
    print(f"| group | bench | median (ns) | {kind} to {args.baseline} |")
    print("|---|---|---:|---:|")
    for group, function, median in rows:
        if group not in base:
            ratio = "-"
        elif args.throughput:
            ratio = f"{base[group] / median:.3f}"
        else:
            ratio = f"{median / base[group]:.3f}"
        print(f"| {group} | {function} | {median:.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
