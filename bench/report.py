"""What the benchmarks print besides their tables: progress on stderr, and a figure against its target."""

from __future__ import annotations

import json
import sys
import time


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def verdict(value: float, limit: float) -> str:
    return f"<= {limit:g} ok" if value <= limit else f"<= {limit:g} MISSED"


def over_backends(parser, backends, bench_backend, print_table, argv=None) -> None:
    """Parse `parser`'s options plus --backends and --json, run `bench_backend(name, args)` for each backend asked,
    then print the results as one JSON list or as `print_table` prints them with the time taken."""
    parser.add_argument("--backends", default=",".join(backends))
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    for backend in args.backends.split(","):
        if backend not in backends:
            parser.error(f"unknown backend {backend!r}; choose from {', '.join(backends)}")
    started = time.perf_counter()
    results = [bench_backend(backend, args) for backend in args.backends.split(",")]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)
        print(f"\nbenchmark took {time.perf_counter() - started:.0f} s")
