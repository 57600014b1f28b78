"""The host tools around the machine: the ``fvp`` command, the FVP drop-in, compare, bench, reports, the
tutorial flow, the ExecuTorch glue and the model zoo (package data). The machine never imports this room."""
