"""ExecuTorch runtime pieces: program reader, memory, kernels, delegates, logging."""
