/*
 * The full-system test firmware (written for this project; no library code): what the tests of the QEMU engine
 * need that ExecuTorch's runners do not show. Its semihosting command line picks a scenario:
 *
 *   fullsystem_test [npu] [-i INPUT] [-o OUTPUT]  the Vela job of npu_job.h through a minimal Ethos-U register
 *                                                sequence (soft reset, AXI set-up, base pointers, run, WFI until
 *                                                interrupt 56), its output on UART0 (and in OUTPUT), the CPU cycles
 *                                                by DWT CYCCNT and the Armv8.1-M PMU, the NPU's by its PMU; EOT
 *   fullsystem_test hardfault                     a load from an address nothing answers (a BusFault that
 *                                                escalates to HardFault); the handler prints and loops
 *   fullsystem_test lockup                        the same, and the handler faults again (lock-up)
 *   fullsystem_test loop                          a loop that never ends (until --timelimit)
 *   fullsystem_test wfi                           WFI with nothing to wake the CPU (a deadlock)
 *   fullsystem_test exit N                        SYS_EXIT_EXTENDED with status N
 *
 * Console output goes to UART0 and, for the semihosting console line at the start, SYS_WRITE0.
 */
#include <stdint.h>

#include "npu_job.h"
#include "platform.h"

#define REG(base, off) (*(volatile uint32_t *)((base) + (off)))
#define UART(off) REG(UART0_BASE, off)
#define NPU(off) REG(NPU_BASE, off)
#define SCS(off) REG(SCS_BASE, off)

static uint8_t scratch[(NPU_JOB_SCRATCH_SIZE + 15u) & ~15u] __attribute__((aligned(16), section(".sram_bss")));
static volatile uint32_t npu_done, npu_status, fault_twice;
static char cmdline[256];

/* ------------------------------------------------------------------------------------------- semihosting */
static uint32_t semihost(uint32_t op, const void *arg) {
    register uint32_t r0 __asm("r0") = op;
    register const void *r1 __asm("r1") = arg;
    __asm volatile("bkpt %[imm]" : "+r"(r0) : "r"(r1), [imm] "i"(SH_BKPT) : "memory");
    return r0;
}

static uint32_t length(const char *s) {
    uint32_t n = 0;
    while (s[n]) {
        n++;
    }
    return n;
}

/* ------------------------------------------------------------------------------------------- UART0 */
static void putc_(char c) {
    while (UART(UART_STATE) & UART_STATE_TX_FULL) {
    }
    UART(UART_DATA) = (uint8_t)c;
}

static void puts_(const char *s) {
    while (*s) {
        putc_(*s++);
    }
}

static void putu(uint32_t v) {
    char buf[11];
    int i = 10;
    buf[i] = 0;
    do {
        buf[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v);
    puts_(&buf[i]);
}

static void puti(int32_t v) {
    if (v < 0) {
        putc_('-');
        putu((uint32_t)(-(v + 1)) + 1u);
    } else {
        putu((uint32_t)v);
    }
}

static void putx(uint32_t v) {
    puts_("0x");
    for (int s = 28; s >= 0; s -= 4) {
        putc_("0123456789abcdef"[(v >> s) & 0xfu]);
    }
}

/* ------------------------------------------------------------------------------------------- arguments */
static int same(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++, b++;
    }
    return *a == *b;
}

static int split(char *s, char **argv, int max) {
    int n = 0;
    while (*s && n < max) {
        while (*s == ' ') {
            *s++ = 0;
        }
        if (!*s) {
            break;
        }
        argv[n++] = s;
        while (*s && *s != ' ') {
            s++;
        }
    }
    return n;
}

/* ------------------------------------------------------------------------------------------- files */
static int file_open(const char *name, uint32_t mode) {
    uint32_t block[3] = {(uint32_t)name, mode, length(name)};
    return (int)semihost(SH_OPEN, block);
}

static void file_close(int h) {
    uint32_t block[1] = {(uint32_t)h};
    semihost(SH_CLOSE, block);
}

static uint32_t file_read(const char *name, void *buf, uint32_t size) {
    int h = file_open(name, 1 /* "rb" */);
    if (h < 0) {
        return 0;
    }
    uint32_t block[3] = {(uint32_t)h, (uint32_t)buf, size};
    uint32_t left = semihost(SH_READ, block);
    file_close(h);
    return size - left;
}

static int file_write(const char *name, const void *buf, uint32_t size) {
    int h = file_open(name, 5 /* "wb" */);
    if (h < 0) {
        return -1;
    }
    uint32_t block[3] = {(uint32_t)h, (uint32_t)buf, size};
    uint32_t left = semihost(SH_WRITE, block);
    file_close(h);
    return left == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------- handlers */
void npu_irq_handler(void) {
    npu_status = NPU(NPU_STATUS);
    NPU(NPU_CMD) = (NPU(NPU_CMD) & (NPU_CMD_CLOCK_Q_ENABLE | NPU_CMD_POWER_Q_ENABLE)) | NPU_CMD_CLEAR_IRQ;
    npu_done = 1;
}

void hard_fault_handler(void) {
    puts_("fullsystem_test: HardFault handler, CFSR ");
    putx(SCS(SCS_CFSR));
    puts_("\n");
    if (fault_twice) {
        __asm volatile("udf #0");
    }
    for (;;) {
    }
}

/* ------------------------------------------------------------------------------------------- cycle counters */
static void counters_start(void) {
    SCS(SCS_DEMCR) |= DEMCR_TRCENA;
    SCS(SCS_DWT_CYCCNT) = 0;
    SCS(SCS_DWT_CTRL) |= DWT_CTRL_CYCCNTENA;
    SCS(SCS_PMU_CTRL) = PMU_CTRL_E | PMU_CTRL_C;
    SCS(SCS_PMU_CNTENSET) = PMU_CNTEN_C;
}

/* ------------------------------------------------------------------------------------------- the NPU job */
static int npu_job(const char *input, const char *output) {
    int32_t in[NPU_JOB_ELEMENTS], out[NPU_JOB_ELEMENTS];
    for (uint32_t i = 0; i < NPU_JOB_ELEMENTS; i++) {
        in[i] = (int32_t)i + 1;
    }
    if (input && file_read(input, in, sizeof in) != sizeof in) {
        puts_("fullsystem_test: cannot read the input file\n");
        return 1;
    }
    puts_("fullsystem_test: NPU ID ");
    putx(NPU(NPU_ID));
    puts_(" CONFIG ");
    putx(NPU(NPU_CONFIG));
    puts_("\n");

    NPU(NPU_RESET) = NPU_RESET_CPL_CSL; /* secure, privileged */
    while (NPU(NPU_STATUS) & NPU_STATUS_RESET_STATUS) {
    }
    if ((NPU(NPU_PROT) & NPU_PROT_CPL_CSL) != NPU_PROT_CPL_CSL) {
        puts_("fullsystem_test: NPU soft reset failed\n");
        return 1;
    }
    NPU(NPU_QCONFIG) = NPU_QCONFIG_VALUE;
    NPU(NPU_REGIONCFG) = NPU_REGIONCFG_VALUE;
    for (uint32_t i = 0; i < NPU_AXI_LIMITS; i++) {
        NPU(NPU_AXI_LIMIT0 + 4u * i) = NPU_AXI_LIMIT_DEFAULT;
    }
    uint8_t *ip = scratch + NPU_JOB_INPUT_OFFSET;
    for (uint32_t i = 0; i < sizeof in; i++) {
        ip[i] = ((const uint8_t *)in)[i];
    }

    /* the driver payload: COP1, then actions (an optimizer config is skipped: the stream was made for this NPU) */
    const uint32_t *p = npu_payload, *end = npu_payload + NPU_JOB_PAYLOAD_BYTES / 4u;
    if (*p++ != COP1_FOURCC) {
        puts_("fullsystem_test: not a COP1 payload\n");
        return 1;
    }
    const uint32_t *stream = 0;
    uint32_t words = 0;
    while (p < end) {
        uint32_t action = *p & 0xffu;
        if (action == ACTION_OPTIMIZER_CONFIG) {
            p += 3;
        } else if (action == ACTION_COMMAND_STREAM) {
            words = ((*p >> 8) & 0xffu) << 16 | *p >> 16;
            stream = p + 1;
            p += 1 + words;
        } else if (action == ACTION_NOP) {
            p++;
        } else {
            puts_("fullsystem_test: unknown driver action\n");
            return 1;
        }
    }
    NPU(NPU_BASEP0) = (uint32_t)npu_weights;
    NPU(NPU_BASEP0 + NPU_BASEP_STRIDE) = (uint32_t)scratch;
    NPU(NPU_BASEP0 + 2 * NPU_BASEP_STRIDE) = (uint32_t)scratch;
    for (uint32_t i = 0; i < NPU_BASEPS; i++) {
        NPU(NPU_BASEP_HI0 + i * NPU_BASEP_STRIDE) = 0;
    }
    NPU(NPU_QBASE) = (uint32_t)stream;
    NPU(NPU_QBASE_HI) = 0;
    NPU(NPU_QSIZE) = 4u * words;
    NPU(NPU_PMCR) = NPU_PMCR_CNT_EN | NPU_PMCR_CYCLE_CNT_RST;
    NPU(NPU_PMCNTENSET) = NPU_PMCNTEN_CCNT;
    REG(SCS_BASE, SCS_NVIC_ISER + 4u * (NPU_IRQ / 32)) = 1u << (NPU_IRQ % 32);

    uint32_t dwt0 = SCS(SCS_DWT_CYCCNT), pmu0 = SCS(SCS_PMU_CCNTR);
    NPU(NPU_CMD) = (NPU(NPU_CMD) & (NPU_CMD_CLOCK_Q_ENABLE | NPU_CMD_POWER_Q_ENABLE)) |
                   NPU_CMD_TRANSITION_TO_RUNNING_STATE;
    while (!npu_done) {
        __asm volatile("wfi");
    }
    uint32_t dwt1 = SCS(SCS_DWT_CYCCNT), pmu1 = SCS(SCS_PMU_CCNTR);
    uint32_t npu_cycles = NPU(NPU_PMCCNTR);

    if (!(npu_status & NPU_STATUS_CMD_END_REACHED) ||
        npu_status & (NPU_STATUS_BUS_STATUS | NPU_STATUS_CMD_PARSE_ERROR | NPU_STATUS_WD_FAULT)) {
        puts_("fullsystem_test: NPU job failed, STATUS ");
        putx(npu_status);
        puts_("\n");
        return 1;
    }
    const uint8_t *op = scratch + NPU_JOB_OUTPUT_OFFSET;
    for (uint32_t i = 0; i < sizeof out; i++) {
        ((uint8_t *)out)[i] = op[i];
    }
    puts_("fullsystem_test: output");
    for (uint32_t i = 0; i < NPU_JOB_ELEMENTS; i++) {
        putc_(' ');
        puti(out[i]);
    }
    puts_("\nfullsystem_test: NPU cycles ");
    putu(npu_cycles);
    puts_(", CPU cycles DWT ");
    putu(dwt1 - dwt0);
    puts_(" PMU ");
    putu(pmu1 - pmu0);
    puts_("\n");
    if (output && file_write(output, out, sizeof out) != 0) {
        puts_("fullsystem_test: cannot write the output file\n");
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------- main */
int main(void) {
    UART(UART_BAUDDIV) = UART0_BAUDDIV;
    UART(UART_CTRL) = UART_CTRL_TX_EN;
    uint32_t block[2] = {(uint32_t)cmdline, sizeof cmdline - 1};
    if (semihost(SH_GET_CMDLINE, block) != 0) {
        cmdline[0] = 0;
    }
    semihost(SH_WRITE0, "fullsystem_test: semihosting console\n");
    char *argv[8];
    int argc = split(cmdline, argv, 8);
    const char *scenario = argc > 1 && argv[1][0] != '-' ? argv[1] : "npu";
    const char *input = 0, *output = 0;
    for (int i = 1; i + 1 < argc; i++) {
        if (same(argv[i], "-i")) {
            input = argv[i + 1];
        } else if (same(argv[i], "-o")) {
            output = argv[i + 1];
        }
    }
    counters_start();
    puts_("fullsystem_test: ");
    puts_(scenario);
    puts_("\n");
    int status = 0;
    if (same(scenario, "npu")) {
        status = npu_job(input, output);
    } else if (same(scenario, "hardfault") || same(scenario, "lockup")) {
        fault_twice = same(scenario, "lockup");
        (void)*(volatile uint32_t *)0x4f000000u; /* nothing answers there: BusFault, escalated to HardFault */
    } else if (same(scenario, "loop")) {
        volatile uint32_t n = 0;
        for (;;) {
            n++;
        }
    } else if (same(scenario, "wfi")) {
        __asm volatile("cpsid i\n wfi");
    } else if (same(scenario, "exit") && argc > 2) {
        uint32_t n = 0;
        for (const char *s = argv[2]; *s >= '0' && *s <= '9'; s++) {
            n = n * 10u + (uint32_t)(*s - '0');
        }
        uint32_t exit_block[2] = {SH_APPLICATION_EXIT, n};
        semihost(SH_EXIT_EXTENDED, exit_block);
    } else {
        puts_("fullsystem_test: unknown scenario\n");
        status = 1;
    }
    puts_(status ? "fullsystem_test: FAIL\n" : "fullsystem_test: PASS\n");
    putc_((char)UART_EOT);
    for (;;) {
        __asm volatile("wfi");
    }
}
