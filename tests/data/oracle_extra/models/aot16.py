"""Run ExecuTorch's aot_arm_compiler with two patches for making oracles:

* ORACLE_A16W8=1: A16W8 quantization (int16 activations) for an Ethos-U target. aot_arm_compiler picks
  QuantMode.A16W8 only when the target string contains "int16"; Ethos-U compile specs support the int16 TOSA
  extension, so the target string is made to answer True to that test.
* every partition's TOSA intermediate gets its own file: the backend names it after the delegation tag of the
  first node carrying one, which can be a placeholder shared with another partition (then two partitions
  write the same file). Use the first call_function node's tag, and make names unique.
"""
import os
import executorch.backends.arm.scripts.aot_arm_compiler as aot
import executorch.backends.arm.tosa.backend as tb


class _T(str):
    def __contains__(self, x):
        return x == "int16" or str.__contains__(self, x)


_orig = aot._get_args


def _get_args():
    a = _orig()
    if os.environ.get("ORACLE_A16W8"):
        a.target = _T(a.target)
    return a


_seen = set()


def _first_tag(gm):
    tag = ""
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.meta.get("delegation_tag"):
            tag = n.meta["delegation_tag"]
            break
    if not tag:
        for n in gm.graph.nodes:
            if n.meta.get("delegation_tag"):
                tag = n.meta["delegation_tag"]
                break
    base, i = tag, 0
    while tag in _seen:
        i += 1
        tag = f"{base}x{i}"
    _seen.add(tag)
    return tag


aot._get_args = _get_args
if os.environ.get("ORACLE_SEGMENTS"):
    # ExecuTorch's default: delegate blobs (and constants) in segments after the flatbuffer
    _cfg = aot.ExecutorchBackendConfig

    def _config(**kw):
        kw["extract_delegate_segments"] = True
        return _cfg(**kw)
    aot.ExecutorchBackendConfig = _config
tb.arm_get_first_delegation_tag = _first_tag
if __name__ == "__main__":
    aot.main()
