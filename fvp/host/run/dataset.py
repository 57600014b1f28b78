"""A data set for ``fvp run MODEL --inputs DATA [--labels LABELS]``: its samples, read one at a time, and labels.

DATA is one of:

- a folder: for a program of one input, each ``NAME.npy`` (an array in the input's logical shape) or
  ``NAME.bin`` (the tensor's raw bytes in memory order, what ``fvp run -i`` takes) is a sample; for a program of
  several inputs, each sample is a sub-folder holding one file per input (in name order) or the files
  ``NAME-<i>.npy``/``NAME-<i>.bin`` (``i`` counted from 0, as the runner names its outputs). Samples are in
  natural name order (``2`` before ``10``); other files are left out (named in a note);
- an ``.npz``: one array per input (in the file's order; ``DATA.npz:x,y`` names them), each with a leading batch
  dimension of the same length;
- an ``.npy``: the single input of every sample, stacked along a leading batch dimension.

LABELS (``--labels``) is an ``.npy`` of one integer per sample (``FILE.npz:KEY`` an array of an ``.npz``; that
array is then not an input), or a text file of one integer per line (``#`` comments), or of ``NAME,LABEL``
lines naming the samples (a folder's). A sample that cannot be read (a corrupt ``.npy``, a ``.bin`` of the
wrong size) is a ``Sample`` with an ``error``; the set goes on. Files are read with the simulator's bounded
reader, so no sample is larger than the input it is for.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field

import numpy as np

from ...bounded_read import read_input
from ...errors import ConfigProblems

_SUFFIXES = (".npy", ".bin")
_NPY_HEADER = 4096  # room for an .npy header beyond the data


@dataclass
class Sample:
    index: int
    name: str
    values: list | None = None  # one per input (array or raw bytes), or None when it could not be read
    error: str | None = None


@dataclass
class DataSet:
    source: str
    names: list
    loader: object  # index -> Sample
    notes: list = field(default_factory=list)
    npz_keys: tuple = ()

    def __len__(self) -> int:
        return len(self.names)

    def sample(self, i: int) -> Sample:
        return self.loader(i)

    def __iter__(self):
        for i in range(len(self.names)):
            yield self.loader(i)


def natural_key(name: str):
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def split_keys(path: str) -> tuple[str, list]:
    """``data.npz:x,y`` -> (``data.npz``, [``x``, ``y``]); a path that exists as given has no keys."""
    if os.path.exists(path) or ":" not in path:
        return path, []
    base, _, keys = path.rpartition(":")
    return base, [k for k in keys.split(",") if k]


def _read_array(data: bytes, label: str):
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - any way an .npy is corrupt: one line
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"{label}: not a valid .npy file: {why}") from None
    if not isinstance(arr, np.ndarray):
        raise ValueError(f"{label}: not a single array")
    return arr


def _read_file(path: str, spec, label: str):
    """One input of one sample from ``path`` (``.npy``: an array; ``.bin``: raw bytes), bounded by the input."""
    limit = (spec.nbytes if spec is not None and spec.nbytes else 1 << 30) + (_NPY_HEADER if path.endswith(".npy") else 0)
    try:
        data = read_input(path, limit, label=label, kind="input file", why="it must fit the program's input tensor")
    except ConfigProblems as e:
        raise ValueError(e.problems[0]) from None
    if path.endswith(".npy"):
        return _read_array(data, label)
    return data


def open_dataset(path: str, input_specs: list, exclude: tuple = ()) -> DataSet:
    """The data set at ``path`` for a program with inputs ``input_specs`` (``TensorSpec``s); ``exclude``: arrays
    of an ``.npz`` that are not inputs (its labels). Raises ``ConfigProblems`` (one line) when the set as a whole
    cannot be read."""
    base, keys = split_keys(path)
    n_in = len(input_specs)
    if os.path.isdir(base):
        if keys:
            raise ConfigProblems([f"--inputs {path}: a folder takes no :KEYS"])
        return _folder(base, input_specs)
    if not os.path.exists(base):
        raise ConfigProblems([f"--inputs {base}: no such file or folder"])
    if base.endswith(".npz"):
        return _npz(base, keys, input_specs, exclude)
    if base.endswith(".npy"):
        if n_in != 1:
            raise ConfigProblems([f"--inputs {base}: an .npy holds one input; the program has {n_in}: give a folder "
                                  f"or an .npz of {n_in} arrays"])
        try:
            arr = np.load(base, mmap_mode="r", allow_pickle=False)
        except Exception as e:  # noqa: BLE001
            raise ConfigProblems([f"--inputs {base}: not a valid .npy file ({type(e).__name__})"]) from None
        if arr.ndim < 1:
            raise ConfigProblems([f"--inputs {base}: a 0-d array; expected a leading batch dimension"])
        names = [str(i) for i in range(arr.shape[0])]
        return DataSet(base, names, lambda i: Sample(i, names[i], [np.asarray(arr[i])]))
    raise ConfigProblems([f"--inputs {base}: expected a folder of .npy/.bin files, an .npz or an .npy"])


def _npz(base: str, keys: list, specs: list, exclude: tuple = ()) -> DataSet:
    try:
        z = np.load(base, allow_pickle=False)
        names_in_file = list(z.files)
    except Exception as e:  # noqa: BLE001
        raise ConfigProblems([f"--inputs {base}: not a valid .npz file ({type(e).__name__})"]) from None
    chosen = keys or [k for k in names_in_file if k not in exclude]
    missing = [k for k in chosen if k not in names_in_file]
    if missing:
        raise ConfigProblems([f"--inputs {base}: no array {missing[0]!r}; it holds {', '.join(names_in_file)}"])
    if len(chosen) != len(specs):
        raise ConfigProblems([f"--inputs {base}: {len(chosen)} arrays ({', '.join(chosen)}) for a program of "
                              f"{len(specs)} inputs; name them in input order: {base}:KEY,KEY"])
    try:
        arrays = [z[k] for k in chosen]
    except Exception as e:  # noqa: BLE001 - a corrupt member
        raise ConfigProblems([f"--inputs {base}: cannot read its arrays ({type(e).__name__}: {e})"]) from None
    lengths = {a.shape[0] if a.ndim else None for a in arrays}
    if None in lengths or len(lengths) != 1:
        raise ConfigProblems([f"--inputs {base}: the arrays need the same leading batch dimension; they have "
                              + ", ".join(f"{k} {list(a.shape)}" for k, a in zip(chosen, arrays))])
    n = lengths.pop()
    names = [str(i) for i in range(n)]
    return DataSet(base, names, lambda i: Sample(i, names[i], [a[i] for a in arrays]), npz_keys=tuple(chosen))


def _folder(base: str, specs: list) -> DataSet:
    n_in = len(specs)
    try:
        entries = sorted(os.listdir(base), key=natural_key)
    except OSError as e:
        raise ConfigProblems([f"--inputs {base}: {e.strerror}"]) from None
    samples: dict = {}
    left_out = []
    for e in entries:
        full = os.path.join(base, e)
        if os.path.isdir(full):
            files = sorted((f for f in os.listdir(full) if f.endswith(_SUFFIXES)), key=natural_key)
            samples[e] = [os.path.join(full, f) for f in files]
            continue
        stem, ext = os.path.splitext(e)
        if ext not in _SUFFIXES:
            left_out.append(e)
            continue
        if n_in == 1:
            samples[stem] = [full]
            continue
        m = re.fullmatch(r"(.+)[-_](\d+)", stem)
        if m is None:
            left_out.append(e)
            continue
        samples.setdefault(m.group(1), {})[int(m.group(2))] = full
    names = sorted(samples, key=natural_key)
    if not names:
        raise ConfigProblems([f"--inputs {base}: no samples (.npy or .bin files"
                              + (", or sub-folders of them" if n_in > 1 else "") + ")"])
    notes = []
    if left_out:
        shown = ", ".join(left_out[:3]) + (f" and {len(left_out) - 3} more" if len(left_out) > 3 else "")
        notes.append(f"--inputs {base}: {len(left_out)} file(s) that are not samples were left out: {shown}")

    def load(i: int) -> Sample:
        name = names[i]
        files = samples[name]
        if isinstance(files, dict):
            want = list(range(n_in))
            if sorted(files) != want:
                return Sample(i, name, error=f"sample {name}: files for inputs {sorted(files)}; the program has "
                                            f"inputs {want} ({name}-0 ... {name}-{n_in - 1})")
            files = [files[k] for k in want]
        if len(files) != n_in:
            return Sample(i, name, error=f"sample {name}: {len(files)} input files; the program has {n_in} inputs")
        values = []
        for k, (f, spec) in enumerate(zip(files, specs)):
            try:
                values.append(_read_file(f, spec, f"sample {name} input {k} ({os.path.basename(f)})"))
            except ValueError as e:
                return Sample(i, name, error=str(e))
        return Sample(i, name, values)

    return DataSet(base, names, load, notes)


# ------------------------------------------------------------------------------------------------ labels
@dataclass
class Labels:
    source: str
    by_index: dict  # sample index -> int label
    problems: list  # one line each: labels that do not match the set


def _int_label(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            f = float(text)
        except ValueError:
            return None
        return int(f) if f.is_integer() else None


def read_labels(path: str, dataset: DataSet) -> Labels:
    """The labels for ``dataset`` from ``path`` (see the module docstring). Raises ``ConfigProblems`` when the
    file cannot be read at all; labels that do not match the set are ``problems`` (the set is evaluated)."""
    base, keys = split_keys(path)
    if not os.path.isfile(base):
        raise ConfigProblems([f"--labels {base}: no such file"])
    n = len(dataset)
    if base.endswith((".npy", ".npz")):
        try:
            if base.endswith(".npz"):
                z = np.load(base, allow_pickle=False)
                if len(keys) != 1:
                    raise ConfigProblems([f"--labels {base}: name the array of labels: {base}:KEY (it holds "
                                          f"{', '.join(z.files)})"])
                if keys[0] not in z.files:
                    raise ConfigProblems([f"--labels {base}: no array {keys[0]!r}; it holds {', '.join(z.files)}"])
                arr = z[keys[0]]
            else:
                arr = np.load(base, allow_pickle=False)
        except ConfigProblems:
            raise
        except Exception as e:  # noqa: BLE001
            raise ConfigProblems([f"--labels {base}: not a valid {os.path.splitext(base)[1]} file "
                                  f"({type(e).__name__})"]) from None
        arr = np.asarray(arr)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1 or arr.dtype.kind not in "iub":
            raise ConfigProblems([f"--labels {path}: expected one integer class per sample, got an array of "
                                  f"{arr.dtype}{list(arr.shape)}"])
        values = [int(v) for v in arr]
        return _ordered(path, values, n)
    try:
        text = read_input(base, 64 << 20, label=f"--labels {base}", kind="labels file").decode("utf-8", "replace")
    except ConfigProblems:
        raise
    lines = [(k + 1, ln.strip()) for k, ln in enumerate(text.splitlines())]
    lines = [(k, ln) for k, ln in lines if ln and not ln.startswith("#")]
    if lines and all("," in ln for _, ln in lines):
        return _named(path, lines, dataset)
    values, problems = [], []
    for k, ln in lines:
        v = _int_label(ln)
        if v is None:
            problems.append(f"--labels {base}:{k}: {ln!r} is not an integer class")
        values.append(v)
    labels = _ordered(path, values, n)
    labels.problems[:0] = problems
    return labels


def _ordered(path: str, values: list, n: int) -> Labels:
    problems = []
    if len(values) != n:
        problems.append(f"--labels {path}: {len(values)} labels for {n} samples: "
                        + (f"samples {len(values)} to {n - 1} have none" if len(values) < n else
                           f"the last {len(values) - n} labels match no sample"))
    return Labels(path, {i: v for i, v in enumerate(values[:n]) if v is not None}, problems)


def _named(path: str, lines: list, dataset: DataSet) -> Labels:
    index = {name: i for i, name in enumerate(dataset.names)}
    by_index, problems, unknown = {}, [], []
    for k, ln in lines:
        name, _, value = (x.strip() for x in ln.rpartition(","))
        if name in ("name", "sample") and _int_label(value) is None:
            continue  # a header line
        i = index.get(name)
        if i is None:
            unknown.append(name)
            continue
        v = _int_label(value)
        if v is None:
            problems.append(f"--labels {path}:{k}: sample {name}: {value!r} is not an integer class")
            continue
        by_index[i] = v
    if unknown:
        problems.append(f"--labels {path}: {len(unknown)} label(s) name no sample of the set: "
                        + ", ".join(unknown[:3]) + (" ..." if len(unknown) > 3 else ""))
    return Labels(path, by_index, problems)
