#!/bin/sh
# Runs on the device machine (CUDA toolkit in /usr/local/cuda, a GPU): builds every sample with
# nvcc, builds the driver-API harness, then runs the harness over nvcc's cubins and over cdpc's
# cubins carried in build/gpu/cdpc-v2 and build/gpu/cdpc-v1 (made by `cargo xtask gpu-cubins`).
set -u
CU=${CUDA_HOME:-/usr/local/cuda}
echo "date: $(date -u +%Y-%m-%d)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$CU/bin/nvcc" --version | tail -n 2
OUT_DIR=/tmp/nvcc sh samples/check.sh "$CU" || echo "(nvcc build of some samples failed)"
g++ -O1 -std=c++17 -I"$CU/include" samples/harness/run_samples.cpp -L"$CU/lib64" -L"$CU/lib64/stubs" -lcuda -o /tmp/run_samples || exit 1
status=0
for d in /tmp/nvcc build/gpu/cdpc-v2 build/gpu/cdpc-v1; do
    echo "=== cubins from $d"
    timeout 300 /tmp/run_samples "$d" || status=1
done
exit $status
