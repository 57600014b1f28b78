"""The one-way rules of the imports (every import statement, at module level or inside a function):

- the two halves: firmware/ never imports fvp/, fvp/ never imports firmware/; the neutral interface tables in
  hwdesc/ import neither (both halves may import hwdesc);
- the rooms of fvp/ (docs/architecture.md): the machine (fvp.machine) never imports the host (fvp.host, its
  sweep included); the boards (fvp.boards) import neither the machine nor the host; the modules shared by the rooms
  (fvp.errors, fvp.units, fvp.bounded_read, fvp.safe_write) import no room;
- the host's rooms are layers (docs/architecture.md): what the host knows of programs (fvp.host.programs) imports
  no other room; a run (fvp.host.run) imports the programs room only; the drop-in (fvp.host.dropin) imports the run
  and the programs rooms only; the host's shared mechanics (entry, launch, cli_args, inputs, cluster) import no room;
- no import cycle anywhere: not among the modules' top-level imports, and not through imports inside functions;
- the layers inside the simulated machine's NPU (docs/architecture.md): the functional engines never import the
  device, the bus or the simulator; the timing model (and the products' performance and channel models) never
  imports the weight decoders or the engines; the product families (``npu/u55``, ``npu/u85``) never import each
  other; the shared NPU modules, and everything outside the NPU, never import a product module except through
  the one selection point (``npu/arch.py``).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fvp", "firmware", "hwdesc")
SHARED = ("fvp.errors", "fvp.units", "fvp.bounded_read", "fvp.safe_write")
HOST = ("fvp.host",)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _statements(node):
    """Every statement under ``node`` (an import is a statement: the expressions need no visit, which is most of a
    tree's nodes)."""
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, field, None) or ():
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                if isinstance(child, ast.stmt):
                    yield child
                yield from _statements(child)


def _scan(root: Path, packages=PACKAGES):
    """module -> [(imported module, at module level?)], relative imports resolved, for the given packages."""
    files = {}
    for pkg in packages:
        for path in (root / pkg).rglob("*.py") if (root / pkg).is_dir() else []:
            files[_module_name(root, path)] = path
    modules = set(files)
    out = {}
    for mod, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        top = set(id(n) for n in tree.body)
        found = []
        for node in _statements(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                names = [target]
                # ``from pkg import module``: the module is what is imported
                names += [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            for n in names:
                found.append((n, id(node) in top))
        out[mod] = found
    return out


@pytest.fixture(scope="module")
def graph():
    """The import graph of the tree, scanned once by the process that runs these tests (not at collection: every
    xdist worker collects this module, one runs its tests)."""
    return _scan(ROOT)


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _offenders(graph, importer_prefixes, forbidden_prefixes):
    return sorted({(m, n) for m, imps in graph.items() if _within(m, importer_prefixes)
                   for n, _ in imps if _within(n, forbidden_prefixes)})


def test_firmware_never_imports_fvp(graph):
    assert _offenders(graph, ["firmware"], ["fvp"]) == []


def test_fvp_never_imports_firmware(graph):
    assert _offenders(graph, ["fvp"], ["firmware"]) == []


def test_hwdesc_imports_neither_half(graph):
    assert _offenders(graph, ["hwdesc"], ["fvp", "firmware"]) == []


def test_both_halves_read_the_interface_tables(graph):
    # the neutral package is what keeps the rule: the machine and the firmware take the same facts from it
    assert _offenders(graph, ["fvp.machine"], ["hwdesc"]) and _offenders(graph, ["firmware"], ["hwdesc"])


def test_the_machine_never_imports_the_host(graph):
    assert _offenders(graph, ["fvp.machine"], HOST) == []


def test_the_boards_import_neither_the_machine_nor_the_host(graph):
    assert _offenders(graph, ["fvp.boards"], ["fvp.machine", *HOST]) == []


def test_the_shared_modules_import_no_room(graph):
    assert _offenders(graph, SHARED, ["fvp.machine", "fvp.boards", *HOST]) == []


HOST_COMMANDS = ("fvp.host.cli", "fvp.host.compare", "fvp.host.bench", "fvp.host.sweep", "fvp.host.tutorial",
                 "fvp.host.inspect", "fvp.host.disasm_model")
HOST_ROOMS = ("fvp.host.programs", "fvp.host.run", "fvp.host.dropin")


def test_the_host_rooms_are_layers(graph):
    assert _offenders(graph, ["fvp.host.programs"], ["fvp.host.run", "fvp.host.dropin", *HOST_COMMANDS]) == []
    assert _offenders(graph, ["fvp.host.run"], ["fvp.host.dropin", *HOST_COMMANDS]) == []
    assert _offenders(graph, ["fvp.host.dropin"], HOST_COMMANDS) == []
    shared = ["fvp.host.entry", "fvp.host.launch", "fvp.host.cli_args", "fvp.host.inputs", "fvp.host.cluster"]
    # launch names the commands it starts by module name (importlib), after its Ctrl-C guard is in place
    assert _offenders(graph, shared, [*HOST_ROOMS, *HOST_COMMANDS]) == []


def test_the_rooms_exist_and_hold_what_they_say(graph):
    mods = set(graph)
    for m in ("fvp.machine.platform", "fvp.machine.bus", "fvp.machine.npu.device", "fvp.boards.loader",
              "fvp.boards.schema", "fvp.host.cli", "fvp.host.dropin.command", "fvp.host.programs.zoo"):
        assert m in mods, m
    assert sorted((ROOT / "fvp" / "boards").glob("*.yaml")), "the board files live beside the code that loads them"
    assert not (ROOT / "configs").exists() and not (ROOT / "fvp" / "config").exists()


def _cycles(graph, module_level_only: bool):
    edges = {m: sorted({n for n, top in imps if n in graph and n != m and (top or not module_level_only)
                        and not m.startswith(n + ".")})  # a module's own parent packages run first anyway
             for m, imps in graph.items()}
    cycles, state = [], {}

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for n in edges[m]:
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [])
    return cycles


def test_no_import_cycle_at_module_level(graph):
    assert _cycles(graph, module_level_only=True) == []


def test_no_import_cycle_through_local_imports(graph):
    assert _cycles(graph, module_level_only=False) == []


def test_scanner_catches_every_import_form(tmp_path):
    pkg = tmp_path / "fvp"
    (pkg / "machine").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "machine" / "__init__.py").write_text("")
    (pkg / "machine" / "a.py").write_text("import fvp.host.cli\n")
    (pkg / "machine" / "b.py").write_text("def f():\n    from ..host import report\n")
    (pkg / "host").mkdir()
    (pkg / "host" / "__init__.py").write_text("")
    (pkg / "host" / "cli.py").write_text("from ..machine import b\n")
    (pkg / "host" / "report.py").write_text("from fvp.machine.b import f\n")
    graph = _scan(tmp_path, ("fvp",))
    assert _offenders(graph, ["fvp.machine"], HOST) == [("fvp.machine.a", "fvp.host.cli"),
                                                         ("fvp.machine.b", "fvp.host"),
                                                         ("fvp.machine.b", "fvp.host.report")]
    assert _cycles(graph, module_level_only=True) == []
    assert _cycles(graph, module_level_only=False) == [["fvp.machine.b", "fvp.host.report", "fvp.machine.b"]]


# ------------------------------------------------------------------------------------------------ the NPU's layers

NPU = "fvp.machine.npu"
PRODUCTS = (f"{NPU}.u55", f"{NPU}.u85")
SELECTION = f"{NPU}.arch"  # the variant table: the one module that names the product families
ENGINES = (f"{NPU}.engines",)
TIMING = (f"{NPU}.timing", *(f"{p}.{m}" for p in PRODUCTS for m in ("performance", "channels")))
WEIGHTS = (f"{NPU}.weight_cache", f"{NPU}.mlw", *(f"{p}.weights" for p in PRODUCTS))


def test_the_engines_import_neither_the_device_nor_the_bus_nor_the_simulator(graph):
    assert _offenders(graph, ENGINES, [f"{NPU}.device", "fvp.machine.bus", "fvp.machine.sim",
                                       "fvp.machine.platform"]) == []


def test_the_timing_model_imports_neither_the_weights_nor_the_engines(graph):
    assert _offenders(graph, TIMING, [*WEIGHTS, *ENGINES]) == []


def test_the_product_families_never_import_each_other(graph):
    for p in PRODUCTS:
        assert _offenders(graph, [p], [q for q in PRODUCTS if q != p]) == []


def _product_imports_outside(graph):
    """(module, product module) for every import of a product module by a module that is neither a product's
    own nor the selection point."""
    return sorted({(m, n) for m, imps in graph.items() if not _within(m, PRODUCTS) and m != SELECTION
                   for n, _ in imps if _within(n, PRODUCTS)})


def test_product_modules_are_imported_only_through_the_selection_point(graph):
    assert _product_imports_outside(graph) == []
    assert _offenders(graph, [SELECTION], PRODUCTS)  # the selection point does name them


def test_the_npu_layers_exist(graph):
    mods = set(graph)
    for m in (SELECTION, f"{NPU}.family", f"{NPU}.descriptors", *PRODUCTS, f"{NPU}.engines.reference",
              f"{NPU}.engines.fast", f"{NPU}.timing.model", f"{NPU}.weight_cache"):
        assert m in mods, m
    assert any(_within(m, TIMING) for m in mods) and any(_within(m, WEIGHTS) for m in mods)


def test_the_layer_rules_see_a_violation(tmp_path):
    pkg = tmp_path / "fvp" / "machine" / "npu"
    for d in ("engines", "timing", "u55", "u85"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    for d in (tmp_path / "fvp", tmp_path / "fvp" / "machine", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "engines" / "x.py").write_text("from ...sim import interruption_point\n")
    (pkg / "timing" / "t.py").write_text("def f():\n    from ..u85 import weights\n")
    (pkg / "u55" / "a.py").write_text("from ..u85 import b\n")
    (pkg / "u85" / "b.py").write_text("")
    (pkg / "u85" / "weights.py").write_text("")
    (pkg / "checker.py").write_text("from .u55 import a\n")
    graph = _scan(tmp_path, ("fvp",))
    assert _offenders(graph, ENGINES, ["fvp.machine.sim"]) == [(f"{NPU}.engines.x", "fvp.machine.sim")]
    assert _offenders(graph, TIMING, WEIGHTS) == [(f"{NPU}.timing.t", f"{NPU}.u85.weights")]
    assert _offenders(graph, [f"{NPU}.u55"], [f"{NPU}.u85"]) == [(f"{NPU}.u55.a", f"{NPU}.u85"),
                                                                  (f"{NPU}.u55.a", f"{NPU}.u85.b")]
    assert _product_imports_outside(graph) == [(f"{NPU}.checker", f"{NPU}.u55"), (f"{NPU}.checker", f"{NPU}.u55.a"),
                                               (f"{NPU}.timing.t", f"{NPU}.u85"),
                                               (f"{NPU}.timing.t", f"{NPU}.u85.weights")]
