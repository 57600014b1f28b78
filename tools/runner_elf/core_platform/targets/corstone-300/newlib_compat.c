/*
 * posix_memalign for newlib 3.3 (Debian's libnewlib-arm-none-eabi 3.3.0): its aligned_alloc calls
 * posix_memalign, which that libc.a does not define, so a runner that uses aligned_alloc (ExecuTorch's ETDump,
 * through flatcc) does not link. Newer newlib releases (Arm's GNU toolchain) define it; there this weak one is
 * not used. Part of the Corstone-300 stand-in (see target.c), not of Arm's core_platform.
 * POSIX: EINVAL unless the alignment is a power of two and a multiple of sizeof(void *); ENOMEM when out of memory.
 */

#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>

__attribute__((weak)) int posix_memalign(void **memptr, size_t alignment, size_t size) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment % sizeof(void *) != 0) {
        return EINVAL;
    }
    void *p = memalign(alignment, size);
    if (p == NULL) {
        return ENOMEM;
    }
    *memptr = p;
    return 0;
}
