"""Tests of fvp.machine, laid out as the package is (npu/ for fvp.machine.npu)."""
