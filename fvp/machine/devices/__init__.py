"""Memory-mapped devices of the Corstone-300 model (UART, stubs, the Cortex-M55 system block, interrupts)."""
