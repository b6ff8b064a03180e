#!/usr/bin/env python3
"""Prints criterion's median for every benchmark of a group, and its ratio to
a baseline in the same group, from target/criterion (after `cargo bench`).

The ratio is of median times (median / baseline median) unless --throughput
is given: then it is of throughputs (baseline median / median), so above 1
means faster than the baseline.

    python3 benches/ratios.py deadline_overhead [--baseline tokio_timeout]
    python3 benches/ratios.py server_overhead --baseline bare --throughput
    python3 benches/ratios.py --summary    # the README's table, every goal

For the groups that also ran in interleaved rounds (target/bench-rounds/,
written by server_overhead, deadline_overhead, grpc_overhead and client_overhead), --summary reads the
ratios from the rounds: the median of the per-round ratios, with the
spread from the 10th to the 90th percentile, and the median time per
operation of each variant.
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


# The README's table: (group, ours, peer, throughput?, goal), each ratio read
# as "ours per peer" (time ratio, or throughput ratio when marked).
SUMMARY = [
    ("deadline_overhead/ready", "bounded", "tokio_timeout", False, "<= 1.1"),
    ("deadline_overhead/pend10", "bounded", "tokio_timeout", False, "<= 1.1"),
    ("server_overhead/in_process", "timebox_no_deadline", "bare", True, ">= 0.98"),
    ("server_overhead/in_process", "timebox_route_deadline", "bare", True, ">= 0.95"),
    ("server_overhead/in_process", "timebox_route_deadline", "tower_http_timeout", True, ">= 1"),
    ("server_overhead/in_process", "timebox_route_deadline_metrics", "timebox_route_deadline", True, ">= 0.95"),
    ("server_overhead/in_process", "timebox_route_deadline", "timebox_route_deadline_unchecked", True, "-"),
    ("server_overhead/tcp", "timebox_no_deadline", "bare", True, ">= 0.98"),
    ("server_overhead/tcp", "timebox_route_deadline", "bare", True, ">= 0.95"),
    ("server_overhead/tcp", "timebox_route_deadline", "tower_http_timeout", True, ">= 1"),
    ("server_overhead/tcp", "timebox_serve", "bare", True, "-"),
    ("grpc_overhead/loopback", "timebox_layers", "bare", True, ">= 0.97"),
    ("grpc_overhead/loopback", "timebox_layers", "bare_with_headers", True, "-"),
    ("client_overhead/middleware", "timebox", "reqwest_retry", True, ">= 1"),
    ("client_overhead/middleware", "timebox_deadline", "reqwest_retry", True, "-"),
    ("client_overhead/tower", "client_layer", "hyper_util", True, ">= 0.97"),
    ("client_overhead/tower", "client_layer_no_deadline", "hyper_util", True, "-"),
    ("client_overhead/in_process", "client_layer", "service", True, "-"),
    ("retry_budget/1_thread", "timebox", "tower_tps", True, ">= 2"),
    ("retry_budget/2_threads", "timebox", "tower_tps", True, ">= 2"),
]


def percentile(values, p):
    """The `p` quantile by the nearest rank, a half rounded up as the
    benches' own report does (`f64::round`), not to even as `round` does."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int((len(ordered) - 1) * p + 0.5))]


def rounds(group: str):
    """The per-operation times of each variant, round by round, if the group
    ran in interleaved rounds."""
    path = pathlib.Path("target/bench-rounds") / (group.replace("/", "__") + ".json")
    if not path.exists():
        return None
    return json.loads(path.read_text())["per_op_ns"]


def summary(root: pathlib.Path) -> int:
    found = {(g, f): m for g, f, m in medians(root, "")}
    print("| benchmark | ours | peer | ours (ns) | peer (ns) | ratio | spread (p10–p90) | goal |")
    print("|---|---|---|---:|---:|---:|---|---|")
    missing = 0
    for group, ours, peer, throughput, goal in SUMMARY:
        kind = "throughput" if throughput else "time"
        per_round = rounds(group)
        if per_round and ours in per_round and peer in per_round:
            a = percentile(per_round[ours], 0.5)
            b = percentile(per_round[peer], 0.5)
            ratios = [
                (p / o if throughput else o / p)
                for o, p in zip(per_round[ours], per_round[peer])
            ]
            ratio = percentile(ratios, 0.5)
            spread = f"{percentile(ratios, 0.1):.3f}–{percentile(ratios, 0.9):.3f}"
            print(f"| {group} | {ours} | {peer} | {a:.1f} | {b:.1f} | {ratio:.3f} ({kind}) | {spread} | {goal} |")
            continue
        if (group, ours) not in found or (group, peer) not in found:
            print(f"| {group} | {ours} | {peer} | - | - | not run | - | {goal} |")
            missing += 1
            continue
        a, b = found[(group, ours)], found[(group, peer)]
        ratio = b / a if throughput else a / b
        print(f"| {group} | {ours} | {peer} | {a:.1f} | {b:.1f} | {ratio:.3f} ({kind}) | - | {goal} |")
    # What the gate adds to the scope it runs in, against what tokio's timer
    # adds to a bare await: the part of pend10 each wrapper is responsible for.
    pend = {
        f: found.get(("deadline_overhead/pend10", f))
        for f in ("bounded", "scoped_bare", "tokio_timeout", "bare")
    }
    if None not in pend.values():
        gate = pend["bounded"] - pend["scoped_bare"]
        timer = pend["tokio_timeout"] - pend["bare"]
        print(
            "| deadline_overhead/pend10 | gate alone (bounded - scoped_bare)"
            " | tokio's timer (tokio_timeout - bare)"
            f" | {gate:.1f} | {timer:.1f} | {gate / timer:.3f} (time) | - | - |"
        )
    current = found.get(("deadline_overhead/current", "in_scope"))
    if current is not None:
        print(f"| deadline_overhead/current | in_scope | - | {current:.2f} | - | - | - | < 5 ns |")
    return 1 if missing else 0


def main() -> int:
    if "--summary" in sys.argv[1:]:
        target = pathlib.Path("target/criterion")
        return summary(target)
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
