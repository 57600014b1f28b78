"""NPU operation descriptors: what one ``NPU_OP_*`` does, decoded, in the same terms for every product.

Frozen dataclasses only: :class:`FeatureMap`, :class:`Kernel`, :class:`Scale`, :class:`Activation`,
:class:`AddressRange`, :class:`Broadcast`, :class:`Dma`, :class:`Resize` and :class:`NpuOperation`. Each product
family builds them from its register state (``u55/operations.py``, ``u85/operations.py``); the engines, the timing
model and the checker read them and never ask which product built them. Facts of the data an operation streams
that both the function and the timing need are here too: :data:`SUBKERNEL_MAX`, :data:`SCALE_ENTRY_BYTES`.

Every code in a descriptor is a name: a string for kinds, modes and layouts (``"CONV"``, ``"NHCWB16"``,
``"GLOBAL"``), and for the arithmetic the engines' kernels take as numbers the named codes :class:`RoundMode`,
:class:`IfmScaleMode`, :class:`ActivationFunction` and :class:`ClipRange`, whose members are named as the
hardware's interface tables name them (``hwdesc.ethosu``, ``hwdesc.ethosu85``). A product translates each raw
register field into these once, when it builds the operation; a raw value its table does not define never
reaches a descriptor (it is an invalid command stream, ``RegisterState.code``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

#: the largest sub-kernel (height and width, in taps) the MAC array takes in one pass: a larger kernel is split into
#: sub-kernels of at most this size (half of it in an axis with dilation 2), each with its own weights in the
#: weight stream and its own IFM fetch (both products: Regor's ``_subkernelMax``, its weight encoders)
SUBKERNEL_MAX = 8
#: bytes of one scale-stream entry (bias, multiplier, shift) per OFM channel: the decoders' entry size and the
#: timing model's scale fetch per block (both products: Regor's ``EncodeBias``, its performance models)
SCALE_ENTRY_BYTES = 10

DTYPE_NAMES = {
    (8, True): "int8", (8, False): "uint8", (16, True): "int16", (16, False): "uint16",
    (32, True): "int32", (32, False): "uint32", (64, True): "int64", (64, False): "uint64",
}


class RoundMode(IntEnum):
    """How a right shift by a scale's shift rounds (the output stage, operand scaling, SHR): the U55/U65's names
    where a mode is one of theirs (hwdesc.ethosu ROUND_MODE: DBL, TRUNCATE, NATURAL), the U85's for its others
    (hwdesc.ethosu85 ROUND_MODE_OFM). The values are the engines' kernel codes (``reference.rounding_constant``)."""

    DBL = 0  # double rounding: half up, with a 2**30 correction of v's sign for shifts above 31 (U85 DOUBLE_SYMMETRIC)
    TRUNCATE = 1  # towards zero (U85 TRUNCATE_TO_ZERO)
    NATURAL = 2  # half up
    TRUNCATE_TO_LOWER = 4  # down
    SYMMETRIC = 5  # half away from zero
    DOUBLE_ASYMMETRIC = 6  # DBL with the 2**30 correction always added


class IfmScaleMode(IntEnum):
    """How the operands of an elementwise ADD/SUB are scaled: the U55/U65's three modes (hwdesc.ethosu
    IFM_SCALE_MODE: both by 16-bit OPA/OPB_SCALE, operand A or B by the 32-bit OPA_SCALE), or each operand by its
    own scale register (the U85's IFM_SCALE and IFM2_SCALE, for every elementwise mode)."""

    OPA_OPB_16 = 0
    OPA_32 = 1
    OPB_32 = 2
    PER_OPERAND = 3


class ActivationFunction(IntEnum):
    """The activation function of the output stage: the U55/U65's (hwdesc.ethosu ACTIVATION_FUNCTION): none (the
    clamp only), the built-in TANH and SIGMOID, a LUT at slot 0..7 (the U85's LUT kinds become the table at their
    slot, its LUT_TANH/LUT_SIGMOID the built-in functions with ``Activation.lut_slot``)."""

    NONE = 0
    TANH = 3
    SIGMOID = 4
    TABLE_0 = 16
    TABLE_1 = 17
    TABLE_2 = 18
    TABLE_3 = 19
    TABLE_4 = 20
    TABLE_5 = 21
    TABLE_6 = 22
    TABLE_7 = 23

    @classmethod
    def table(cls, slot: int) -> "ActivationFunction":
        """The LUT at 256-byte slot ``slot`` (0..7) of the LUT memory."""
        return cls(cls.TABLE_0 + slot)


class ClipRange(IntEnum):
    """The range the activation clamps to (and a LUT is indexed in): the OFM type's, or a forced 8-bit unsigned,
    8-bit signed or 16-bit signed one (hwdesc.ethosu ACTIVATION_CLIP_RANGE; the U85's LUT kinds name their index
    type)."""

    OFM_PRECISION = 0
    FORCE_UINT8 = 2
    FORCE_INT8 = 3
    FORCE_INT16 = 5


#: the axes of an OFM transpose (Ethos-U85 OFM_PRECISION.activation_transpose): memory axis i holds the computed
#: axis ``TRANSPOSE_AXES[mode][i]`` of (H, W, C)
TRANSPOSE_AXES = {"HWC": (0, 1, 2), "WHC": (1, 0, 2), "HCW": (0, 2, 1), "WCH": (1, 2, 0), "CHW": (2, 0, 1),
                  "CWH": (2, 1, 0)}


@dataclass(frozen=True)
class FeatureMap:
    """A feature map as one operation sees it.

    ``height/width/depth`` is the area the operation reads or writes (for a kernel op's IFM: the extent implied
    by the OFM size, stride, kernel and padding, in the *upscaled* coordinate system if IFM_UPSCALE is set;
    see :attr:`source_height`/:attr:`source_width` for the stored size).  ``bases`` are the byte offsets of tiles
    0..3 inside ``region``; ``height0``/``height1``/``width0`` the tile sizes (section 1.5); strides are signed
    byte strides (``stride_c`` is ignored by the hardware for NHWC).
    """

    name: str
    region: int
    bases: tuple
    height: int
    width: int
    depth: int
    height0: int
    height1: int
    width0: int
    stride_x: int
    stride_y: int
    stride_c: int
    bits: int
    signed: bool
    format: str  # "NHWC" | "NHCWB16"
    zero_point: int
    upscale: str = "NONE"  # "NONE" | "NEAREST" | "ZEROS" (IFM of kernel ops only)
    # Ethos-U85 only: where the data lives ("TILE2X2" in memory, "CHAINED" in chaining buffer ``region``), and
    # the OFM's transpose (the order of the computed H, W, C axes in memory) and reversed axis
    storage: str = "TILE2X2"
    transpose: str = "HWC"
    reverse: str = "NONE"

    @property
    def dtype(self) -> str:
        return DTYPE_NAMES[(self.bits, self.signed)]

    @property
    def elem_size(self) -> int:
        return self.bits // 8

    @property
    def is_nhcwb16(self) -> bool:
        return self.format == "NHCWB16"

    @property
    def shape(self) -> tuple:
        return (self.height, self.width, self.depth)

    @property
    def stored_shape(self) -> tuple:
        """(h, w, c) of the OFM in memory: ``shape`` permuted by the U85 transpose (the identity for HWC)."""
        return tuple(self.shape[i] for i in TRANSPOSE_AXES[self.transpose])

    @property
    def source_height(self) -> int:
        return (self.height + 1) // 2 if self.upscale != "NONE" else self.height

    @property
    def source_width(self) -> int:
        return (self.width + 1) // 2 if self.upscale != "NONE" else self.width

    @property
    def min_value(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max_value(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    def describe(self) -> str:
        t = "" if self.upscale == "NONE" else f" upscale={self.upscale}"
        return (f"{self.height}x{self.width}x{self.depth} {self.dtype} {self.format} region={self.region} "
                f"base=0x{self.bases[0]:x} zp={self.zero_point}{t}")


@dataclass(frozen=True)
class Kernel:
    """Kernel geometry: ``width``/``height`` are *undilated* sizes; padding in IFM elements."""

    width: int
    height: int
    stride_x: int
    stride_y: int
    dilation_x: int
    dilation_y: int
    pad_top: int
    pad_left: int
    pad_bottom: int
    pad_right: int
    upscale: str  # "NONE" | "NEAREST" | "ZEROS"
    part_kernel_first: bool
    decomposition: str  # "D8X8" | "D4X4"

    @property
    def dilated_width(self) -> int:
        return self.dilation_x * (self.width - 1) + 1

    @property
    def dilated_height(self) -> int:
        return self.dilation_y * (self.height - 1) + 1

    @property
    def elements(self) -> int:
        return self.width * self.height


@dataclass(frozen=True)
class Scale:
    """A (multiplier, shift) pair; the multiplier is an unsigned 32-bit value. ``double_round`` (the U85's
    ``dbl_rnd`` field of NPU_SET_IFM_SCALE / IFM2_SCALE): the value is scaled as if shifted left by that many bits
    with the shift grown by as many, which moves the double-rounding correction that many bits down
    (``reference.rshift_round``)."""

    multiplier: int
    shift: int
    double_round: int = 0


@dataclass(frozen=True)
class Activation:
    """ACTIVATION/MIN/MAX: the function (:class:`ActivationFunction`), the clip range (:class:`ClipRange`) and the
    clamp bounds; ``lut_slot``: the 256-byte LUT slot a TANH/SIGMOID reads its 2 KiB table from (the U85's
    LUT_TANH / LUT_SIGMOID), None for the U55/U65's built-in table. ``fraction_kept``: a 16-bit index's
    interpolation keeps its 7 fraction bits, ``(base << 7) + slope * fraction`` (the U85's LUT_S16_S32, to which
    Regor lowers TOSA's int16 -> int32 TABLE, whose result the TOSA specification defines so), instead of
    rounding them off as a 16-bit result does."""

    function: ActivationFunction
    clip_range: ClipRange
    min: int
    max: int
    lut_slot: int | None = None
    fraction_kept: bool = False

    @property
    def name(self) -> str:
        return ActivationFunction(self.function).name

    @property
    def table(self) -> int | None:
        """The LUT slot of a TABLE_n function, else None."""
        t = self.function - ActivationFunction.TABLE_0
        return t if 0 <= t <= ActivationFunction.TABLE_7 - ActivationFunction.TABLE_0 else None

    @property
    def builtin(self) -> bool:
        """TANH or SIGMOID: the hardware's built-in (non-LUT) activation functions."""
        return self.function in (ActivationFunction.TANH, ActivationFunction.SIGMOID)

    @property
    def clip_range_name(self) -> str:
        return ClipRange(self.clip_range).name


@dataclass(frozen=True)
class AddressRange:
    region: int
    address: int
    length: int


@dataclass(frozen=True)
class Broadcast:
    """IFM2_BROADCAST: ``h/w/c`` force that IFM2 coordinate to 0; ``reversed_operands`` (operand_order
    ORDER_A) makes IFM2 operand A; ``scalar`` takes IFM2 from ``scalar_value`` (IFM2_SCALAR, sign per the IFM2
    type), from which ``scalar_zero_point`` (IFM2_ZERO_POINT) is still subtracted."""

    h: bool
    w: bool
    c: bool
    reversed_operands: bool
    scalar: bool
    scalar_value: int
    scalar_zero_point: int = 0


@dataclass(frozen=True)
class Dma:
    """A DMA job: ``*_internal`` means SHRAM (the U85's LUT RAM; the region is then ignored). The stride modes are
    the copy's dimensions less one (0: ``length`` bytes, 1: ``size0`` rows of them, 2: ``size1`` planes of such
    rows); ``skip0``/``skip1`` (the U65's) are the bytes skipped after each row and each plane at the destination,
    the per-side strides (the U85's) the bytes from row to row and plane to plane. The product's DMA engine
    (``u55/dma.py``, ``u85/dma.py``) says which of these its registers give."""

    src_region: int
    src_internal: bool
    src_address: int
    dst_region: int
    dst_internal: bool
    dst_address: int
    length: int
    src_stride_mode: int
    dst_stride_mode: int
    size0: int
    size1: int
    skip0: int
    skip1: int
    # Ethos-U85: per-side strides of the 2-D/3-D modes (bytes between the SIZE0 rows / SIZE1 planes), and the
    # index table of a gather (``indexed == "src"``) or scatter (``"dst"``): int32 row numbers at ``idx_address``
    # of ``idx_region``, at most ``idx_max``
    src_stride0: int = 0
    src_stride1: int = 0
    dst_stride0: int = 0
    dst_stride1: int = 0
    indexed: str = ""
    idx_region: int = 0
    idx_address: int = 0
    idx_max: int = 0
    idx_skip1: int = 0  # the U85's 3-D gather/scatter: index-table bytes skipped after each plane's SIZE0 entries

    @property
    def mode(self) -> int:
        return max(self.src_stride_mode, self.dst_stride_mode)

    @property
    def total_bytes(self) -> int:
        m = self.mode
        if m == 0:
            return self.length
        if m == 1:
            return self.length * self.size0
        return self.length * self.size0 * self.size1


@dataclass(frozen=True)
class Resize:
    """An Ethos-U85 NPU_OP_RESIZE: OFM (oy, ox) samples the IFM at ``(oy * y_d + y_offset) / y_n`` (and x alike),
    in ``mode`` BILINEAR, NEAREST or REPLICATE; ``*_n`` from RESIZE_*_SCALE_N_M1, ``*_d`` from the one-step
    fields of RESIZE_X/RESIZE_Y (``one_step_int * n + one_step_mod``)."""

    mode: str
    y_n: int
    y_d: int
    y_offset: int
    x_n: int
    x_d: int
    x_offset: int


KERNEL_KINDS = ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE", "RESIZE")
#: elementwise modes with one operand (no IFM2): every product's (hwdesc.ethosu / ethosu85 UNARY_ELEMENTWISE_MODES)
UNARY_ELEMENTWISE_MODES = ("ABS", "CLZ", "LRELU", "NOT")
#: ``NpuOperation.ofm_scaling``: what the output stage takes from OFM_SCALE in GLOBAL mode: its multiplier and
#: shift; its shift only (the U55/U65's 32-bit elementwise: "scale not applied for 32-bit operations"); nothing
#: (the U55/U65's LRELU, whose OFM_SCALE is the slope of the negative side, applied to the operand)
OFM_SCALING = ("MULTIPLIER_AND_SHIFT", "SHIFT_ONLY", "NONE")


@dataclass(frozen=True)
class NpuOperation:
    """Everything one ``NPU_OP_*`` command does, decoded from the register state.

    ``kind``: CONV, DEPTHWISE, POOL, ELEMENTWISE, DMA, DMA_WAIT, KERNEL_WAIT, STOP, IRQ, PMU_MASK, BRANCH (the
    U85's). ``sub_op``: pooling mode (MAX, AVERAGE, REDUCE_SUM) or elementwise mode (MUL, ADD, SUB, MIN, MAX, LRELU,
    ABS, CLZ, SHR, SHL), a BRANCH's condition (ALWAYS, RF_TRUE).  Kernel-op fields are ``None`` for the others and
    vice versa.
    """

    kind: str
    offset: int
    param: int
    sub_op: str | None = None
    ifm: FeatureMap | None = None
    ifm2: FeatureMap | None = None
    ofm: FeatureMap | None = None
    kernel: Kernel | None = None
    ofm_block: tuple | None = None  # (h, w, d)
    acc_format: str = "I32"
    blockdep: int = 0
    ifm_ib_end: int = 0
    ab_start: int = 0
    ifm2_ib_start: int = 0
    weights: tuple = ()  # AddressRange per core (U65 dual core: 2)
    scales: tuple = ()  # AddressRange per core
    ofm_scale_mode: str = "GLOBAL"  # PER_CHANNEL (scale stream) | GLOBAL (OFM_SCALE)
    ofm_round_mode: RoundMode = RoundMode.DBL
    ifm_scale_mode: IfmScaleMode = IfmScaleMode.OPA_OPB_16
    ifm_round_mode: RoundMode = RoundMode.DBL
    ofm_scale: Scale | None = None
    opa_scale: Scale | None = None
    opb_scale: int = 0
    activation: Activation | None = None
    broadcast: Broadcast | None = None
    cores: int = 1  # MAC cores the operation is split over by OFM depth (the U65-512's DUAL_CORE_DEPTH: 2)
    dma: Dma | None = None
    count: int = 0  # DMA_WAIT k, KERNEL_WAIT n, IRQ/STOP mask, PMU_MASK enable
    ofm_scaling: str = "MULTIPLIER_AND_SHIFT"  # one of OFM_SCALING
    # weight streams (``weights``) of more than one: "CHANNELS": stream k of n holds OFM channels k, k + n, ...
    # (the U65's cores); "TRAVERSAL": the streams together hold one traversal of every channel (the U85's decoders)
    weights_split: str = "CHANNELS"
    # features of the Ethos-U85 (u85/operations.py): IFM2's own scale and rounding (IfmScaleMode.PER_OPERAND: each
    # elementwise operand scaled by its own register), a scalar IFM, the micro-block, the weight format (None: the
    # product has one format), and whether an AVERAGE pool divides by the valid count in hardware (None: the
    # rule of reference.hw_average)
    ifm2_scale: Scale | None = None
    ifm2_round_mode: RoundMode = RoundMode.DBL
    ifm_scalar: int | None = None
    ofm_ublock: tuple | None = None
    weight_format: str | None = None
    sparse_weights: bool = False  # 2:4 sparse weight traversal (the stream still holds the zeros)
    average_hw: bool | None = None
    resize: Resize | None = None
    # whether the output stage adds OFM_ZERO_POINT: the U55/U65 do not on a 32-bit OFM without an activation
    # function (u55/operations.py); ``output_zero_point`` is what the engines add
    ofm_zero_point_added: bool = True
    branch_target: int | None = None  # BRANCH: the byte offset in the command stream it continues at when taken

    @property
    def output_zero_point(self) -> int:
        """The zero point the output stage adds to the scaled value (before the clamp and a table lookup): the
        OFM's, unless the product leaves it out (:attr:`ofm_zero_point_added`)."""
        return self.ofm.zero_point if self.ofm_zero_point_added else 0

    @property
    def is_kernel_op(self) -> bool:
        return self.kind in KERNEL_KINDS

    @property
    def is_unary(self) -> bool:
        """An elementwise operation with one operand (ABS, CLZ, LRELU, NOT): no IFM2."""
        return self.sub_op in UNARY_ELEMENTWISE_MODES

    @property
    def mnemonic(self) -> str:
        return f"{self.kind} {self.sub_op}" if self.sub_op else self.kind

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the operation (Vela's definition: kernel elements x OFM elements
        (x IFM depth for CONV))."""
        if self.kind == "CONV":
            o = self.ofm
            return o.height * o.width * o.depth * self.kernel.elements * self.ifm.depth
        if self.kind == "DEPTHWISE":
            o = self.ofm
            return o.height * o.width * o.depth * self.kernel.elements
        if self.kind == "POOL":
            o = self.ofm
            k = self.kernel.elements
            if self.sub_op == "REDUCE_SUM":
                return o.height * o.width * k * self.ifm.depth
            return o.height * o.width * o.depth * k
        return 0
