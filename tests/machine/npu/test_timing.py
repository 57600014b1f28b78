"""The NPU timing model: per-block formulas on hand-computed cases, the event simulation (DMA overlap, waits,
shared bandwidth, BLOCKDEP), PMU event counts, and the timing-off mode."""

import math
from types import SimpleNamespace

import pytest

from fvp.boards.schema import MemoryModeSpec, MemoryTimingSpec, SystemConfigSpec
from fvp.machine.npu import timing as T
from fvp.machine.npu.u55 import blocks as B, performance as P
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.descriptors import Activation, AddressRange, Dma, FeatureMap, Kernel, NpuOperation
from fvp.machine.npu.execute import OpRecord

U55_128 = get_arch("ethos-u55-128")

# Ethos_U55_High_End_Embedded (Vela's config_files/Arm/vela.ini)
HIGH_END = SystemConfigSpec(
    name="Ethos_U55_High_End_Embedded", core_clock_hz=500_000_000, axi0_port="Sram", axi1_port="OffChipFlash",
    memories={"Sram": MemoryTimingSpec(1.0, 32, 32, 32, 4, 4, 1),
              "OffChipFlash": MemoryTimingSpec(0.125, 128, 64, 0, 2, 0, 1)},
    timing_adapters={})  # Vela's memory timing (the timing adapters: test_timing_adapter.py)
SHARED_SRAM = MemoryModeSpec("Shared_Sram", "axi1", "axi0", "axi0", 0, 2, (3, 0, 1, 1, 1, 1, 1, 1))
SRAM_ONLY = MemoryModeSpec("Sram_Only", "axi0", "axi0", "axi0", 0, 1, (1, 0, 0, 0, 0, 0, 0, 0))


def fm(h, w, c, region=1, bits=8, fmt="NHWC", name="ifm"):
    e = bits // 8
    return FeatureMap(name=name, region=region, bases=(0, 0, 0, 0), height=h, width=w, depth=c, height0=h,
                      height1=h, width0=w, stride_x=c * e, stride_y=w * c * e, stride_c=e, bits=bits, signed=True,
                      format=fmt, zero_point=0)


def kern(kh=1, kw=1, s=1, pad=0, part_kernel=False):
    return Kernel(width=kw, height=kh, stride_x=s, stride_y=s, dilation_x=1, dilation_y=1, pad_top=pad,
                  pad_left=pad, pad_bottom=pad, pad_right=pad, upscale="NONE", part_kernel_first=part_kernel,
                  decomposition="D8X8")


NO_ACT = Activation(function=0, clip_range=0, min=-128, max=127)


def kernel_op(kind, ifm, ofm, k=None, block=(1, 1, 1), sub_op=None, acc="I32", act=NO_ACT, ifm2=None,
              weights=None, blockdep=0, offset=0x100):
    ws = sc = ()
    if kind in ("CONV", "DEPTHWISE"):
        ws = (weights or AddressRange(1, 0, 1024),)
        sc = (AddressRange(1, 0, 10 * ofm.depth),)
    return NpuOperation(kind=kind, offset=offset, param=0, sub_op=sub_op, ifm=ifm, ifm2=ifm2, ofm=ofm, kernel=k,
                        ofm_block=block, acc_format=acc, blockdep=blockdep, weights=ws, scales=sc, activation=act)


def record(op, **reads):
    """An OpRecord with the traffic the functional engine would measure (bytes per tensor)."""
    rec = OpRecord(op, macs=op.macs if op.kind != "DMA" else 0)
    for tensor, (region, n) in reads.items():
        if tensor == "ofm":
            rec.add("w", "ofm", region, n)
        else:
            rec.add("r", tensor, region, n)
    return rec


def dma_record(n, src_region=0, dst_region=1, offset=0):
    d = Dma(src_region=src_region, src_internal=False, src_address=0, dst_region=dst_region, dst_internal=False,
            dst_address=0, length=n, src_stride_mode=0, dst_stride_mode=0, size0=0, size1=0, skip0=0, skip1=0)
    rec = OpRecord(NpuOperation(kind="DMA", offset=offset, param=0, dma=d))
    rec.add("r", "dma", src_region, n)
    rec.add("w", "dma", dst_region, n)
    return rec


def sync_record(kind, count=0, offset=0):
    return OpRecord(NpuOperation(kind=kind, offset=offset, param=count, count=count))


def model(mode=SHARED_SRAM, arch=U55_128, **params):
    return T.TimingModel(arch, HIGH_END, mode, params=params)


def device(mode=SHARED_SRAM, qsize=0):
    rc = mode.regioncfg
    return SimpleNamespace(regioncfg_of=lambda r: rc[r], qsize=qsize, qconfig=mode.qconfig)


def offsets(recs):
    """Give the records increasing command offsets, one register word before each."""
    out = []
    for i, r in enumerate(recs):
        op = r.op
        object.__setattr__(op, "offset", 8 * i + 4)
        out.append(r)
    return out


# ================================================================================================ formulas


def test_mac_cycles_depth_first_1x1_conv():
    # U55-128 micro-block 1x2x8; block 4x8x16 -> 4x4x2 micro-blocks; 4 * 16 = 64 > the 32-cycle weight floor;
    # 1 kernel step x 2 depth micro-blocks = 128; IFM depth 32 = one 32-deep pass
    op = kernel_op("CONV", fm(4, 8, 32), fm(4, 8, 16, name="ofm"), kern(), block=(4, 8, 16))
    assert P.mac_cycles_per_block(U55_128, op, (4, 8, 16)) == (128, 64)
    op64 = kernel_op("CONV", fm(4, 8, 64), fm(4, 8, 16, name="ofm"), kern(), block=(4, 8, 16))
    assert P.mac_cycles_per_block(U55_128, op64, (4, 8, 16))[0] == 256  # two IFM passes


def test_mac_cycles_part_kernel_3x3_first_layer():
    # IFM depth 3, part-kernel: IFM block depth 8; steps ceil(9/4) = 3; block 8x16x8 -> 8x8x1 micro-blocks
    op = kernel_op("CONV", fm(17, 33, 3), fm(8, 16, 8, name="ofm"), kern(3, 3, 2, 1, part_kernel=True),
                   block=(8, 16, 8))
    assert T.ifm_block_depth(U55_128, op) == 8
    assert P.mac_cycles_per_block(U55_128, op, (8, 16, 8))[0] == 4 * 64 * 3


def test_mac_cycles_depthwise_and_pooling():
    dw = kernel_op("DEPTHWISE", fm(7, 12, 16), fm(7, 12, 16, name="ofm"), kern(3, 3, 1, 1), block=(7, 12, 16))
    # 7x6x2 micro-blocks: max(32, 4 * 42) * ceil(9/4) * 2
    assert P.mac_cycles_per_block(U55_128, dw, (7, 12, 16))[0] == 168 * 3 * 2
    mp = kernel_op("POOL", fm(9, 9, 16), fm(4, 4, 16, name="ofm"), kern(3, 3, 2), block=(4, 4, 16), sub_op="MAX")
    # Regor: max(4, 9) * (4 * 2 * 2 micro-blocks) * ifm_bits / 2
    assert P.mac_cycles_per_block(U55_128, mp, (4, 4, 16))[0] == 9 * 16 * 4
    mp16 = kernel_op("POOL", fm(9, 9, 16, bits=16), fm(4, 4, 16, name="ofm", bits=16), kern(3, 3, 2),
                     block=(4, 4, 16), sub_op="MAX")
    assert P.mac_cycles_per_block(U55_128, mp16, (4, 4, 16))[0] == 9 * 16 * 8
    # U55-32 has no bit-width factor (1x1x4 micro-block: 4 x 4 x 4 of them)
    u32 = get_arch("ethos-u55-32")
    assert P.mac_cycles_per_block(u32, mp16, (4, 4, 16))[0] == 9 * 4 * 4 * 4


def test_mac_cycles_single_micro_block_delay():
    # one micro-block (1x2x8): the 32-cycle weight floor, plus the accumulator delay of 2 per step
    op = kernel_op("CONV", fm(1, 2, 64), fm(1, 2, 8, name="ofm"), kern(), block=(1, 2, 8))
    assert P.mac_cycles_per_block(U55_128, op, (1, 2, 8))[0] == (32 + 2) * 2


def test_one_dimensional_micro_block():
    u256 = get_arch("ethos-u55-256")
    fc = kernel_op("CONV", fm(1, 8, 32), fm(1, 8, 16, name="ofm"), kern(), block=(1, 8, 16))
    assert B.micro_block(u256, fc) == (1, 4, 8)
    conv = kernel_op("CONV", fm(2, 8, 32), fm(2, 8, 16, name="ofm"), kern(), block=(2, 8, 16))
    assert B.micro_block(u256, conv) == (2, 2, 8)


@pytest.mark.parametrize("kind,sub,bits,act,expected", [
    ("CONV", None, 8, NO_ACT, 0.5),  # "other" output index on U55-128
    ("ELEMENTWISE", "ADD", 8, NO_ACT, 1.5),  # ADD/SUB
    ("POOL", "MAX", 8, NO_ACT, 0.25),
    ("ELEMENTWISE", "MUL", 8, NO_ACT, 0.75),
    ("CONV", None, 8, Activation(16, 0, -128, 127), 1.0),  # LUT activation dominates
    ("ELEMENTWISE", "ADD", 32, NO_ACT, 1.25),  # 32-bit binary
])
def test_ao_cycles_per_element(kind, sub, bits, act, expected):
    ofm = fm(4, 4, 16, bits=bits, name="ofm")
    op = kernel_op(kind, fm(4, 4, 16, bits=bits), ofm, kern() if kind != "ELEMENTWISE" else None, sub_op=sub,
                   act=act)
    assert P.ao_cycles_per_element(U55_128, op) == expected


def test_ifm_halo_refetch():
    # 3x3 stride 1 pad 1, OFM 8x8 in 4x4 blocks: each axis fetches rows [0,5) and [3,8) -> 10 of 8
    op = kernel_op("DEPTHWISE", fm(8, 8, 16), fm(8, 8, 16, name="ofm"), kern(3, 3, 1, 1), block=(4, 4, 16))
    geo = T.kernel_geometry(U55_128, op)
    assert geo["ifm_refetch"] == pytest.approx((10 / 8) ** 2)
    assert geo["spatial_blocks"] == 4 and geo["blocks"] == 4
    # a convolution re-reads the IFM once per OFM depth block
    conv = kernel_op("CONV", fm(8, 8, 16), fm(8, 8, 48, name="ofm"), kern(), block=(8, 8, 16))
    assert T.kernel_geometry(U55_128, conv)["ifm_refetch"] == 3


def test_block_groups_cover_the_ofm():
    op = kernel_op("CONV", fm(10, 10, 8), fm(10, 10, 40, name="ofm"), kern(), block=(4, 8, 16))
    geo = T.kernel_geometry(U55_128, op)
    assert sum(h * w * c * n for (h, w, c), n in geo["groups"]) == 10 * 10 * 40
    assert geo["blocks"] == 3 * 2 * 3


def test_contiguous_run_and_burst_efficiency():
    # NHWC with the block covering the whole depth: a row of w x C bytes; else block depth only
    assert T.contiguous_run(fm(8, 8, 3), (1, 8, 8)) == 24
    assert T.contiguous_run(fm(8, 8, 64), (1, 8, 16)) == 16
    assert T.contiguous_run(fm(8, 8, 64, fmt="NHCWB16"), (1, 4, 16)) == 64
    m = model()
    assert m._efficiency(0, fm(8, 8, 64), (1, 8, 16), True) == 0.5  # 16-byte runs, 32-byte SRAM bursts
    assert m._efficiency(1, fm(8, 8, 64), (1, 8, 64), True) == 1.0


def test_compute_cycles_pipeline():
    # 4 equal blocks, M = 128, A = 0.5 * 512 = 256: AO-bound, 4 * 256 + the first block's MAC (128)
    op = kernel_op("CONV", fm(8, 16, 32), fm(8, 16, 16, name="ofm"), kern(), block=(4, 8, 16))
    geo = T.kernel_geometry(U55_128, op)
    c = P.compute_cycles(U55_128, op, geo)
    assert (c["total"], c["fill"], c["mac"], c["ao"]) == (4 * 256 + 128, 128, 4 * 128, 4 * 256)


# ================================================================================================ simulation


def conv_record(h=16, w=16, cin=32, cout=16, ifm_region=1, weights_region=1, offset=0):
    op = kernel_op("CONV", fm(h, w, cin, region=ifm_region), fm(h, w, cout, name="ofm"), kern(),
                   block=(h, w, cout), weights=AddressRange(weights_region, 0, 1024), offset=offset)
    return record(op, ifm=(ifm_region, h * w * cin), weights=(weights_region, 1024),
                  scales=(weights_region, 10 * cout), ofm=(1, h * w * cout))


def test_single_operation_cost_is_compute_plus_fixed_costs():
    rec = conv_record()
    m = model()
    st = m.stream([rec, sync_record("STOP", offset=0x200)], device())
    t = st.per_op[0]
    geo = T.kernel_geometry(U55_128, rec.op)
    comp = P.compute_cycles(U55_128, rec.op, geo, m._block_transfers(rec.op, geo, lambda r: m.port_of_region(r)))
    # head: SRAM read latency 32 (IFM and weights); tail: pipeline drain + SRAM write latency 32
    assert t.cycles == pytest.approx(comp["total"] + 32 + 32)
    assert t.bound == "compute"
    assert st.total_cycles == math.ceil(t.end)


def test_memory_bound_operation_on_flash():
    # IFM in region 0 = AXI1 = OffChipFlash at 1 byte/cycle: 64 KiB of IFM dominates the compute
    rec = conv_record(h=32, w=64, ifm_region=0)
    st = model().stream([rec], device())
    t = st.per_op[0]
    assert t.bound == "OffChipFlash"
    assert t.memory_cycles[1] == pytest.approx(32 * 64 * 32 / 1.0)
    assert t.cycles >= 32 * 64 * 32
    assert st.events[0x182] == 32 * 64 * 32 // 8  # the IFM's beats on AXI1 (weights and scales are in SRAM)


def test_weight_dma_overlaps_previous_operation():
    k1, k2 = conv_record(), conv_record()
    dma = dma_record(4096)
    alone = model().stream(offsets([conv_record(), sync_record("STOP")]), device()).total_cycles
    overlapped = model().stream(offsets([k1, dma, sync_record("DMA_WAIT", 0), k2, sync_record("STOP")]), device())
    exposed = model().stream(offsets([dma_record(4096), sync_record("DMA_WAIT", 0), conv_record(), conv_record(),
                                      sync_record("STOP")]), device())
    d_ov = overlapped.per_op[1]
    # the 4 KiB flash DMA (4096 cycles) runs under the first convolution, the second waits only for the DMA
    assert d_ov.start < overlapped.per_op[0].end
    assert d_ov.exclusive_cycles < 4096
    assert exposed.per_op[0].exclusive_cycles >= 4096
    assert exposed.total_cycles > overlapped.total_cycles
    assert overlapped.total_cycles < 2 * alone + 4096


def test_dma_wait_and_kernel_wait_stall_the_command_processor():
    k1 = conv_record()
    recs = offsets([k1, sync_record("KERNEL_WAIT", 0), dma_record(256), sync_record("DMA_WAIT", 0),
                    sync_record("STOP")])
    st = model().stream(recs, device())
    kw, dma = st.per_op[1], st.per_op[2]
    assert kw.end == pytest.approx(st.per_op[0].end)  # waited for the kernel
    assert dma.start >= st.per_op[0].end  # so the DMA could not overlap it
    assert st.per_op[3].end == pytest.approx(dma.end)


def test_shared_bandwidth_slows_concurrent_jobs():
    # a memory-bound elementwise op on SRAM and a DMA writing SRAM at the same time share 8 bytes/cycle
    n = 64 * 1024
    ifm = fm(64, 64, 16)
    ew = kernel_op("ELEMENTWISE", ifm, fm(64, 64, 16, name="ofm"), None, block=(64, 64, 16), sub_op="MAX",
                   ifm2=fm(64, 64, 16, name="ifm2"))
    rec = record(ew, ifm=(1, n), ifm2=(1, n), ofm=(1, n))
    m = model(mode=SRAM_ONLY)
    alone = m.stream(offsets([record(ew, ifm=(1, n), ifm2=(1, n), ofm=(1, n))]), device(SRAM_ONLY)).per_op[0]
    both = m.stream(offsets([dma_record(n, 0, 1), rec]), device(SRAM_ONLY))
    assert both.per_op[1].cycles > alone.cycles * 1.1
    assert both.total_cycles >= (3 * n + 2 * n) / 8  # every SRAM byte through one 8-byte/cycle port


def test_blockdep_allows_overlap_of_the_drain():
    def pair(bd):
        a = conv_record()
        b = conv_record()
        object.__setattr__(b.op, "blockdep", bd)
        return model().stream(offsets([a, b, sync_record("STOP")]), device())
    assert pair(3).total_cycles < pair(0).total_cycles
    assert pair(0).events[0x21] > 0 and pair(3).events[0x21] == 0


def test_events_beats_per_port_and_direction():
    rec = conv_record()
    st = model().stream(offsets([rec, dma_record(1000), sync_record("DMA_WAIT", 0), sync_record("STOP")]),
                        device(qsize=64))
    ev = st.events
    assert ev[0x82] == 16 * 16 * 32 // 8 + 1024 // 8 + 20  # IFM, weights, scales on AXI0
    assert ev[0x87] == 16 * 16 * 16 // 8 + 125  # OFM + DMA write
    assert ev[0x182] == 125 + 8  # DMA read from flash + the 64-byte command stream
    assert ev[0x187] == 0
    assert ev[0x30] > 0 and ev[0x40] > 0 and ev[0x50] > 0
    assert st.bytes_by_memory()["OffChipFlash"] == (1000 + 64, 0)


def test_exclusive_cycles_add_up_to_the_stream():
    recs = offsets([conv_record(), dma_record(3000), sync_record("DMA_WAIT", 0), conv_record(),
                    sync_record("STOP")])
    st = model().stream(recs, device(qsize=40))
    total = sum(t.exclusive_cycles for t in st.per_op)
    assert total <= st.total_cycles
    assert st.total_cycles - total < 200  # only the stream start-up is nobody's


def test_timing_params_from_the_board():
    recs = offsets([conv_record(), sync_record("STOP")])
    base = model().stream(recs, device()).total_cycles
    slow = model(op_setup_cycles=100).stream(offsets([conv_record(), sync_record("STOP")]), device()).total_cycles
    assert slow == base + 100


def test_timing_off():
    m = T.TimingModel(U55_128, HIGH_END, SHARED_SRAM, enabled=False)
    st = m.stream([conv_record(), sync_record("STOP")], device())
    assert st.total_cycles == 1 and st.events == {}
    assert len(st.per_op) == 2


def test_faster_variant_is_faster():
    op_small = conv_record(h=32, w=32, cin=64, cout=64)
    u64 = T.TimingModel(get_arch("ethos-u55-64"), HIGH_END, SHARED_SRAM).stream([op_small], device())
    u256 = T.TimingModel(get_arch("ethos-u55-256"), HIGH_END, SHARED_SRAM).stream(
        [conv_record(h=32, w=32, cin=64, cout=64)], device())
    assert u256.total_cycles < u64.total_cycles


def _fetched_block_by_block(out_len, blk, stride, k, dil, pad, in_len):
    """The obvious formulation: every block of the axis, every sub-kernel of at most 8 taps."""
    total = 0
    blk = max(1, min(blk, out_len))
    for ks in range(0, max(k, 1), 8):
        span = (min(8, k - ks) - 1) * dil + 1
        for o in range(0, out_len, blk):
            e = min(o + blk, out_len)
            lo, hi = o * stride - pad + ks * dil, (e - 1) * stride - pad + ks * dil + span
            total += max(0, min(hi, in_len) - max(lo, 0))
    return total


def test_fetched_rows_equal_the_block_by_block_sum_and_stay_fast():
    import random

    from fvp.machine.npu.timing.geometry import _fetched

    rng = random.Random(3)
    for _ in range(3000):
        args = (rng.randint(0, 200), rng.randint(1, 40), rng.randint(1, 4), rng.randint(1, 40), rng.randint(1, 3),
                rng.randint(0, 5), rng.randint(0, 500))
        assert _fetched(*args) == _fetched_block_by_block(*args), args
    # a grown stream (fuzz campaign, grown_shape #6695): 65,536 one-column blocks x a 2048-tap kernel took ~5 s
    # in the timing model, where --timelimit cannot interrupt; vectorised over the blocks, it is a few Python
    # lines per sub-kernel (counted, not timed: 256 sub-kernels, not 65,536 x 256 block visits)
    from testutil import python_lines

    _, lines = python_lines(_fetched, 65536, 1, 1, 2048, 1, 0, 67583)
    assert lines < 20 * 256, lines
