#!/usr/bin/env bash
# Build ExecuTorch's real arm_executor_runner ELF the way examples/arm/run.sh does, from sources only.
#
# What it does (docs/runner-elf.md has the why of each step):
#   1. sources: ExecuTorch at ET_COMMIT with the submodules its CMake build needs (flatbuffers, flatcc, gflags,
#      FXdiv, nlohmann/json at the commits ExecuTorch's tree records), the Ethos-U core driver
#      (zephyrproject-rtos/hal_ethos_u), CMSIS 6, CMSIS-NN (the commit backends/cortex_m/CMakeLists.txt pins) and
#      Cortex_DFP (the ARMCM55 start-up). Each comes from a bare git directory under $MIRROR/<owner>+<name>/repo
#      when there is one, else from a bare clone of https://github.com/<owner>/<name>.
#   2. an Ethos-U SDK tree (ETHOS_SDK_PATH) laid out as ExecuTorch's CMake expects it, with this project's
#      stand-in for Arm's core_platform (tools/runner_elf/core_platform; Arm's is not on GitHub).
#   3. per configuration: run.sh's cmake configure of examples/arm/executor_runner/standalone (the flags of its
#      configure_runner_build_dir, in its order, with FETCH_ETHOS_U_CONTENT=OFF and CMSIS_NN_LOCAL_PATH), then
#      `cmake --build --target arm_executor_runner`; the program is baked in by the runner's own pte_to_header.py.
#   4. the ELF, with its debug sections removed (arm-none-eabi-objcopy --strip-debug), copied to $OUT.
#
# Usage: tools/build_runner_elf.sh [CONFIG...]     (default: all configurations below)
# Environment: WORK (build area, default /tmp/runner_elf), MIRROR (default /work/.mirror), PYTHON (a Python with
# torch for the code generator's torchgen, pyyaml, and ExecuTorch with its Arm backend to compile a missing
# program of PROGRAMS; default python3), JOBS (default 2),
# OUT (default tests/data/runner_elf), GENERATOR (default Ninja).
# Needs: gcc-arm-none-eabi, cmake >= 3.20, ninja, git, a host C/C++ compiler (flatc, flatcc are host tools).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${WORK:-/tmp/runner_elf}
MIRROR=${MIRROR:-/work/.mirror}
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-2}
OUT=${OUT:-$REPO/tests/data/runner_elf}
GENERATOR=${GENERATOR:-Ninja}

ET_COMMIT=cff6f4dd32e630945b7188512c1f2b4f102b05ad   # pytorch/executorch main, the commit corstone-300.yaml cites
DRIVER_COMMIT=03567073fe2b9802c0bd73f9534da6f8a03924d1  # zephyrproject-rtos/hal_ethos_u (Ethos-U core driver)
CMSIS6_COMMIT=45dab712ad84f8cbbf2b7bfc089c19088507df6f  # ARM-software/CMSIS_6 v6.3.0
DFP_COMMIT=efc0b4fc0fa0067c0592769dae94f5ba28e0312f     # ARM-software/Cortex_DFP

# One configuration a line: name|target|system_config|memory_mode|program|options|select_ops|extra cmake flags
#   program: a repository path (baked in with pte_to_header.py: run.sh's --pte_placement=elf), an address
#   (ET_MODEL_PTE_ADDR: run.sh's --pte_placement=ADDR, the program given to the FVP with --data) or "semihosting"
#   (SEMIHOSTING=ON: the runner backends/arm/test/setup_testing.sh builds for the pytest harness, runner_utils.py)
#   options: run.sh's --bundleio and --etdump, comma-separated
#   extra: run.sh's --extra_build_flags (build_executor_runner.sh's for the semihosting runner). With --etdump
#   it must hold -DEXECUTORCH_BUILD_ARM_ETDUMP=ON: at this commit the arm_baremetal preset sets
#   EXECUTORCH_ENABLE_EVENT_TRACER OFF as a normal variable unless EXECUTORCH_BUILD_ARM_ETDUMP is on, which hides
#   run.sh's -DEXECUTORCH_ENABLE_EVENT_TRACER=ON (the runner would be built without ETDump).
# The configurations of one target share a build directory (run.sh --build-dir), built in this order; the ETDump
# one has its own.
# setup_testing.sh selects the quantized_decomposed q/dq kernels; the programs ExecuTorch 1.5 makes use the
# cortex_m ones, so the semihosting runner here selects both (the only difference from setup_testing.sh)
Q_DQ="quantized_decomposed::quantize_per_tensor.out,quantized_decomposed::dequantize_per_tensor.out"
Q_DQ="$Q_DQ,cortex_m::quantize_per_tensor.out,cortex_m::dequantize_per_tensor.out"
CONFIGS=(
  "u55-128_add_bundled|ethos-u55-128|Ethos_U55_High_End_Embedded|Shared_Sram|tests/data/corpus/add_u55-128.bpte|bundleio|aten::_softmax.out|"
  "u55-128_add_bundled_etdump|ethos-u55-128|Ethos_U55_High_End_Embedded|Shared_Sram|tests/data/corpus/add_u55-128.bpte|bundleio,etdump|aten::_softmax.out|-DEXECUTORCH_BUILD_ARM_ETDUMP=ON"
  "u65-256_semihosting|ethos-u65-256|Ethos_U65_High_End|Dedicated_Sram_384KB|semihosting||$Q_DQ|-DET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE=83886080"
  "u65-256_sram_only_pte_at_0x38000000|ethos-u65-256|Ethos_U65_High_End|Sram_Only|0x38000000||aten::_softmax.out|"
  "u65-256_dedicated_sram_mobilenet_bundled|ethos-u65-256|Ethos_U65_High_End|Dedicated_Sram|tests/data/corpus/mobilenet_v1_025_u65-256.bpte|bundleio|aten::_softmax.out|-DET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE=0x10000"
)

# programs this script compiles (those not in the corpus): path|aot_arm_compiler arguments
PROGRAMS=(
  "tests/data/runner_elf/add_u65-256_sram_only.pte|--model_name=add --delegate --quantize --target=ethos-u65-256 --system_config=Ethos_U65_High_End --memory_mode=Sram_Only"
  "tests/data/runner_elf/add_u65-256_dedicated_sram_384kb.pte|--model_name=add --delegate --quantize --target=ethos-u65-256 --system_config=Ethos_U65_High_End --memory_mode=Dedicated_Sram_384KB"
  "tests/data/runner_elf/mobilenet_v1_025_u65-256_dedicated_sram_384kb.pte|--model_name=mobilenet_v1_025 --delegate --quantize --target=ethos-u65-256 --system_config=Ethos_U65_High_End --memory_mode=Dedicated_Sram_384KB"
)

log() { printf '[build_runner_elf] %s\n' "$*" >&2; }

# gitdir OWNER/NAME: a bare git directory holding that repository
gitdir() {
  local slug=$1 m="$MIRROR/${1/\//+}/repo" c="$WORK/git/${1/\//+}.git"
  if [[ -d $m ]]; then echo "$m"; return; fi
  if [[ ! -d $c ]]; then
    log "cloning https://github.com/$slug"
    git clone --quiet --bare "https://github.com/$slug" "$c"
  fi
  echo "$c"
}

# extract OWNER/NAME COMMIT DEST: the tree at COMMIT into DEST, leaving out blobs the git directory lacks (a
# partial mirror stores large files as absent; none of them is used by the build)
extract() {
  local g commit=$2 dest=$3 missing
  g=$(gitdir "$1")
  if ! git --git-dir="$g" cat-file -e "$commit^{commit}" 2>/dev/null; then
    local head
    head=$(git --git-dir="$g" rev-parse HEAD)
    log "note: $1 has no commit $commit here; using $head"
    commit=$head
  fi
  rm -rf "$dest"; mkdir -p "$dest"
  missing=$(git --git-dir="$g" ls-tree -r "$commit" | awk '$2=="blob"{print $3}' |
            git --git-dir="$g" cat-file --batch-check='%(objectname) %(objecttype)' 2>/dev/null |
            awk '$2=="missing"{print $1}' | sort -u)
  local excludes=()
  if [[ -n $missing ]]; then
    while read -r path; do excludes+=(":(exclude,literal)$path"); done < <(
      git --git-dir="$g" ls-tree -r "$commit" | awk -v m="$missing" 'BEGIN{n=split(m,a,"\n");for(i=1;i<=n;i++)s[a[i]]=1}
        $2=="blob" && ($3 in s){sub(/^[^\t]*\t/,""); print}')
    log "note: $1: ${#excludes[@]} files absent from the git directory are left out"
  fi
  git --git-dir="$g" archive "$commit" -- . "${excludes[@]}" 2>/dev/null | tar -x -C "$dest"
}

# submodule commit that ExecuTorch's tree records for PATH
et_submodule() { git --git-dir="$(gitdir pytorch/executorch)" ls-tree "$ET_COMMIT" "$1" | awk '{print $3}'; }

sources() {
  local et="$WORK/src/executorch"   # the directory must be named executorch (its CMake include paths)
  if [[ -f $WORK/src/.done-$ET_COMMIT ]]; then return; fi
  log "sources into $WORK/src"
  extract pytorch/executorch "$ET_COMMIT" "$et"
  extract google/flatbuffers "$(et_submodule third-party/flatbuffers)" "$et/third-party/flatbuffers"
  extract dvidelabs/flatcc "$(et_submodule third-party/flatcc)" "$et/third-party/flatcc"
  extract gflags/gflags "$(et_submodule third-party/gflags)" "$et/third-party/gflags"
  extract nlohmann/json "$(et_submodule third-party/json)" "$et/third-party/json"
  extract Maratyszcza/FXdiv "$(et_submodule backends/xnnpack/third-party/FXdiv)" "$et/backends/xnnpack/third-party/FXdiv"
  touch "$WORK/src/.done-$ET_COMMIT"
}

sdk() {
  local sdk="$WORK/ethos-u" cs="$WORK/ethos-u/core_software" nn
  nn=$(sed -n 's/^ *"\([0-9a-f]\{40\}\)".*/\1/p' "$WORK/src/executorch/backends/cortex_m/CMakeLists.txt" | head -1)
  if [[ ! -f $sdk/.done ]]; then
    log "Ethos-U SDK tree in $sdk (CMSIS-NN $nn)"
    extract zephyrproject-rtos/hal_ethos_u "$DRIVER_COMMIT" "$cs/core_driver"
    extract ARM-software/CMSIS_6 "$CMSIS6_COMMIT" "$cs/cmsis_6"
    extract ARM-software/CMSIS-NN "$nn" "$cs/cmsis-nn"
    extract ARM-software/Cortex_DFP "$DFP_COMMIT" "$cs/cortex_dfp"
    touch "$sdk/.done"
  fi
  # the stand-in is this project's: refreshed on every run
  rm -rf "$sdk/core_platform"
  cp -r "$REPO/tools/runner_elf/core_platform" "$sdk/core_platform"
  "$PYTHON" "$REPO/tools/runner_elf/platform_header.py" "$sdk/core_platform/targets/corstone-300/platform_config.h"
}

build_one() {
  local name target sc mm pte options ops extra
  IFS='|' read -r name target sc mm pte options ops extra <<<"$1"
  local et="$WORK/src/executorch" bdir="$WORK/build/${target}"
  # an ETDump build compiles the whole runtime with ET_EVENT_TRACER_ENABLED: its own build directory
  [[ ,$options, == *,etdump,* ]] && bdir+="-etdump"
  local cpu=cortex-m55
  [[ $target == ethos-u85* ]] && cpu=cortex-m85
  local placement=()
  if [[ $pte == semihosting ]]; then
    placement=(-DSEMIHOSTING=ON -DET_PTE_FILE_PATH:PATH= -DET_MODEL_PTE_ADDR=)
  elif [[ $pte == 0x* ]]; then
    placement=(-DSEMIHOSTING=OFF -DET_PTE_FILE_PATH:PATH= -DET_MODEL_PTE_ADDR="$pte")
  else
    [[ -f $REPO/$pte ]] || { log "no program $REPO/$pte"; return 1; }
    placement=(-DSEMIHOSTING=OFF -DET_PTE_FILE_PATH:PATH="$REPO/$pte" -DET_MODEL_PTE_ADDR=)
  fi
  # run.sh's configure_runner_build_dir, in its order (-U first: a reused build directory forgets the previous
  # configuration's pool sizes, as a fresh one would not have them)
  local cmd=(cmake -U 'ET_ARM_BAREMETAL_*'
    -S "$et/examples/arm/executor_runner/standalone" -B "$bdir" -G "$GENERATOR"
    -DEXECUTORCH_ROOT="$et"
    -DCMAKE_TOOLCHAIN_FILE="$et/examples/arm/ethos-u-setup/arm-none-eabi-gcc.cmake"
    -DCMAKE_BUILD_TYPE=Release
    -DEXECUTORCH_BUILD_ARM_BAREMETAL=ON
    -DEXECUTORCH_BUILD_CORTEX_M=ON
    -DEXECUTORCH_BUILD_KERNELS_QUANTIZED=ON
    -DEXECUTORCH_BUILD_EXTENSION_RUNNER_UTIL=ON
    -DEXECUTORCH_BUILD_PRESET_FILE="$et/tools/cmake/preset/arm_baremetal.cmake"
    -DEXECUTORCH_BAREMETAL_SKIP_INSTALL=OFF
    -DETHOSU_TARGET_NPU_CONFIG="$target"
    -DTARGET_CPU="$cpu"
    -DSYSTEM_CONFIG="$sc"
    -DMEMORY_MODE="$mm"
    -DETHOS_SDK_PATH:PATH="$WORK/ethos-u"
    -DEXECUTORCH_SELECT_OPS_LIST="$ops"
    -DCMSIS_NN_LOCAL_PATH:PATH="$WORK/ethos-u/core_software/cmsis-nn"
    "${placement[@]}")
  local bundleio=0 etdump=0
  [[ ,$options, == *,bundleio,* ]] && bundleio=1
  [[ ,$options, == *,etdump,* ]] && etdump=1
  if [[ $bundleio == 1 ]]; then cmd+=(-DET_BUNDLE_IO=ON); else cmd+=(-DET_BUNDLE_IO=OFF); fi
  if [[ $bundleio == 1 || $etdump == 1 ]]; then cmd+=(-DEXECUTORCH_BUILD_DEVTOOLS=ON)
  else cmd+=(-DEXECUTORCH_BUILD_DEVTOOLS=OFF); fi
  if [[ $etdump == 1 ]]; then cmd+=(-DEXECUTORCH_ENABLE_EVENT_TRACER=ON -DET_DUMP_INTERMEDIATE_OUTPUTS=ON)
  else cmd+=(-DEXECUTORCH_ENABLE_EVENT_TRACER=OFF -DET_DUMP_INTERMEDIATE_OUTPUTS=OFF); fi
  # a reused build directory forgets an earlier configuration's preset switch
  [[ $extra == *EXECUTORCH_BUILD_ARM_ETDUMP* ]] || cmd+=(-DEXECUTORCH_BUILD_ARM_ETDUMP=OFF)
  # shellcheck disable=SC2206
  [[ -n $extra ]] && cmd+=($extra)
  # ours: the Ethos-U SDK is the assembled tree (the default fetch clones a host these machines cannot reach),
  # and the Python of the code generator
  cmd+=(-DFETCH_ETHOS_U_CONTENT=OFF -DPYTHON_EXECUTABLE="$(command -v "$PYTHON")")
  log "[$name] configure"
  "${cmd[@]}" >"$WORK/$name.configure.log" 2>&1 || { tail -30 "$WORK/$name.configure.log"; return 1; }
  log "[$name] build (log: $WORK/$name.build.log)"
  local t0=$SECONDS
  nice cmake --build "$bdir" --target arm_executor_runner --parallel "$JOBS" >"$WORK/$name.build.log" 2>&1 ||
    { tail -40 "$WORK/$name.build.log"; return 1; }
  log "[$name] built in $((SECONDS - t0)) s ($(grep -c '^\[' "$WORK/$name.build.log") steps)"
  local elf
  elf=$(find "$bdir" \( -name arm_executor_runner.elf -o -name arm_executor_runner \) -type f | head -1)
  mkdir -p "$OUT"
  arm-none-eabi-objcopy --strip-debug "$elf" "$OUT/$name.elf"
  log "[$name] $OUT/$name.elf: $(stat -c %s "$OUT/$name.elf") bytes"
}

programs() {
  local p path args
  for p in "${PROGRAMS[@]}"; do
    IFS='|' read -r path args <<<"$p"
    [[ -f $REPO/$path ]] && continue
    log "compiling $path (aot_arm_compiler $args)"
    mkdir -p "$(dirname "$REPO/$path")" "$WORK/aot"
    # shellcheck disable=SC2086
    (cd "$WORK/aot" && "$PYTHON" -m executorch.backends.arm.scripts.aot_arm_compiler $args -o "$REPO/$path") \
      >"$WORK/aot/$(basename "$path").log" 2>&1 || { tail -20 "$WORK/aot/$(basename "$path").log"; return 1; }
  done
}

main() {
  mkdir -p "$WORK/src" "$WORK/git" "$WORK/build"
  sources
  sdk
  programs
  local want=("$@") c
  for c in "${CONFIGS[@]}"; do
    if [[ ${#want[@]} -eq 0 ]] || [[ " ${want[*]} " == *" ${c%%|*} "* ]]; then
      build_one "$c"
    fi
  done
}

main "$@"
