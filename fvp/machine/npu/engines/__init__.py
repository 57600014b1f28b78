"""Functional engines of the NPU: a slow numpy reference (the living spec) and numba kernels."""
