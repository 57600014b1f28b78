"""The operator registry (``kernels/registry.py``): one declaration per kernel, with its argument types; the
runner's lookup; a missing kernel fails the load naming the operator."""

import pytest

from firmware.executorch.kernels import KERNELS, REGISTRY, SIGNATURES, check_arguments
from firmware.executorch.kernels.registry import Registry
from testutil import CORPUS, run_fvp


def test_every_kernel_is_registered_once_with_its_types():
    assert len(REGISTRY) == len(SIGNATURES) == 239
    assert KERNELS is REGISTRY
    assert set(REGISTRY.unboxed()) == set(REGISTRY)
    namespaces = {name.split("::")[0] for name in REGISTRY}
    assert namespaces == {"aten", "dim_order_ops", "quantized_decomposed", "cortex_m"}
    # one function may serve several operators (one @kernel line each)
    assert REGISTRY["aten::view_copy.out"] is REGISTRY["aten::clone.out"]
    assert SIGNATURES["aten::view_copy.out"] == "T,I" and SIGNATURES["aten::clone.out"] == "T,i?"


def test_kernels_live_in_their_family_module():
    where = {name: REGISTRY[name].__module__.rsplit(".", 1)[-1] for name in REGISTRY}
    assert where["aten::add.out"] == "binary"
    assert where["aten::convolution.out"] == "conv"
    assert where["aten::_softmax.out"] == "activation"
    assert where["aten::scatter_add.out"] == "indexing"
    assert where["cortex_m::quantized_conv2d.out"] == "conv"
    assert REGISTRY["cortex_m::quantized_conv2d.out"].__module__.endswith("cortex_m.conv")
    assert where["cortex_m::quantize_per_tensor.out"] == "quantized"


def test_a_second_registration_or_a_bad_declaration_is_refused():
    r = Registry()

    @r.kernel("aten::foo.out", "T,s?")
    def foo(ctx, args):
        return None

    assert r["aten::foo.out"] is foo and r.signature("aten::foo.out") == "T,s?"
    with pytest.raises(ValueError, match="registered twice"):
        r.register(("aten::foo.out", "T", foo))
    with pytest.raises(ValueError, match="unknown type code"):
        r.kernel("aten::bar.out", "T,x")(foo)
    with pytest.raises(ValueError, match="namespace::op"):
        r.kernel("bar.out", "T")(foo)


def test_check_arguments_names_the_first_wrong_tag():
    assert check_arguments("aten::hardtanh.out", [None, 1, 2.0], []) == (0, "T", "None")
    assert check_arguments("aten::no_such_op.out", [None], []) is None


def test_missing_kernel_fails_the_load_naming_the_operator(tmp_path):
    data = (CORPUS / "add_fp_cpu.pte").read_bytes()
    assert data.count(b"aten::add") == 1
    p = tmp_path / "renamed.pte"
    p.write_bytes(data.replace(b"aten::add", b"aten::adz"))
    rc, out, err = run_fvp("run", p)
    assert rc == 1
    assert [l for l in out.splitlines() if l.startswith("E ") and l.endswith("Missing operator: [0] aten::adz.out")]
    assert "Loading of method forward failed with status 0x14" in out
