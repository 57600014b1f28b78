"""Which path an operation's arrays take in the fast engine: numpy (the same integer arithmetic, bit for bit) or
the numba kernels. Small arrays always take numpy, so a program of small operations never imports numba; larger
ones take numpy until the process has pushed enough elements through them to make loading the kernels pay."""

from __future__ import annotations

#: Arrays of at most this many elements take numpy paths instead of numba kernels (the same integer arithmetic,
#: bit for bit; the tests compare them). A program of small operations then never imports numba (0.4 s of a new
#: process); large operations, where a fused kernel saves more than it costs to load, use the kernels.
NUMPY_MAX_ELEMENTS = 1 << 15


#: Larger arrays too take numpy paths until this process has pushed this many of their elements through them
#: (about one MobileNetV2 inference): a single run never pays the 0.4 s of loading the kernels (nor, on the
#: first run after installing, the seconds of compiling them, even when the weight decoder has loaded numba),
#: a long one (many inferences, a benchmark) gets them for its later operations.
JIT_AFTER_ELEMENTS = 8 << 20
_numpy_large_elements = [0]


def small(*arrays) -> bool:
    """Whether this operation's arrays take the numpy path (True) or the numba kernels (False)."""
    return numpy_path(max(a.size for a in arrays))


def numpy_path(n: int, count: bool = True) -> bool:
    """Whether an array of ``n`` elements takes the numpy path; ``count``: it will (the elements count towards
    ``JIT_AFTER_ELEMENTS``)."""
    if _numpy_large_elements[0] > JIT_AFTER_ELEMENTS:
        return False  # a long run: the kernels for every size (one call instead of a dozen numpy ones)
    if n <= NUMPY_MAX_ELEMENTS:
        return True
    if count:
        _numpy_large_elements[0] += n
    return _numpy_large_elements[0] + (0 if count else n) <= JIT_AFTER_ELEMENTS
