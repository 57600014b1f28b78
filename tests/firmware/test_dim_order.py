"""Tensors in a non-default dim order (channels-last), as ExecuTorch's runtime treats them.

The fixture (tests/data/channels_last) is a real program whose input and first output are channels-last while
its bundled test data is contiguous. ExecuTorch's ``set_input`` copies bytes as they are and
``tensors_are_close`` aborts on differing strides: the simulator must do the same (and say why on stderr),
and with the input laid out in the tensor's memory order (a ``.npy`` in logical shape) the NPU results must be
bit-exact with the TOSA reference model.
"""

from __future__ import annotations

import numpy as np

from testutil import DATA, run_fvp

D = DATA / "channels_last"


def test_bundled_contiguous_data_for_channels_last_tensors_aborts_like_the_runtime():
    rc, out, err = run_fvp("run", D / "chlast_u55-128.bpte")
    assert rc == 1
    assert ("bundled input 0 is stored in dim order [0, 1, 2, 3] but the method's input tensor has dim order "
            "[0, 2, 3, 1]") in err
    assert "=== Error stats for testset 0 ===" in out
    assert ("tensors_are_close()] In function tensors_are_close(), assert failed (ArrayRef<executorch::aten::"
            "StridesType>(strides, bundled_tensor.dim()) == method_output_tensor.strides()): The two inputs of "
            "`tensors_are_close` function shall have same strides") in out
    assert "Test_result: PASS" not in out and "Traceback" not in out + err


def test_npy_input_is_laid_out_in_the_tensor_dim_order(tmp_path):
    z = np.load(D / "oracle.npz")
    np.save(tmp_path / "in.npy", z["in0_0"].astype(np.float32))
    rc, out, err = run_fvp("run", D / "chlast_u55-128.pte", "-i", tmp_path / "in.npy", "-o", tmp_path / "out")
    assert rc == 0, out[-2000:] + err
    # output 0 is channels-last: the file holds it in memory order (NHWC)
    got0 = np.fromfile(tmp_path / "out-0.bin", dtype=np.float32).reshape(1, 5, 4, 4).transpose(0, 3, 1, 2)
    got1 = np.fromfile(tmp_path / "out-1.bin", dtype=np.float32).reshape(1, 8)
    assert np.array_equal(got0, z["out0_0"]) and np.array_equal(got1, z["out0_1"])
    # the same bytes as a raw file in memory order give the same outputs
    z["in0_0"].astype(np.float32).transpose(0, 2, 3, 1).tofile(tmp_path / "in.bin")
    rc, out2, err = run_fvp("run", D / "chlast_u55-128.pte", "-i", tmp_path / "in.bin")
    assert rc == 0 and [ln for ln in out2.splitlines() if ln.startswith("Output")] == \
        [ln for ln in out.splitlines() if ln.startswith("Output")]


def test_npy_input_of_the_wrong_dtype_is_refused(tmp_path):
    np.save(tmp_path / "in.npy", np.ones((1, 3, 12, 10), dtype=np.float64))
    rc, out, err = run_fvp("run", D / "chlast_u55-128.pte", "-i", tmp_path / "in.npy")
    assert rc == 1 and "array of float64 but input 0 is a Float tensor (float32)" in out
    assert "Traceback" not in out + err
