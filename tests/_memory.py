"""Peak memory of one call, as the memory tests measure it."""

from __future__ import annotations

import tracemalloc


def peak_mb(fn) -> float:
    """Peak MB that ``fn()`` allocates through Python and NumPy (tracemalloc: NumPy reports its
    buffers; compiled code's private buffers and the existing inputs are not counted)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
