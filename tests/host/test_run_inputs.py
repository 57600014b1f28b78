"""fvp run MODEL --inputs DATA: a data set through one booted program, from the command line."""

import csv
import json

import numpy as np
import pytest

from fvp.host.cli import main as cli_main
from testutil import CORPUS, DATA

ADD_Q = CORPUS / "add_q.pte"  # two float inputs [1], one output x + y
KWS = DATA / "tflm" / "kws_micronet_m_u55-128_vela.tflite"  # int8[1, 49, 10, 1] -> int8[1, 12]


def run(capsys, *args):
    rc = cli_main(["run", *map(str, args), "--progress", "none"])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def kws_set(tmp_path_factory):
    d = tmp_path_factory.mktemp("kws")
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (6, 1, 49, 10, 1)).astype(np.int8)
    np.savez(d / "set.npz", x=x, y=np.array([2, 11, 2, 2, 5, 11]))
    return d, x


def test_npz_with_labels_writes_outputs_figures_and_accuracy(capsys, kws_set, tmp_path):
    d, x = kws_set
    out = tmp_path / "out"
    rc, stdout, err = run(capsys, KWS, "--inputs", d / "set.npz", "--labels", f"{d / 'set.npz'}:y", "-o", out)
    assert rc == 0, err
    assert "6 samples from" in stdout and "6 ok, 0 failed" in stdout
    rows = list(csv.DictReader((out / "inferences.csv").open()))
    assert [r["sample"] for r in rows] == ["0", "1", "2", "3", "4", "5"] and {r["status"] for r in rows} == {"ok"}
    assert {"npu_cycles", "cpu_cycles", "NPU_IDLE", "AXI0_RD_DATA_BEAT_RECEIVED", "prediction", "label"} <= set(rows[0])
    preds = [int(r["prediction"]) for r in rows]
    for k in range(6):  # the outputs as the runner writes them, and the prediction is their argmax
        data = (out / f"{k}-0.bin").read_bytes()
        assert len(data) == 12 and preds[k] == int(np.argmax(np.frombuffer(data, np.int8)))
    labels = [2, 11, 2, 2, 5, 11]
    correct = sum(p == y for p, y in zip(preds, labels))
    assert f"top-1 accuracy: {100 * correct / 6:.2f} % ({correct} of 6 labelled samples)" in stdout
    assert "confusion (rows: label, columns: prediction):" in stdout
    summary = json.loads((out / "inferences.json").read_text())
    assert summary["accuracy"]["correct"] == correct and np.array(summary["accuracy"]["confusion"]).sum() == 6
    assert summary["samples"] == 6 and len(summary["inferences"]) == 6


def test_a_folder_with_bad_samples_names_each_and_evaluates_the_rest(capsys, kws_set, tmp_path):
    _, x = kws_set
    d = tmp_path / "folder"
    d.mkdir()
    for k in range(3):
        np.save(d / f"s{k}.npy", x[k])
    (d / "s10.bin").write_bytes(x[3].tobytes())  # raw bytes in memory order
    np.save(d / "s4.npy", x[4][:, :20])  # the wrong shape
    np.save(d / "s5.npy", x[5].astype(np.float32) + 0.5)  # values int8 cannot hold
    (d / "s6.npy").write_bytes(b"\x93NUMPY garbage")  # corrupt
    (d / "s7.bin").write_bytes(b"\0" * 10)  # the wrong size
    (d / "notes.txt").write_text("not a sample")
    (tmp_path / "labels.csv").write_text("s0,2\ns1,2\ns10,3\nnobody,4\n")
    rc, stdout, err = run(capsys, KWS, "--inputs", d, "--labels", tmp_path / "labels.csv", "-o", tmp_path / "o")
    assert rc == 1
    lines = [ln for ln in err.splitlines() if ln.startswith("fvp: error:")]
    bad = {"s4": "shape [1, 20, 10, 1]", "s5": "cannot hold exactly", "s6": "not a valid .npy file",
           "s7": "10 bytes; the program's input 0 is INT8[1, 49, 10, 1], 490 bytes"}
    for name, what in bad.items():
        assert any(f"sample {name}" in ln and what in ln for ln in lines), (name, lines)
    assert any("name no sample of the set: nobody" in ln for ln in lines)
    assert "notes.txt" in err and len(lines) == 5
    assert "8 samples from" in stdout and "4 ok, 4 failed" in stdout
    rows = list(csv.DictReader((tmp_path / "o" / "inferences.csv").open()))
    assert [r["sample"] for r in rows] == ["s0", "s1", "s2", "s4", "s5", "s6", "s7", "s10"]  # natural order
    assert [r["status"] for r in rows] == ["ok"] * 3 + ["bad-input"] * 4 + ["ok"]
    assert (tmp_path / "o" / "s10-0.bin").stat().st_size == 12 and not (tmp_path / "o" / "s4-0.bin").exists()
    assert "of 3 labelled samples" in stdout


def test_labels_that_do_not_match(capsys, kws_set, tmp_path):
    d, _ = kws_set
    np.save(tmp_path / "short.npy", np.array([1, 2, 3]))
    rc, stdout, err = run(capsys, KWS, "--inputs", f"{d / 'set.npz'}:x", "--labels", tmp_path / "short.npy")
    assert rc == 1 and "3 labels for 6 samples: samples 3 to 5 have none" in err
    assert "of 3 labelled samples" in stdout and "6 ok, 0 failed" in stdout
    np.save(tmp_path / "range.npy", np.array([0, 1, 2, 3, 4, 40]))
    rc, stdout, err = run(capsys, KWS, "--inputs", f"{d / 'set.npz'}:x", "--labels", tmp_path / "range.npy")
    assert rc == 1 and "sample 5: label 40 is not a class of output 0 (12 classes)" in err
    (tmp_path / "words.txt").write_text("1\n2\nthree\n4\n5\n6\n")
    rc, stdout, err = run(capsys, KWS, "--inputs", f"{d / 'set.npz'}:x", "--labels", tmp_path / "words.txt")
    assert rc == 1 and "words.txt:3: 'three' is not an integer class" in err and "of 5 labelled" in stdout


def test_two_inputs_from_named_files_and_sub_folders(capsys, tmp_path):
    d = tmp_path / "pairs"
    d.mkdir()
    pairs = [(0.25, 0.5), (0.125, 0.25), (0.375, 0.25)]
    for k, (a, b) in enumerate(pairs[:2]):
        np.save(d / f"p{k}-0.npy", np.float32([a]))
        np.save(d / f"p{k}-1.npy", np.float32([b]))
    (d / "p2").mkdir()
    np.float32([pairs[2][0]]).tofile(d / "p2" / "a.bin")
    np.float32([pairs[2][1]]).tofile(d / "p2" / "b.bin")
    np.save(d / "p3-0.npy", np.float32([1]))  # input 1 missing
    rc, stdout, err = run(capsys, ADD_Q, "--inputs", d, "-o", tmp_path / "o")
    assert rc == 1 and "sample p3: files for inputs [0]; the program has inputs [0, 1]" in err
    for k, (a, b) in enumerate(pairs):
        y = np.fromfile(tmp_path / "o" / f"p{k}-0.bin", np.float32)
        assert abs(float(y[0]) - (a + b)) < 2 / 255
    np.savez(tmp_path / "pairs.npz", a=np.float32([[0.25], [0.5]]), b=np.float32([[0.5], [0.25]]))
    rc, stdout, err = run(capsys, ADD_Q, "--inputs", tmp_path / "pairs.npz")
    assert rc == 0 and "2 ok, 0 failed" in stdout and "-o DIR keeps each sample's outputs" in err


def test_usage_problems_are_one_line_exit_2(capsys, kws_set, tmp_path):
    d, _ = kws_set
    cases = [
        (["--inputs", d / "set.npz", "-i", "x.npy"], "-i: not with --inputs"),
        (["--labels", d / "set.npz"], "--labels: needs --inputs DATA"),
        (["--inputs", tmp_path / "missing"], "no such file or folder"),
        (["--inputs", f"{d / 'set.npz'}:x", "--labels", d / "set.npz"], "name the array of labels"),
        (["--inputs", d / "set.npz"], "2 arrays (x, y) for a program of 1 inputs; name them in input order"),
        (["--inputs", d / "set.npz", "--jobs", "0"], "--jobs 0: expected 1 or more"),
    ]
    for extra, what in cases:
        rc, stdout, err = run(capsys, KWS, *extra)
        assert rc == 2 and what in err and err.count("\n") == 1, (extra, err)
    rc, _, err = run(capsys, ADD_Q, "--inputs", d / "set.npz", "--labels", d / "set.npz:y")
    assert rc == 2 and "1 arrays (x) for a program of 2 inputs" in err
    np.savez(tmp_path / "two.npz", a=np.float32([[1]]), b=np.float32([[1]]))
    rc, _, err = run(capsys, ADD_Q, "--inputs", tmp_path / "two.npz", "--labels", d / "set.npz:y")
    assert rc == 2 and "not a classifier here" in err


def test_ctrl_c_reports_and_writes_what_finished(capsys, kws_set, tmp_path, monkeypatch):
    from fvp.host.run import evaluate

    d, _ = kws_set
    add = evaluate._Report.add

    def add_then_interrupt(self, i, r):
        add(self, i, r)
        if sum(1 for row in self.rows if row) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(evaluate._Report, "add", add_then_interrupt)
    rc, stdout, err = run(capsys, KWS, "--inputs", f"{d / 'set.npz'}:x", "-o", tmp_path)
    assert rc == 130 and "interrupted after 2 of 6 samples" in err and "2 ok, 0 failed, 4 not run" in stdout
    rows = list(csv.DictReader((tmp_path / "inferences.csv").open()))
    assert [r["sample"] for r in rows] == ["0", "1"] and json.loads((tmp_path / "inferences.json").read_text())[
        "interrupted"] is True
