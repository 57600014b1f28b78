"""The normalisation kernels (``kernels/portable/norm.py``) against PyTorch's outputs."""

import numpy as np
import pytest

from kernels_common import Harness, close, nn_ref, ref, want


def test_batch_norm():
    h = Harness()
    want = nn_ref("batch_norm")
    out, o1, o2 = h.tensor(shape=want.shape), h.tensor(shape=(0,)), h.tensor(shape=(0,))
    ins = [h.tensor(nn_ref("batch_norm", i)) for i in range(5)]
    h.call("aten::_native_batch_norm_legit_no_training.out", ins + [0.1, 1e-5, out, o1, o2])
    close(out.array(h.bus), want)


def test_batch_norm_legit_variants():
    """``_native_batch_norm_legit.out`` in inference mode is the no-training kernel; the portable library
    rejects training mode, and ``no_stats_out`` (instance norm) always fails with InvalidArgument."""
    from firmware.executorch.error import Error, RuntimeFailure

    h = Harness()
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    mean, var = np.array([1, 2, 3], np.float32), np.array([1, 4, 9], np.float32)
    args = [h.tensor(x), None, None, h.tensor(mean), h.tensor(var)]
    out, o1, o2 = h.tensor(shape=x.shape), h.tensor(shape=(0,)), h.tensor(shape=(0,))
    h.call("aten::_native_batch_norm_legit.out", args + [False, 0.1, 0.0, out, o1, o2, out, o1, o2])
    close(out.array(h.bus), (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var).reshape(1, 3, 1, 1))
    for op, extra in (("aten::_native_batch_norm_legit.out", [True, 0.1, 1e-5]),
                      ("aten::_native_batch_norm_legit.no_stats_out", [False, 0.1, 1e-5])):
        head = args if "no_stats" not in op else args[:3]
        with pytest.raises(RuntimeFailure) as e:
            h.call(op, head + extra + [out, o1, o2, out, o1, o2])
        assert e.value.code == Error.InvalidArgument


def test_layer_norm_and_group_norm():
    h = Harness()
    w = want("layer_norm")
    out, mean, rstd = h.like(w), h.tensor(shape=(2, 5, 1)), h.tensor(shape=(2, 5, 1))
    ins = [h.tensor(ref("layer_norm", i)) for i in range(3)]
    h.call("aten::native_layer_norm.out", [ins[0], h.ints([12]), ins[1], ins[2], 1e-5, out, mean, rstd,
                                           out, mean, rstd])
    close(out.array(h.bus), w, 1e-4)
    x = ref("layer_norm", 0)
    close(mean.array(h.bus)[..., 0], x.mean(-1), 1e-5)
    h = Harness()
    w = want("group_norm")
    out, mean, rstd = h.like(w), h.tensor(shape=(2, 3)), h.tensor(shape=(2, 3))
    ins = [h.tensor(ref("group_norm", i)) for i in range(3)]
    h.call("aten::native_group_norm.out", ins + [2, 6, 12, 3, 1e-5, out, mean, rstd, out, mean, rstd])
    close(out.array(h.bus), w, 1e-4)
