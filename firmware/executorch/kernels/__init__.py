"""CPU kernels (portable aten ops and cortex_m quantize/dequantize)."""
