"""Micro-benchmark of the sandbox round trip: p50/p99 of a trivial Python handler and a JMESPath handler."""

import statistics
import sys
import time
from collections.abc import Callable

from schemas.result_handlers import ResultHandler
from workers.sandbox import PythonSandbox, SandboxConfig, run_handler

OUTPUT = {"bands": [{"band": i, "mean": i / 2, "std": 1.0} for i in range(1, 51)]}


def _percentiles(run: Callable[[], object], n: int) -> tuple[float, float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49], cuts[98]


def main(n: int = 500) -> None:
    """Print p50/p99 in ms per handler kind, after one warm-up call that starts the sandbox."""
    sandbox = PythonSandbox(SandboxConfig())
    trivial = ResultHandler(script="len(tool_output['bands'])")
    jmes = ResultHandler(language="jmespath", script="bands[].mean")
    run_handler(trivial, OUTPUT, sandbox=sandbox)
    print(f"isolation={sandbox.isolation} n={n}")
    for name, handler in (("python trivial", trivial), ("jmespath", jmes)):
        p50, p99 = _percentiles(lambda h=handler: run_handler(h, OUTPUT, sandbox=sandbox), n)
        print(f"{name:<15} p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")
    sandbox.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
