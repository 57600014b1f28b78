"""Which path an operation's arrays take in the fast engine: numpy (the same integer arithmetic, bit for bit) or
the numba kernels. Small arrays always take numpy, so a program of small operations never imports numba; larger
ones take numpy until the process has pushed enough elements through them to make loading the kernels pay."""

from __future__ import annotations

#: Arrays of at most this many elements take numpy paths instead of numba kernels (the same integer arithmetic,
#: bit for bit; the tests compare them). A program of small operations then never imports numba (0.4 s of a new
#: process); large operations, where a fused kernel saves more than it costs to load, use the kernels.
NUMPY_MAX_ELEMENTS = 1 << 15


#: Every array takes the numpy path until this process has pushed this many elements through the engine's
#: arrays (about one MobileNetV2 inference, or 50 to 150 inferences of a keyword-spotting network): a single
#: run never pays the 0.4 s of loading the kernels (nor, on the first run after installing, the seconds of
#: compiling them, even when the weight decoder has loaded numba), a long one (many inferences in a session, a
#: benchmark) gets them for every size from then on, where one kernel call replaces half a dozen numpy passes
#: (a KWS MicroNet inference 10.2 -> 5.8 ms CPU, ds_cnn 8.2 -> 6.6).
JIT_AFTER_ELEMENTS = 8 << 20
_numpy_large_elements = [0]  # the elements counted so far (every size)


def small(*arrays) -> bool:
    """Whether this operation's arrays take the numpy path (True) or the numba kernels (False)."""
    return numpy_path(max(a.size for a in arrays))


def numpy_path(n: int, count: bool = True) -> bool:
    """Whether an array of ``n`` elements takes the numpy path; ``count``: it will (the elements count towards
    ``JIT_AFTER_ELEMENTS``, whatever their number)."""
    if long_run():
        return False  # a long run: the kernels for every size (one call instead of a dozen numpy ones)
    if count:
        _numpy_large_elements[0] += n
    if n <= NUMPY_MAX_ELEMENTS:
        return True
    return _numpy_large_elements[0] + (0 if count else n) <= JIT_AFTER_ELEMENTS


def long_run() -> bool:
    """Whether this process has pushed ``JIT_AFTER_ELEMENTS`` through the engine: then every size takes the
    kernels (and the executor copies large feature-map pieces with them)."""
    return _numpy_large_elements[0] > JIT_AFTER_ELEMENTS
