"""Shared kernels below every other package: linear algebra (:mod:`zbound.utils.linalg`),
input validation (:mod:`zbound.utils.validation`) and BLAS thread control
(:mod:`zbound.utils.threads`)."""
