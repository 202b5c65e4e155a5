"""Benchmark suites, one module per paper table/figure family (see
zbound_benchmarks.runner.SUITES)."""
