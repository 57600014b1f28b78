"""The TFLite Micro flow's entry points: ``fvp run model.tflite --vela`` (a real Vela compile for the board's NPU),
``fvp elf model.tflite -o app.elf`` (an MLEK-shaped application ELF) and the drop-in's ``-a`` on such an ELF (and on
one laid out as MLEK's linker script leaves it), to the same outputs as ``fvp run``; the error paths."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from testutil import ROOT, remarks, run_fvp

sys.path.insert(0, str(ROOT / "tests" / "firmware" / "tflm"))  # vela_models, tflite_builder

pytest.importorskip("tflite")
pytest.importorskip("ethosu.vela")
needs_elf = pytest.mark.skipif(importlib.util.find_spec("elftools") is None,
                               reason="pyelftools is not installed (pip install '.[elf]')")
UART = ["-C", "mps3_board.uart0.out_file=-"]


def _active(log: str) -> int:
    return int(log.split("NPU ACTIVE cycles: ")[1].split()[0])


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The split model (CONV_2D + ADD on the NPU, DEQUANTIZE + SOFTMAX on the CPU): source, Vela-compiled (by the
    tests' own Vela call, for ethos-u55-128 / Ethos_U55_High_End_Embedded / Shared_Sram), an input."""
    from models import inputs_for
    from vela_models import compile_with_vela, source_model

    d = tmp_path_factory.mktemp("tflm_entry")
    src = d / "split.tflite"
    src.write_bytes(source_model())
    compiled = compile_with_vela(src, d / "vela")
    np.save(d / "in.npy", inputs_for(src.read_bytes(), 5)[0])
    return src, compiled, d / "in.npy"


@pytest.fixture(scope="module")
def reference(models, tmp_path_factory):
    """``fvp run`` of the compiled model: the log and the output bytes every other entry point must give."""
    _, compiled, x = models
    out = tmp_path_factory.mktemp("ref") / "out"
    rc, log, err = run_fvp("run", compiled, "-i", x, "-o", out)
    assert rc == 0, err + log
    return log, (out.parent / "out-0.bin").read_bytes()


# ------------------------------------------------------------------ fvp run --vela


def test_vela_compiles_for_the_board_and_runs(models, reference, tmp_path):
    src, _, x = models
    before = sorted(p.name for p in src.parent.iterdir())
    env = {"FVP_CACHE_DIR": str(tmp_path / "cache")}
    rc, log, err = run_fvp("run", src, "--vela", "-i", x, "-o", tmp_path / "out", env_extra=env, new_process=False)
    assert rc == 0, err + log
    assert "INFO - \tOperator 0: ethos-u" in log and "INFO - \tOperator 2: SOFTMAX" in log
    assert (tmp_path / "out-0.bin").read_bytes() == reference[1]
    assert _active(log) == _active(reference[0]) > 0  # the same stream as the tests' own Vela call
    assert sorted(p.name for p in src.parent.iterdir()) == before  # nothing written beside the user's file
    cached = list((tmp_path / "cache").glob("v*/vela/*/*"))
    assert len(cached) == 1
    # from the cache: the same run
    rc, log2, err = run_fvp("run", src, "--vela", "-i", x, env_extra=env, new_process=False)
    assert rc == 0 and _active(log2) == _active(log)


def test_vela_follows_the_target_and_the_memory_mode(models):
    src, compiled, _ = models
    rc, log, err = run_fvp("run", src, "--vela", "--target", "ethos-u65-256", env_extra={"FVP_CACHE": "0"},
                           new_process=False)
    assert rc == 0 and "NPU config mismatch" not in log, err + log  # compiled for the U65 it runs on
    rc, log, _ = run_fvp("run", compiled, "--target", "ethos-u65-256")
    assert rc == 1 and "NPU config mismatch" in log  # the U55-128 stream is refused there
    rc, log, err = run_fvp("run", src, "--vela", "--target", "ethos-u55-64", "-C", "npu.memory_mode=Sram_Only",
                           "--vela-args=--optimise Size", env_extra={"FVP_CACHE": "0"}, new_process=False)
    assert rc == 0, err + log


def test_vela_on_a_compiled_model_says_so_and_runs_it(models, reference):
    _, compiled, x = models
    rc, log, err = run_fvp("run", compiled, "--vela", "-i", x)
    assert rc == 0, err + log
    assert remarks(err) == [f"fvp: note: {compiled.name} already has an ethos-u operator (it is Vela-compiled): "
                            f"--vela runs it as it is"]
    assert _active(log) == _active(reference[0])


@pytest.mark.parametrize("args, needle", [
    (["--vela-args", "--optimise Foo"], "--vela: Vela failed on split.tflite (exit status 1): KeyError: 'Foo'"),
    (["--vela-args", "--memory-mode Sram_Only"], "--memory-mode is set from the board; use -C npu.memory_mode"),
    (["--vela-args=--accelerator-config=ethos-u55-256"], "--accelerator-config is set from the board"),
    (["--vela-args", "--config 'unclosed"], "--vela-args"),
])
def test_vela_errors_are_one_line_exit_2(models, args, needle):
    src, _, _ = models
    rc, log, err = run_fvp("run", src, *args, env_extra={"FVP_CACHE": "0"}, new_process=False)
    assert rc == 2 and log == "" and len(err.splitlines()) == 1 and needle in err, err


def test_vela_refuses_what_it_cannot_compile(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x10\x00\x00\x00TFL3" + bytes(range(64)))  # a TFLite identifier, then nothing valid
    rc, log, err = run_fvp("run", bad, "--vela", env_extra={"FVP_CACHE": "0"}, new_process=False)
    assert rc == 2 and log == "" and len(err.splitlines()) == 1, err
    assert err.startswith("fvp: error: --vela: Vela failed on bad.tflite (exit status ")
    pte = ROOT / "tests" / "data" / "corpus" / "add_u55-128.bpte"
    rc, log, err = run_fvp("run", pte, "--vela")
    assert rc == 2 and "is not a .tflite" in err and len(err.splitlines()) == 1
    rc, log, err = run_fvp("run", "--vela")
    assert rc == 2 and "give the MODEL" in err


def test_vela_missing_is_one_line_exit_2(models, monkeypatch, capsys):
    from fvp.host import cli
    from fvp.host.programs import vela

    monkeypatch.setattr(vela, "available", lambda: False)
    assert cli.main(["run", str(models[0]), "--vela"]) == 2
    err = capsys.readouterr().err
    assert err == f"fvp: error: --vela: ethos-u-vela is not installed: {vela.VELA_HINT}\n"


# ------------------------------------------------------------------ ELFs


def test_c_names_of_mangled_symbols():
    from fvp.host.dropin.elf_image import c_name

    assert c_name("_ZN3arm3app16inference_runnerL8nn_modelE") == "nn_model"
    assert c_name("_ZN3arm3appL13activationBufE") == "activationBuf"
    assert c_name("nn_model") == "nn_model"
    assert c_name("_ZN3arm3app16inference_runner15GetModelPointerEv").endswith("Ev")  # a function: not a name
    assert c_name("_ZN3arm9nn_modelE") == "_ZN3arm9nn_modelE"  # a length that does not fit


@needs_elf
def test_fvp_elf_round_trip_through_the_dropin(models, reference, tmp_path):
    from fvp.host.dropin.elf_image import read_elf

    _, compiled, x = models
    app = tmp_path / "app.elf"
    rc, _, err = run_fvp("elf", compiled, "-o", app)
    assert rc == 0, err
    assert "in nn_model at 0x70000000 for ethos-u55-128; pools: arena 2097152 bytes at 0x31000000" in err
    img = read_elf(str(app))
    assert img.program == compiled.read_bytes() and img.pools == {"arena": (0x3100_0000, 2 << 20)}
    rc, log, err = run_fvp(*UART, "-a", app, "-C", f"cpu0.semihosting-cmd_line=runner -i {x} -o {tmp_path / 'e'}",
                           prog="fvp.host.dropin")
    assert rc == 0, err + log
    assert f"Info: application: app.elf:nn_model ({compiled.stat().st_size} bytes); pools from the ELF: arena " \
           f"2097152 bytes" in log
    assert (tmp_path / "e-0.bin").read_bytes() == reference[1]
    assert _active(log) == _active(reference[0])


@needs_elf
def test_the_dropin_takes_the_arena_from_the_elf(models, tmp_path):
    _, compiled, _ = models
    app = tmp_path / "small.elf"
    rc, _, err = run_fvp("elf", compiled, "-o", app, "-C", "firmware.pools.arena.size=256")
    assert rc == 0, err
    rc, log, err = run_fvp(*UART, "-a", app, prog="fvp.host.dropin")
    assert rc == 1 and "ERROR - Failed to resize buffer. Requested:" in log
    assert "pools from the ELF: arena 256 bytes" in log


@needs_elf
def test_an_elf_linked_as_mlek_links_it(models, reference, tmp_path):
    """MLEK's GNU linker script merges the nn_model section into .ddr.at_ddr and the arena's into .sram; the
    symbols keep their C++ names (static, in the use case's namespace)."""
    from fvp.host.dropin.elf_image import read_elf
    from fvp.host.dropin.elf_writer import runner_elf

    _, compiled, x = models
    program = compiled.read_bytes()
    app = tmp_path / "ethos-u-inference_runner.axf"
    app.write_bytes(runner_elf(program, 0x7000_0040, {"arena": (0x3100_0000, 1 << 20)}, model_section=".ddr.at_ddr",
                               model_symbol="_ZN3arm3app16inference_runnerL8nn_modelE",
                               pool_layout={"arena": (".sram", "_ZN3arm3appL13activationBufE")}))
    img = read_elf(str(app))
    assert img.program == program and img.program_address == 0x7000_0040 and img.pools["arena"][1] == 1 << 20
    rc, log, err = run_fvp(*UART, "-a", app, "-C", f"cpu0.semihosting-cmd_line=runner -i {x} -o {tmp_path / 'e'}",
                           prog="fvp.host.dropin")
    assert rc == 0, err + log
    assert "pools from the ELF: arena 1048576 bytes" in log
    assert (tmp_path / "e-0.bin").read_bytes() == reference[1]


@needs_elf
def test_elfs_without_a_usable_model_are_refused(tmp_path):
    from fvp.host.dropin.elf_writer import runner_elf

    cases = {
        "none.elf": (runner_elf(b"\x10\x00\x00\x00NOPE" + bytes(56), 0x7000_0000, {}, model_section="nn_model",
                                model_symbol="nn_model"), "holds neither an ExecuTorch program"),
        "junk.elf": (runner_elf(b"\x10\x00\x00\x00NOPE" + bytes(56), 0x7000_0000, {}),
                     "its network_model_sec holds neither an ExecuTorch program (.pte/.bpte) nor a .tflite "
                     "(identifier b'NOPE')"),
    }
    for name, (data, needle) in cases.items():
        (tmp_path / name).write_bytes(data)
    for name in ("none.elf", "junk.elf"):
        rc, log, err = run_fvp(*UART, "-a", tmp_path / name, prog="fvp.host.dropin")
        assert rc == 2 and len(err.splitlines()) == 1 and cases[name][1] in err, err
    rc, _, err = run_fvp("elf", tmp_path / "none.elf", "-o", tmp_path / "x.elf")
    assert rc == 2 and "not an ExecuTorch program (.pte, .bpte) or a TFLite model (.tflite)" in err


def test_two_models_in_one_elf_are_refused(models):
    """An MLEK application with two networks (kws_asr: ``arm::app::kws::nn_model`` and ``arm::app::asr::nn_model``):
    the reader's rule, on the symbols and data such an ELF gives it."""
    from fvp.errors import ConfigError
    from fvp.host.dropin.elf_image import ElfImage, _read_mlek

    program = models[1].read_bytes()
    base, second = 0x7000_0000, 0x7000_0000 + (len(program) + 15) // 16 * 16
    symbols = {"_ZN3arm3app3kwsL8nn_modelE": (base, len(program)),
               "_ZN3arm3app3asrL8nn_modelE": (second, len(program))}
    img = ElfImage(path="kws_asr.axf")
    with pytest.raises(ConfigError, match="2 models .*the TFLite Micro image runs one"):
        _read_mlek(img, [], symbols, lambda addr, size: program if addr in (base, second) else None)
    img = ElfImage(path="kws.axf")
    _read_mlek(img, [], dict(list(symbols.items())[:1]), lambda addr, size: program)
    assert img.program == program and img.program_source == "nn_model"


# the TFLite Micro board in MLEK's Dedicated_Sram layout: the arena in DDR, the NPU cache in SRAM
DEDICATED = ["--target", "ethos-u65-256", "-C", "npu.memory_mode=Dedicated_Sram",
             "-C", "firmware.pools.arena.region=DDR", "-C", "firmware.pools.fast_scratch.region=SRAM",
             "-C", "firmware.pools.fast_scratch.size=384KiB",
             "-C", "firmware.pools.fast_scratch.npu=true"]


@needs_elf
def test_a_dedicated_sram_elf_runs_in_that_memory_mode(models, tmp_path):
    """An MLEK U65 build for Dedicated_Sram (arena in DDR, cache_arena in SRAM): the drop-in takes the memory mode
    from the ELF's NPU cache and gives what fvp run --vela gives for that board."""
    from fvp.host.dropin.elf_image import read_elf

    src, _, x = models
    rc, log, err = run_fvp("run", src, "--vela", *DEDICATED, "-i", x, "-o", tmp_path / "run",
                           env_extra={"FVP_CACHE": "0"}, new_process=False)
    assert rc == 0, err + log
    from fvp.host.programs.vela import compile_tflite

    compiled = compile_tflite(src, tmp_path / "vela", "ethos-u65-256", "Ethos_U65_High_End", "Dedicated_Sram").path
    app = tmp_path / "u65.elf"
    rc, _, err = run_fvp("elf", compiled, "-o", app, *DEDICATED)
    assert rc == 0 and "FVP_Corstone_SSE-300_Ethos-U65 -C ethosu.num_macs=256 -a" in err, err
    img = read_elf(str(app))
    assert img.pools["arena"][0] >= 0x7000_0000 and img.pools["fast_scratch"] == (0x3100_0000, 384 << 10)
    rc, log2, err = run_fvp("--flavour=u65", "-C", "ethosu.num_macs=256", *UART, "-a", app, "-C",
                            f"cpu0.semihosting-cmd_line=runner -i {x} -o {tmp_path / 'elf'}", prog="fvp.host.dropin")
    assert rc == 0, err + log2
    assert "(Ethos_U65_High_End, Dedicated_Sram)" in log2
    assert "memory mode Dedicated_Sram (the ELF has an NPU cache)" in log2
    assert _active(log2) == _active(log)
    assert (tmp_path / "elf-0.bin").read_bytes() == (tmp_path / "run-0.bin").read_bytes()


def test_ethosu_operator_is_read_from_the_operator_codes():
    """Whether a model is Vela-compiled comes from its operator codes, not from its bytes: a model whose tensor and
    description say "ethos-u" is still compiled."""
    from tflite_builder import Op, T, build
    from vela_models import source_model

    from fvp.host.programs.vela import has_ethosu_operator

    assert not has_ethosu_operator(source_model())
    named = build([T("ethos-u", [1, 4], "float32"), T("y", [1, 4], "float32")],
                  [Op("SOFTMAX", ["ethos-u"], ["y"], ("SoftmaxOptions", {"Beta": 1.0}))], ["ethos-u"], ["y"],
                  description="ethos-u")
    assert b"ethos-u" in named and not has_ethosu_operator(named)
    assert not has_ethosu_operator(b"TFL3" * 8)
