"""Benchmark suites, one module per paper table/figure family (see zbound.bench.runner.SUITES)."""
