/*
 * newlib retargeting for the Corstone-300 stand-in target (see target.c): stdout and stderr go to UART0, _exit
 * writes the EOT byte the FVP's mps3_board.uart0.shutdown_on_eot ends the simulation on. Left out of a
 * semihosting build (SEMIHOSTING=ON links rdimon, which retargets to the host), as ExecuTorch's runner CMake
 * leaves out core_platform's retarget.c. Simplified: no input (_read returns end of file).
 */

#include <errno.h>
#include <stdint.h>

#include "ARMCM55.h"
#include "platform_config.h"

#define UART_REG(off) (*(volatile uint32_t *)(PLATFORM_UART0_BASE + (off)))

static void uart_putc(char c) {
    while (UART_REG(CMSDK_UART_STATE) & CMSDK_UART_STATE_TX_FULL) {
    }
    UART_REG(CMSDK_UART_DATA) = (uint8_t)c;
}

int _write(int fd, const char *buf, int len) {
    if (fd != 1 && fd != 2) {
        errno = EBADF;
        return -1;
    }
    for (int i = 0; i < len; i++) {
        uart_putc(buf[i]);
    }
    return len;
}

int _read(int fd, char *buf, int len) {
    (void)fd;
    (void)buf;
    (void)len;
    return 0;
}

void _exit(int status) {
    (void)status;
    uart_putc(PLATFORM_EOT);
    for (;;) {
        __WFI();
    }
}
