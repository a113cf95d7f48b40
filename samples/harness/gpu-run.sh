#!/bin/sh
# The differential GPU run. On the device machine (a GPU, CUDA toolkit in /usr/local/cuda, no
# Rust, no LLVM), from the repository root, with build/gpu carried from the development machine
# (made there by `cargo xtask gpu-bundle`: cdpc's cubins for both launch ABIs, the v2 cubins
# with -faggregate-launches=block, and the runner):
#
#     sh samples/harness/gpu-run.sh
#
# builds every sample with nvcc (samples/check.sh), then runs `cdpc-run diff` over nvcc's and
# cdpc's cubins: every sample checked against samples/NAME.toml, outputs compared byte for byte
# with nvcc's, launch trees timed with CUDA events. The results file goes to $OUT/gpu-diff.md
# (and results/gpu-diff.md in this copy of the repository). Exit status 0 when all passed.
set -u
CU=${CUDA_HOME:-/usr/local/cuda}
RESULTS_DIR=${OUT:-results}
REPEAT=${REPEAT:-20}
RUN=build/gpu/bin/cdpc-run
if [ ! -x "$RUN" ]; then
    echo "no $RUN: run \`cargo xtask gpu-bundle\` on the development machine and carry build/gpu"
    exit 2
fi
echo "cdpc cubins: $(cat build/gpu/BUILD-INFO 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
"$CU/bin/nvcc" --version | tail -n 2
rm -rf /tmp/nvcc
OUT_DIR=/tmp/nvcc sh samples/check.sh "$CU" || echo "(nvcc could not build some samples; they show as missing)"
mkdir -p "$RESULTS_DIR"
timeout 540 "$RUN" diff --manifests samples \
    --cubins nvcc=/tmp/nvcc cdpc-v2=build/gpu/cdpc-v2 cdpc-v1=build/gpu/cdpc-v1 \
    cdpc-v2-agg-block=build/gpu/cdpc-v2-agg-block \
    --repeat "$REPEAT" --warmup 3 --results "$RESULTS_DIR/gpu-diff.md"
status=$?
# The second front end's cubin (compiler/examples/inkwell_frontend.rs), checked by its manifest.
echo "=== inkwell front end"
"$RUN" sample build/gpu/inkwell_frontend.cubin compiler/examples/inkwell_frontend.toml --repeat "$REPEAT" || status=1
[ "$RESULTS_DIR" = results ] || cp "$RESULTS_DIR/gpu-diff.md" results/gpu-diff.md 2>/dev/null
exit $status
