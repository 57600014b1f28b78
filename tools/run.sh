#!/usr/bin/env bash
# tools/run.sh: ExecuTorch's examples/arm/run.sh flow with the open fvp simulator in place of Arm's FVP.
#
#   tools/run.sh --model_name=add --target=ethos-u55-128          # compile (or take from the zoo) and run
#   tools/run.sh --pte my_model.bpte                               # run a program you already have
#
# Same flags as run.sh (see --help and docs/tutorial.md). A thin wrapper: the steps live in fvp/host/tutorial.py.
# PYTHON selects the interpreter that has this package's dependencies (default: python3);
# EXECUTORCH_PYTHON one that has ExecuTorch, if that is another environment.
# Exit status: 0 no problems found, 1 problems found (or the compile failed), 2 bad usage.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "${here}")"
py="${PYTHON:-python3}"
if ! command -v "${py}" >/dev/null 2>&1; then
    echo "$0: error: no Python interpreter '${py}' (set PYTHON=/path/to/python)" >&2
    exit 2
fi
export PYTHONPATH="${root}${PYTHONPATH:+:${PYTHONPATH}}"
exec "${py}" -c '
import sys
try:
    from fvp.host.tutorial import main
except ImportError as e:
    prog = sys.argv[1].partition("=")[2]
    sys.exit(f"{prog}: error: cannot import the fvp package ({e}); run pip install -e . or set PYTHON")
sys.exit(main(sys.argv[1:]))
' "--invoked-as=$0" "$@"
