#!/usr/bin/env bash
# The GPU calls of -fdevice-malloc-pool's results (README.md). Staged here (development machine):
#   cargo xtask gpu-bundle
#   python3 samples/harness/corpus-timing.py --stage build --cdpc target/release/cdpc \
#       --variants nvcc,clang-rule,clang-rule-pool,clang-pool --bundle build/klap-bundle.tar.xz
#   bash results/2026-11-26-device-malloc-pool/bt-pool.sh stage
#   bash results/2026-11-26-device-malloc-pool/gpu.sh stage        (the labels below of build/gpu, and the KLAP bundle)
# and on the GPU machine, carrying gpu-stage/device-malloc-pool and gpu-stage/bt-pool:
#   bash results/2026-11-26-device-malloc-pool/gpu.sh samples      (the differential run of every sample, the pooled
#                                               builds beside the ones they change, and bt-pool.sh)
#   bash results/2026-11-26-device-malloc-pool/gpu.sh klap         (KLAP's programs, interleaved, 10 rounds)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STAGE=$ROOT/gpu-stage/device-malloc-pool
LABELS="cdpc-v2 cdpc-v2-pool cdpc-clang-v2 cdpc-clang-v2-threshold-grid cdpc-clang-v2-threshold-grid-pool"
cd "$ROOT"
case "${1:?usage: gpu.sh stage | samples | klap}" in
stage)
    mkdir -p "$STAGE"
    # shellcheck disable=SC2046
    tar -C build -cJf "$STAGE/gpu.tar.xz" gpu/bin gpu/BUILD-INFO gpu/inkwell_frontend.cubin \
        $(cd build && ls -d gpu/ir_frontend*) $(for l in $LABELS; do echo "gpu/$l"; done)
    cp build/klap-bundle.tar.xz "$STAGE/"
    ;;
samples)
    mkdir -p build && tar -C build -xJf "$STAGE/gpu.tar.xz"
    LABELS="$LABELS" BENCH=0 REPEAT=${REPEAT:-10} sh samples/harness/gpu-run.sh || true
    bash results/2026-11-26-device-malloc-pool/bt-pool.sh run 2>&1 | tee "${OUT:-.}/bt-pool.txt"
    ;;
klap)
    python3 samples/harness/corpus-timing.py --stage run --bundle "$STAGE/klap-bundle.tar.xz" \
        --rounds "${ROUNDS:-10}" --deadline "${DEADLINE:-480}"
    ;;
esac
