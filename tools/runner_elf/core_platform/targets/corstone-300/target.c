/*
 * Stand-in for the Corstone-300 target of Arm's ethos-u-core-platform (not fetchable from these machines),
 * written for this project so that ExecuTorch's arm_executor_runner links as run.sh builds it.
 *
 * Before main() (a constructor: the runner expects the NPU to be ready when it starts) this
 *   - enables UART0's transmitter (retarget.c writes newlib's stdout and stderr there);
 *   - initialises the Ethos-U core driver on the NPU's secure alias (secure and privileged, as the runner runs)
 *     and routes the NPU's interrupt to the driver's handler.
 *
 * Facts (addresses, IRQ, UART registers) come from platform_config.h, which the build generates from this
 * project's board (fvp/boards/corstone-300.yaml) and hwdesc/cmsdk_uart.py.
 * Simplified against core_platform: no MPU or cache set-up and no timing-adapter programming (the ETHOSU_TA_*
 * definitions ExecuTorch's corstone_utils.cmake adds to ethosu_target_common are accepted and unused); the
 * driver gets no fast memory of its own (ExecuTorch's EthosUBackend passes its fast scratch per inference).
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ARMCM55.h"
#include "ethosu_driver.h"
#include "platform_config.h"

#define UART_REG(off) (*(volatile uint32_t *)(PLATFORM_UART0_BASE + (off)))

static struct ethosu_driver npu0;

static void npu0_irq_handler(void) {
    ethosu_irq_handler(&npu0);
}

__attribute__((constructor(101))) static void target_setup(void) {
    UART_REG(CMSDK_UART_BAUDDIV) = PLATFORM_UART0_BAUDDIV;
    UART_REG(CMSDK_UART_CTRL) = CMSDK_UART_CTRL_TX_EN;

    if (ethosu_init(&npu0, (void *)PLATFORM_NPU_BASE, NULL, 0, 1, 1) != 0) {
        printf("Failed to initialize NPU.\n");
        return;
    }
    NVIC_SetVector((IRQn_Type)PLATFORM_NPU_IRQ, (uint32_t)&npu0_irq_handler);
    NVIC_EnableIRQ((IRQn_Type)PLATFORM_NPU_IRQ);
}
