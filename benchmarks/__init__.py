"""The privbench asv suite: solve time, peak memory and privacy/distortion tracking.

asv reads smaller numbers as better, so every ``track_*`` benchmark reports a quantity
for which a worse mechanism gives a larger number (leakage in bits, certified gap in
bits, distortion needed to reach a leakage target).
"""

import os

# One BLAS/OpenMP/numba thread per process, set before numpy is imported: idle pool
# threads spin, and on a shared 2-core machine their CPU time (the in-process benchmarks'
# timer) was the largest noise between two runs of identical code. Set it yourself to
# override.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
