"""The Thumb-2 load/store decoder of the full-system bridge, against encodings GNU as wrote for Armv8.1-M
(``arm-none-eabi-as -march=armv8.1-m.main``; the listing's words are copied here as the test's facts)."""

import pytest

from fvp.machine.qemu import thumb

REGS = [0x1000 * i for i in range(16)]  # r0 = 0, r1 = 0x1000, ..., r13 (sp) = 0xD000
PC = 0x1000_0100

CASES = [  # (hw1, hw2 or 0, load, [(address, width, register, signed)], writeback, size, assembler)
    (0x6A8B, 0, True, [(0x1000 + 40, 4, 3, False)], None, 2, "ldr r3, [r1, #40]"),
    (0x6050, 0, False, [(0x2000 + 4, 4, 0, False)], None, 2, "str r0, [r2, #4]"),
    (0x78D1, 0, True, [(0x2000 + 3, 1, 1, False)], None, 2, "ldrb r1, [r2, #3]"),
    (0x80EC, 0, False, [(0x5000 + 6, 2, 4, False)], None, 2, "strh r4, [r5, #6]"),
    (0x9A02, 0, True, [(0xD000 + 8, 4, 2, False)], None, 2, "ldr r2, [sp, #8]"),
    (0x5888, 0, True, [(0x1000 + 0x2000, 4, 0, False)], None, 2, "ldr r0, [r1, r2]"),
    (0x5F63, 0, True, [(0x4000 + 0x5000, 2, 3, True)], None, 2, "ldrsh r3, [r4, r5]"),
    (0x4A1D, 0, True, [(((PC + 4) & ~3) + 116, 4, 2, False)], None, 2, "ldr r2, [pc, #116]"),
    (0xC806, 0, True, [(0, 4, 1, False), (4, 4, 2, False)], (0, 8), 2, "ldmia r0!, {r1, r2}"),
    (0xC803, 0, True, [(0, 4, 0, False), (4, 4, 1, False)], None, 2, "ldmia r0, {r0, r1}"),
    (0xC312, 0, False, [(0x3000, 4, 1, False), (0x3004, 4, 4, False)], (3, 0x3008), 2, "stmia r3!, {r1, r4}"),
    (0xF8DA, 0x9123, True, [(0xA000 + 0x123, 4, 9, False)], None, 4, "ldr.w r9, [sl, #291]"),
    (0xF842, 0x8D04, False, [(0x2000 - 4, 4, 8, False)], (2, 0x2000 - 4), 4, "str.w r8, [r2, #-4]!"),
    (0xF850, 0x1B08, True, [(0, 4, 1, False)], (0, 8), 4, "ldr.w r1, [r0], #8"),
    (0xF913, 0x2C01, True, [(0x3000 - 1, 1, 2, True)], None, 4, "ldrsb.w r2, [r3, #-1]"),
    (0xF855, 0x4026, True, [(0x5000 + (0x6000 << 2), 4, 4, False)], None, 4, "ldr.w r4, [r5, r6, lsl #2]"),
    (0xE9C4, 0x2302, False, [(0x4008, 4, 2, False), (0x400C, 4, 3, False)], None, 4, "strd r2, r3, [r4, #8]"),
    (0xE872, 0x0102, True, [(0x2000, 4, 0, False), (0x2004, 4, 1, False)], (2, 0x2000 - 8), 4,
     "ldrd r0, r1, [r2], #-8"),
    (0xE931, 0x001C, True, [(0x1000 - 12, 4, 2, False), (0x1000 - 8, 4, 3, False), (0x1000 - 4, 4, 4, False)],
     (1, 0x1000 - 12), 4, "ldmdb r1!, {r2, r3, r4}"),
    (0xE886, 0x0281, False, [(0x6000, 4, 0, False), (0x6004, 4, 7, False), (0x6008, 4, 9, False)], None, 4,
     "stmia.w r6, {r0, r7, r9}"),
    (0xE851, 0x0F01, True, [(0x1004, 4, 0, False)], None, 4, "ldrex r0, [r1, #4]"),
    (0xE844, 0x3200, False, [(0x4000, 4, 3, False)], None, 4, "strex r2, r3, [r4]"),
    (0xE8D6, 0x5FAF, True, [(0x6000, 4, 5, False)], None, 4, "lda r5, [r6]"),
    (0xE8C8, 0x7F9F, False, [(0x8000, 2, 7, False)], None, 4, "stlh r7, [r8]"),
    (0xF85F, 0x000C, True, [(((PC + 4) & ~3) - 12, 4, 0, False)], None, 4, "ldr.w r0, [pc, #-12]"),
    (0xF852, 0x1E05, True, [(0x2005, 4, 1, False)], None, 4, "ldrt r1, [r2, #5]"),
]


@pytest.mark.parametrize("hw1,hw2,load,transfers,writeback,size,text", CASES, ids=[c[-1] for c in CASES])
def test_decodes_what_the_assembler_wrote(hw1, hw2, load, transfers, writeback, size, text):
    acc = thumb.decode(hw1, hw2, REGS, PC)
    assert acc.size == size and acc.load == load, text
    assert [(t.address, t.width, t.register, t.signed) for t in acc.transfers] == transfers, text
    assert acc.writeback == writeback, text


def test_strex_reports_success_in_its_status_register():
    assert thumb.decode(0xE844, 0x3200, REGS, PC).status == 2


@pytest.mark.parametrize("hw1,hw2", [(0xBF00, 0), (0x4770, 0), (0xED9F, 0x6B13), (0xF000, 0xF800)],
                         ids=["nop", "bx lr", "vldr d6, [pc]", "bl"])
def test_other_instructions_are_refused_with_their_encoding(hw1, hw2):
    with pytest.raises(thumb.Undecodable, match=f"{hw1:04x}"):
        thumb.decode(hw1, hw2, REGS, PC)


def test_it_state_advances_and_ends():
    # ITSTATE 0b0000_1100 in xPSR bits [26:25] and [15:10]; ITAdvance (Armv8-M ARM) shifts ITSTATE[4:0]
    xpsr = thumb.with_it_state(0x0100_0000, 0b0000_1100)
    assert thumb.it_state(xpsr) == 0b0000_1100
    nxt = thumb.it_advance(xpsr)
    assert thumb.it_state(nxt) == 0b0001_1000  # ITSTATE[4:0] shifted left: one more instruction
    assert thumb.it_state(thumb.it_advance(nxt)) == 0  # IT[2:0] was 0: the block ends
    assert thumb.it_advance(0x0100_0000) == 0x0100_0000  # outside a block nothing changes


def test_extend():
    assert thumb.extend(0x80, 1, True) == 0xFFFF_FF80 and thumb.extend(0x80, 1, False) == 0x80
    assert thumb.extend(0x1_8000, 2, True) == 0xFFFF_8000
