/*
 * Start-up of the full-system test firmware (written for this project): the vector table, the reset handler
 * (copy .data from its load address, zero .bss, enable the FP/MVE coprocessors, point VTOR at the table, call
 * main) and the fault handlers. Facts (SCS offsets, the NPU's interrupt) come from platform.h, which gen.py
 * writes from hwdesc and the board YAML.
 */
#include <stdint.h>

#include "platform.h"

#define SCS(off) (*(volatile uint32_t *)(SCS_BASE + (off)))
#define CPACR 0x0000ed88u /* Armv8-M ARM: CP10/CP11 access bits [23:20] (FP and MVE) */

extern uint32_t __stack_top, __data_start, __data_end, __data_load, __bss_start, __bss_end;
extern int main(void);
extern void npu_irq_handler(void);
extern void hard_fault_handler(void);

void reset_handler(void);
void default_handler(void);

__attribute__((section(".vectors"), used)) void (*const vectors[16 + 64])(void) = {
    [0] = (void (*)(void))&__stack_top,
    [1] = reset_handler,
    [2] = default_handler,     /* NMI */
    [3] = hard_fault_handler,  /* HardFault */
    [4] = default_handler,     /* MemManage */
    [5] = default_handler,     /* BusFault */
    [6] = default_handler,     /* UsageFault */
    [7] = default_handler,     /* SecureFault */
    [11] = default_handler,    /* SVCall */
    [14] = default_handler,    /* PendSV */
    [15] = default_handler,    /* SysTick */
    [16 + NPU_IRQ] = npu_irq_handler,
};

void reset_handler(void) {
    uint32_t *src = &__data_load, *dst = &__data_start;
    while (dst < &__data_end) {
        *dst++ = *src++;
    }
    for (dst = &__bss_start; dst < &__bss_end; dst++) {
        *dst = 0;
    }
    SCS(CPACR) |= 0xfu << 20;
    SCS(SCS_VTOR) = (uint32_t)vectors;
    __asm volatile("dsb\n isb" ::: "memory");
    main();
    for (;;) {
    }
}

void default_handler(void) {
    for (;;) {
    }
}
