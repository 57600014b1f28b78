"""Ethos-U55/U65 weight decoder front end: the MLW ("ML weight") compressed bitstream.

Models the NPU's weight decompressor, which turns the bitstream at WEIGHT_BASE into a sequence of 9-bit
sign-magnitude weight values in stream order (the order in which the MAC array consumes them; see
``fvp.machine.npu.weights`` for how that order maps back to OHWI). Facts from Vela's MLW codec
(``ethosu/mlw_codec/mlw_decode.c`` and ``mlw_encode.c``, and Regor's ``dependencies/mlw_codec``); Vela's
``ethosu.mlw_codec`` (encoder and decoder) is the oracle the tests compare against.

Bitstream summary (bits are read LSB-first, bytes in increasing address order):

* a stream is a sequence of slices; each slice starts with a header ``ZDIV(3) SLICELEN(15) WDIV(3) WTRUNC(1)
  NEWPAL(1)`` and, when NEWPAL is set, ``DIROFS(5) PALSIZE(5) PALBITS(3)`` followed by the palette;
* ZDIV = 7 is the end-of-stream marker: the reader aligns to the next byte and either stops (end of data) or
  reads another ZDIV; ZDIV = 6 means "no zero runs"; ZDIV 0..3 is the Golomb-Rice divisor exponent of the
  zero-run lengths; WDIV 0..5 is the divisor exponent of the weight indices, WDIV = 7 means uncompressed;
* the slice body is a sequence of chunks: WUNARY0(12), ZUNARY(12 or 8), WUNARY1(popcount of WUNARY0),
  then the remainders of the *previous* weight chunk and of the previous zero-run chunk;
* a weight index below PALSIZE is looked up in the palette, otherwise ``index - palsize + DIROFS`` is used
  directly; the result is sign-magnitude (bit 0 = sign).

Simplifications and choices (the real hardware streams weights on demand; here a whole stream is decoded at
once):

* the decoder stops at the end of the data after an end-of-stream marker, or earlier when ``max_values``
  values have been produced (at a slice boundary), which is all the hardware would ever fetch;
* an empty buffer decodes to no values;
* anything the reference C decoder would assert on, or read beyond the end of the data for, is a malformed
  stream: ``MlwError`` (an ``NpuFault`` of kind ``cmd_parse_error``) with a one-line message naming the problem
  and the bit position. In addition a weight whose final value does not fit 9 bits (possible only with a
  hand-made DIROFS) is rejected, and a stream that ends inside a slice header is always an error (the C
  decoder silently accepts a header whose ZDIV ends exactly at the end of the data).

``decode_mlw`` is the fast numba kernel; ``decode_mlw_reference`` is the slow, obvious pure-Python decoder that
serves as the readable specification. Both give identical results and identical errors.
"""

from __future__ import annotations

import numpy as np

from fvp.errors import NpuFault
from fvp.machine.npu.jit import njit

__all__ = ["MlwError", "decode_mlw", "decode_mlw_reference", "MAX_DECODED_VALUES"]

#: Guard against absurd expansion of a malformed stream (a real stream of a single operation is far smaller).
MAX_DECODED_VALUES = 1 << 28

# Header / body field codes (for error messages).
_FIELDS = ("ZDIV", "SLICELEN", "WDIV", "WTRUNC", "NEWPAL", "DIROFS", "PALSIZE", "PALBITS", "PALETTE",
           "WUNARY0", "ZUNARY", "WUNARY1", "WREMAIN", "ZREMAIN")
(_F_ZDIV, _F_SLICELEN, _F_WDIV, _F_WTRUNC, _F_NEWPAL, _F_DIROFS, _F_PALSIZE, _F_PALBITS, _F_PALETTE,
 _F_WUNARY0, _F_ZUNARY, _F_WUNARY1, _F_WREMAIN, _F_ZREMAIN) = range(len(_FIELDS))

# Error codes returned by the kernel (0 = success).
_E_OK = 0
_E_TRUNCATED = 1      # arg = field code
_E_ZDIV = 2           # arg = ZDIV value
_E_WDIV = 3           # arg = WDIV value
_E_NO_PALETTE = 4
_E_ZRUN_SWITCH = 5
_E_WINDEX = 6         # arg = weight index
_E_WVALUE = 7         # arg = sign-magnitude value
_E_TOO_LARGE = 8      # arg = limit

_ZDIV_NO_ZERO_RUNS = 6
_ZDIV_EOS = 7
_WDIV_UNCOMPRESSED = 7


class MlwError(NpuFault):
    """A malformed MLW weight stream. ``bit`` is the bit position (from the start of the stream) of the problem."""

    def __init__(self, message: str, bit: int = -1):
        super().__init__("cmd_parse_error", message)
        self.bit = bit


def _error_message(code: int, bit: int, arg: int, nbits: int) -> str:
    if code == _E_TRUNCATED:
        return (f"MLW weight stream truncated: field {_FIELDS[arg]} at bit {bit} runs past the end of the "
                f"{nbits}-bit stream")
    if code == _E_ZDIV:
        return f"MLW weight stream: reserved ZDIV value {arg} in slice header at bit {bit}"
    if code == _E_WDIV:
        return f"MLW weight stream: reserved WDIV value {arg} in slice header at bit {bit}"
    if code == _E_NO_PALETTE:
        return (f"MLW weight stream: first slice after start or end-of-stream has NEWPAL=0 "
                f"(slice at bit {bit})")
    if code == _E_ZRUN_SWITCH:
        return (f"MLW weight stream: slice at bit {bit} switches zero-run mode without a new palette")
    if code == _E_WINDEX:
        return f"MLW weight stream: weight index {arg} does not fit 9 bits (remainder at bit {bit})"
    if code == _E_WVALUE:
        return (f"MLW weight stream: direct weight value {arg} does not fit 9 bits "
                f"(remainder at bit {bit})")
    if code == _E_TOO_LARGE:
        return f"MLW weight stream: slice at bit {bit} would decode to more than {arg} values"
    return f"MLW weight stream: error {code} at bit {bit}"  # pragma: no cover - all codes handled above


def _as_uint8(data) -> np.ndarray:
    """A 1-D uint8 view (or copy) of ``data``: bytes, bytearray, memoryview or a numpy array of uint8."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise TypeError(f"MLW data must be a uint8 array, not {data.dtype}")
        return np.ascontiguousarray(data.reshape(-1))
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    raise TypeError(f"MLW data must be bytes, bytearray, memoryview or a uint8 array, not {type(data).__name__}")


# ---------------------------------------------------------------------------------------------------------------
# Fast decoder (numba)
# ---------------------------------------------------------------------------------------------------------------

_POPCOUNT12 = np.array([bin(i).count("1") for i in range(4096)], dtype=np.int64)


@njit("int64(uint8[::1], int64, int64)")  # one compiled body with a fixed signature (a literal width would give one per value)
def _peek(buf, pos, n):
    """``n`` (<= 25) bits at bit position ``pos``, LSB-first; ``buf`` must have 4 readable bytes at pos >> 3."""
    b = pos >> 3
    word = (np.int64(buf[b]) | (np.int64(buf[b + 1]) << 8) | (np.int64(buf[b + 2]) << 16)
            | (np.int64(buf[b + 3]) << 24))
    return (word >> (pos & 7)) & ((np.int64(1) << n) - 1)


@njit
def _decode_kernel(buf, nbits, max_values, limit):
    """Decode the stream in ``buf`` (``nbits`` valid bits, at least 4 zero bytes of padding after them).

    Returns ``(out, n, err, err_bit, err_arg)``; ``out[:n]`` are the values when ``err == 0``.
    """
    cap = max(np.int64(1024), (nbits >> 3) * 2)
    out = np.empty(cap, np.int16)
    n = np.int64(0)
    pos = np.int64(0)
    palette = np.zeros(32, np.int64)
    palsize = np.int64(0)
    palbits = np.int64(2)
    dirofs = np.int64(0)
    lut = np.zeros(512, np.int16)        # weight index -> decoded weight, for the current palette
    first = True
    prev_zero_runs = True
    w_index = np.empty(32768, np.int64)
    z_run = np.empty(32769, np.int64)
    wq = np.zeros(12, np.int64)
    wq_prev = np.zeros(12, np.int64)
    zq = np.zeros(12, np.int64)
    zq_prev = np.zeros(12, np.int64)
    if nbits == 0:
        return out, n, _E_OK, pos, np.int64(0)

    while True:
        if max_values >= 0 and n >= max_values:
            break
        # ---- slice header (with end-of-stream markers in front of it)
        slice_bit = pos
        if pos + 3 > nbits:
            return out, n, _E_TRUNCATED, pos, np.int64(_F_ZDIV)
        zdiv = _peek(buf, pos, 3)
        pos += 3
        finished = False
        while zdiv == _ZDIV_EOS:
            pos = (pos + 7) & ~np.int64(7)
            first = True
            if pos >= nbits:
                finished = True
                break
            slice_bit = pos
            zdiv = _peek(buf, pos, 3)      # pos is byte aligned and below nbits: 8 bits are available
            pos += 3
        if finished:
            break
        if zdiv == 4 or zdiv == 5:
            return out, n, _E_ZDIV, slice_bit, zdiv
        zero_runs = zdiv != _ZDIV_NO_ZERO_RUNS
        if pos + 15 > nbits:
            return out, n, _E_TRUNCATED, pos, np.int64(_F_SLICELEN)
        nw = _peek(buf, pos, 15) + 1
        pos += 15
        if pos + 3 > nbits:
            return out, n, _E_TRUNCATED, pos, np.int64(_F_WDIV)
        wdiv = _peek(buf, pos, 3)
        if wdiv == 6:
            return out, n, _E_WDIV, pos, wdiv
        pos += 3
        if pos + 1 > nbits:
            return out, n, _E_TRUNCATED, pos, np.int64(_F_WTRUNC)
        wtrunc = _peek(buf, pos, 1) != 0
        pos += 1
        if pos + 1 > nbits:
            return out, n, _E_TRUNCATED, pos, np.int64(_F_NEWPAL)
        newpal = _peek(buf, pos, 1) != 0
        pos += 1
        if first and not newpal:
            return out, n, _E_NO_PALETTE, slice_bit, np.int64(0)
        if not newpal and zero_runs != prev_zero_runs:
            return out, n, _E_ZRUN_SWITCH, slice_bit, np.int64(0)
        first = False
        prev_zero_runs = zero_runs
        if newpal:
            if pos + 5 > nbits:
                return out, n, _E_TRUNCATED, pos, np.int64(_F_DIROFS)
            dirofs = _peek(buf, pos, 5)
            pos += 5
            if pos + 5 > nbits:
                return out, n, _E_TRUNCATED, pos, np.int64(_F_PALSIZE)
            palsize = _peek(buf, pos, 5)
            pos += 5
            if palsize > 0:
                palsize += 1
            if pos + 3 > nbits:
                return out, n, _E_TRUNCATED, pos, np.int64(_F_PALBITS)
            palbits = _peek(buf, pos, 3) + 2
            pos += 3
            for i in range(palsize):
                if pos + palbits > nbits:
                    return out, n, _E_TRUNCATED, pos, np.int64(_F_PALETTE)
                palette[i] = _peek(buf, pos, palbits)
                pos += palbits
            for idx in range(512):
                v = palette[idx] if idx < palsize else idx - palsize + dirofs
                mag = v >> 1
                lut[idx] = -mag if (v & 1) else mag
        uncompressed = wdiv == _WDIV_UNCOMPRESSED
        if uncompressed:
            if palsize > 0:
                wdiv = 0
                while (np.int64(1) << wdiv) < palsize:
                    wdiv += 1
            else:
                wdiv = palbits
        # index above which the direct value (index - palsize + dirofs) no longer fits 9 bits
        max_index = min(np.int64(511), 511 + palsize - dirofs)

        # ---- slice body: interleaved chunks of weight indices and zero-run lengths
        nz = (nw + 1 if newpal else nw) if zero_runs else np.int64(0)
        w_pos = np.int64(0)
        z_pos = np.int64(0)
        w_done = np.int64(0)      # weight indices completed (remainder read)
        z_done = np.int64(0)
        w_carry = np.int64(0)
        z_carry = np.int64(0)
        w_ns = np.int64(0)
        z_ns = np.int64(0)
        w_prev_en = False
        z_prev_en = False
        w_prev_ns = np.int64(0)
        z_prev_ns = np.int64(0)
        zlen = np.int64(12) if zdiv < 3 else np.int64(8)
        max_symbols = 8 if (uncompressed and wdiv > 5) else 12
        z_total = np.int64(0)
        while True:
            balance = w_pos - z_pos if zero_runs else np.int64(0)
            w_en = (balance < 8 or not zero_runs) and w_pos < nw
            z_en = zero_runs and balance >= 0 and z_pos < nz
            unary0 = np.int64(0)
            if w_en and not uncompressed:
                if pos + 12 > nbits:
                    return out, n, _E_TRUNCATED, pos, np.int64(_F_WUNARY0)
                unary0 = _peek(buf, pos, 12)
                pos += 12
            if z_en:
                if pos + zlen > nbits:
                    return out, n, _E_TRUNCATED, pos, np.int64(_F_ZUNARY)
                zu = _peek(buf, pos, zlen)
                pos += zlen
                # branch-free: a 1 bit adds one to the quotient, a 0 bit ends it (z_ns <= i < 12 stays in range)
                z_ns = 0
                c = z_carry
                for i in range(zlen):
                    b = (zu >> i) & 1
                    c += b
                    zq[z_ns] = c
                    z_ns += 1 - b
                    c *= b
                z_carry = c
                z_pos += z_ns
            if w_en:
                ones = _POPCOUNT12[unary0]
                if pos + ones > nbits:
                    return out, n, _E_TRUNCATED, pos, np.int64(_F_WUNARY1)
                unary1 = _peek(buf, pos, ones)
                pos += ones
                # branch-free: per slot code 0 (bit 0 clear), 1 (bits 1,0) or 2 (bits 1,1); codes add up into
                # the quotient, which ends on a code below 2 (or on any code in truncated mode)
                trunc = np.int64(1) if wtrunc else np.int64(0)
                w_ns = 0
                c = w_carry
                for i in range(max_symbols):
                    b = (unary0 >> i) & 1
                    code = b + (b & unary1)
                    unary1 >>= b
                    c += code
                    wq[w_ns] = c
                    end = (code >> 1) ^ 1 | trunc
                    w_ns += end
                    c *= 1 - end
                w_carry = c
                w_pos += w_ns
            if w_prev_en:
                for i in range(w_prev_ns):
                    if w_done >= nw:
                        break
                    if pos + wdiv > nbits:
                        return out, n, _E_TRUNCATED, pos, np.int64(_F_WREMAIN)
                    idx = (wq_prev[i] << wdiv) + _peek(buf, pos, wdiv)
                    if idx > max_index:
                        if idx > 511:
                            return out, n, _E_WINDEX, pos, idx
                        return out, n, _E_WVALUE, pos, idx - palsize + dirofs
                    pos += wdiv
                    w_index[w_done] = idx
                    w_done += 1
            if z_prev_en:
                for i in range(z_prev_ns):
                    if z_done >= nz:
                        break
                    if pos + zdiv > nbits:
                        return out, n, _E_TRUNCATED, pos, np.int64(_F_ZREMAIN)
                    run = (zq_prev[i] << zdiv) + _peek(buf, pos, zdiv)
                    pos += zdiv
                    z_run[z_done] = run
                    z_total += run
                    z_done += 1
            w_prev_en = w_en
            z_prev_en = z_en
            if w_en:
                w_prev_ns = w_ns
                wq, wq_prev = wq_prev, wq
            if z_en:
                z_prev_ns = z_ns
                zq, zq_prev = zq_prev, zq
            if not (w_prev_en or z_prev_en):
                break

        # ---- output: weights with their zero runs
        total = nw + z_total
        if n + total > limit:
            return out, n, _E_TOO_LARGE, slice_bit, limit
        if n + total > cap:
            while cap < n + total:
                cap *= 2
            grown = np.empty(cap, np.int16)
            for q in range(n):  # a loop, not grown[:n] = out[:n]: a slice assignment costs 2.5 s of compiling
                grown[q] = out[q]
            out = grown
        k = n
        zi = np.int64(0)
        if zero_runs and newpal:
            for j in range(z_run[0]):
                out[k + j] = 0
            k += z_run[0]
            zi = 1
        if zero_runs:
            for i in range(nw):
                out[k] = lut[w_index[i]]
                k += 1
                run = z_run[zi + i]
                for j in range(run):
                    out[k + j] = 0
                k += run
        else:
            for i in range(nw):
                out[k + i] = lut[w_index[i]]
            k += nw
        n = k
    return out, n, _E_OK, pos, np.int64(0)


def decode_mlw(data, max_values: int | None = None) -> np.ndarray:
    """Decode an MLW weight bitstream into int16 weight values in stream order.

    ``data`` is bytes, bytearray, memoryview or a uint8 numpy array. Every slice up to the end of the data is
    decoded (end-of-stream markers and their 0xFF padding are skipped). With ``max_values`` decoding stops at
    the first slice boundary where at least that many values have been produced, as the hardware never fetches
    more than an operation needs. Raises ``MlwError`` for a malformed stream.
    """
    raw = _as_uint8(data)
    nbytes = raw.shape[0]
    buf = np.zeros(nbytes + 8, np.uint8)
    buf[:nbytes] = raw
    mv = -1 if max_values is None else int(max_values)
    out, n, err, bit, arg = _decode_kernel(buf, np.int64(nbytes) * 8, np.int64(mv), np.int64(MAX_DECODED_VALUES))
    if err:
        raise MlwError(_error_message(int(err), int(bit), int(arg), nbytes * 8), int(bit))
    if out.shape[0] > n + (n >> 2) + 64:
        return out[:n].copy()
    return out[:n]


# ---------------------------------------------------------------------------------------------------------------
# Reference decoder (pure Python): the readable specification
# ---------------------------------------------------------------------------------------------------------------

class _BitReader:
    """Reads little-endian bit fields, LSB first; reading past the end raises ``MlwError``."""

    def __init__(self, data: bytes):
        self.data = data
        self.nbits = len(data) * 8
        self.pos = 0

    def read(self, nbits: int, field: int) -> int:
        if self.pos + nbits > self.nbits:
            raise MlwError(_error_message(_E_TRUNCATED, self.pos, field, self.nbits), self.pos)
        value = 0
        for i in range(nbits):
            byte = self.data[(self.pos + i) >> 3]
            value |= ((byte >> ((self.pos + i) & 7)) & 1) << i
        self.pos += nbits
        return value

    def align(self) -> None:
        self.pos = (self.pos + 7) & ~7

    def at_end(self) -> bool:
        return self.pos >= self.nbits


def _fail(code: int, bit: int, arg: int, nbits: int):
    raise MlwError(_error_message(code, bit, arg, nbits), bit)


def decode_mlw_reference(data, max_values: int | None = None, trace: list | None = None) -> np.ndarray:
    """Slow, obvious decoder with the same results and errors as ``decode_mlw``.

    If ``trace`` is a list, one dict per slice header is appended to it (bit position, ZDIV, SLICELEN, WDIV,
    WTRUNC, NEWPAL, palette) -- handy to see which coding modes a stream uses.
    """
    bits = _BitReader(_as_uint8(data).tobytes())
    nbits = bits.nbits
    values: list[int] = []
    palette: list[int] = []
    palbits = 2
    dirofs = 0
    first = True
    prev_zero_runs = True
    if nbits == 0:
        return np.zeros(0, np.int16)
    while max_values is None or len(values) < max_values:
        # -- header; ZDIV = 7 is end-of-stream: align, stop at the end of data, otherwise read on
        slice_bit = bits.pos
        zdiv = bits.read(3, _F_ZDIV)
        finished = False
        while zdiv == _ZDIV_EOS:
            bits.align()
            first = True
            if bits.at_end():
                finished = True
                break
            slice_bit = bits.pos
            zdiv = bits.read(3, _F_ZDIV)
        if finished:
            break
        if zdiv in (4, 5):
            _fail(_E_ZDIV, slice_bit, zdiv, nbits)
        zero_runs = zdiv != _ZDIV_NO_ZERO_RUNS
        nw = bits.read(15, _F_SLICELEN) + 1
        wdiv_bit = bits.pos
        wdiv = bits.read(3, _F_WDIV)
        if wdiv == 6:
            _fail(_E_WDIV, wdiv_bit, wdiv, nbits)
        wtrunc = bits.read(1, _F_WTRUNC) == 1
        newpal = bits.read(1, _F_NEWPAL) == 1
        if first and not newpal:
            _fail(_E_NO_PALETTE, slice_bit, 0, nbits)
        if not newpal and zero_runs != prev_zero_runs:
            _fail(_E_ZRUN_SWITCH, slice_bit, 0, nbits)
        first = False
        prev_zero_runs = zero_runs
        if newpal:
            dirofs = bits.read(5, _F_DIROFS)
            palsize = bits.read(5, _F_PALSIZE)
            palsize = palsize + 1 if palsize > 0 else 0
            palbits = bits.read(3, _F_PALBITS) + 2
            palette = [bits.read(palbits, _F_PALETTE) for _ in range(palsize)]
        palsize = len(palette)
        uncompressed = wdiv == _WDIV_UNCOMPRESSED
        if uncompressed:
            # only remainders: their width is the palette index width, or PALBITS without a palette
            wdiv = (palsize - 1).bit_length() if palsize > 0 else palbits

        # -- body
        nz = (nw + (1 if newpal else 0)) if zero_runs else 0
        zlen = 12 if zdiv < 3 else 8
        max_symbols = 8 if (uncompressed and wdiv > 5) else 12
        w_quot: list[int] = []       # weight quotients decoded so far (unary parts)
        z_quot: list[int] = []
        w_index: list[int] = []      # complete weight indices (quotient and remainder)
        z_run: list[int] = []
        w_carry = z_carry = 0
        w_prev = z_prev = None       # quotients of the previous chunk, or None if that chunk was disabled
        while True:
            w_pos, z_pos = len(w_quot), len(z_quot)
            balance = w_pos - z_pos if zero_runs else 0
            w_en = (balance < 8 or not zero_runs) and w_pos < nw
            z_en = zero_runs and balance >= 0 and z_pos < nz
            unary0 = 0
            if w_en and not uncompressed:
                unary0 = bits.read(12, _F_WUNARY0)
            z_chunk = []
            if z_en:
                unary = bits.read(zlen, _F_ZUNARY)
                for i in range(zlen):          # a 1 adds one to the quotient, a 0 ends it
                    if unary >> i & 1:
                        z_carry += 1
                    else:
                        z_chunk.append(z_carry)
                        z_carry = 0
            w_chunk = []
            if w_en:
                unary1 = bits.read(bin(unary0).count("1"), _F_WUNARY1)
                for i in range(max_symbols):
                    code = 0                    # 0 -> +0 and end; 10 -> +1 and end; 11 -> +2 and continue
                    if unary0 >> i & 1:
                        code = 1 + (unary1 & 1)
                        unary1 >>= 1
                    w_carry += code
                    if code < 2 or wtrunc:      # truncated mode: a 2 also ends the quotient
                        w_chunk.append(w_carry)
                        w_carry = 0
            if w_prev is not None:              # remainders lag their unary parts by one chunk
                for q in w_prev:
                    if len(w_index) >= nw:
                        break
                    rbit = bits.pos
                    idx = (q << wdiv) + bits.read(wdiv, _F_WREMAIN)
                    if idx > 511:
                        _fail(_E_WINDEX, rbit, idx, nbits)
                    if idx >= palsize and idx - palsize + dirofs > 511:
                        _fail(_E_WVALUE, rbit, idx - palsize + dirofs, nbits)
                    w_index.append(idx)
            if z_prev is not None:
                for q in z_prev:
                    if len(z_run) >= nz:
                        break
                    z_run.append((q << zdiv) + bits.read(zdiv, _F_ZREMAIN))
            w_quot += w_chunk
            z_quot += z_chunk
            w_prev = w_chunk if w_en else None
            z_prev = z_chunk if z_en else None
            if w_prev is None and z_prev is None:
                break

        # -- output
        if len(values) + nw + sum(z_run) > MAX_DECODED_VALUES:
            _fail(_E_TOO_LARGE, slice_bit, MAX_DECODED_VALUES, nbits)
        if trace is not None:
            trace.append(dict(bit=slice_bit, zdiv=zdiv, slicelen=nw - 1,
                              wdiv=_WDIV_UNCOMPRESSED if uncompressed else wdiv, wtrunc=int(wtrunc),
                              newpal=int(newpal), palsize=palsize, palbits=palbits, dirofs=dirofs))
        runs = iter(z_run)
        if zero_runs and newpal:
            values += [0] * next(runs)
        for idx in w_index:
            v = palette[idx] if idx < palsize else idx - palsize + dirofs
            values.append(-(v >> 1) if v & 1 else v >> 1)
            if zero_runs:
                values += [0] * next(runs)
    return np.array(values, dtype=np.int16)
