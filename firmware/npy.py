"""Reading a ``.npy`` input file (``-i x.npy``, this simulator's convenience): never more than its bytes hold.

``load_npy(data)`` checks the header before it builds anything: a magic and version numpy knows, a header it
parses (numpy's own header reader, whose every failure becomes a ``ValueError``), a plain numeric or boolean
dtype (no objects, no records), and a shape whose bytes are exactly those that follow the header. The array is
a view of ``data``: a header claiming a shape of terabytes is refused from its arithmetic, never allocated.
Every problem is ``ValueError`` with a one-line reason (the runners log it and fail the run, exit status 1).
"""

from __future__ import annotations

import io
import math

import numpy as np
from numpy.lib import format as npy_format


def load_npy(data: bytes) -> np.ndarray:
    f = io.BytesIO(data)
    try:
        version = npy_format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = npy_format.read_array_header_2_0(f)
        else:
            raise ValueError(f"format version {version[0]}.{version[1]} is not supported")
    except Exception as e:  # noqa: BLE001 - numpy's header parser raises many kinds (EOFError, TokenError, ...)
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"not a .npy header ({reason[:200]})") from None
    if dtype.hasobject or dtype.fields is not None or dtype.kind not in "biufc":
        raise ValueError(f"an array of {dtype}: not a tensor's dtype")
    offset = f.tell()
    need = math.prod(shape) * dtype.itemsize
    if need != len(data) - offset:
        raise ValueError(f"the header says shape {tuple(shape)} of {dtype} ({need} bytes) but {len(data) - offset} "
                         f"bytes follow it")
    arr = np.frombuffer(data, dtype, count=math.prod(shape), offset=offset)
    return arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
