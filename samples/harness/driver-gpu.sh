#!/usr/bin/env bash
# The compiler driver's outputs on the GPU machine, each against nvcc's build of the
# same sources:
#   1. docs/build-example: the host program compiled by nvcc (<<<>>> on cdpc's kernels) and the
#      one compiled by g++ (the generated launcher), both linked with cdpc's host objects, run
#      and compared with a build by nvcc alone;
#   2. -lineinfo: compute-sanitizer on a kernel that writes out of bounds names the file and
#      line in cdpc's build as in nvcc's;
#   3. -G: cuda-gdb stops at a line of a child kernel and prints its locals (an int and an
#      int *), in both builds;
#   4. a fat binary with PTX only (-gencode arch=compute_90,code=compute_90): the driver JIT-links
#      it with libcudadevrt (cuLinkCreate/cuLinkAddData/cuLinkAddFile) and runs the kernels,
#      cdpc's fat binary against nvcc's, and each loaded directly (cuModuleLoadData);
#   5. Nsight Compute (ncu) profiles the host program's kernels in cdpc's build as in nvcc's;
#   6. two host objects, each with a `static` kernel named `set` launched by its file's public
#      kernel, linked into one program by nvcc: each launch runs its own file's `set`.
# Writes $OUT/driver-gpu.md (or ./driver-gpu.md) for results/.
#
# Usage, from the repository root, on the GPU machine:
#   bash samples/harness/driver-gpu.sh CDPC
# CUDA_HOME: default /usr/local/cuda (nvcc, compute-sanitizer, cuda-gdb, lib64).
# SECTIONS: which parts to run, default "1 2 3 4 5 6".
set -u
CDPC=$(realpath "${1:?usage: driver-gpu.sh CDPC}")
ROOT=$(pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA_HOME/bin/nvcc
REPORT=${OUT:-.}/driver-gpu.md
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PATH=$CUDA_HOME/bin:$PATH
SECTIONS=${SECTIONS:-1 2 3 4 5 6}
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

{
    echo "# The compiler driver on the GPU"
    echo
    echo "$(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1),"
    echo "$($NVCC --version | tail -1), cdpc $("$CDPC" --version 2>/dev/null | head -1)."
    echo
} > "$REPORT"

# step TITLE COMMAND...: runs the command in the current folder, records its exit code and the
# tail of its output in the report, and returns the exit code.
step() {
    local title=$1
    shift
    local log
    log=$(mktemp -p "$WORK")
    timeout 300 "$@" > "$log" 2>&1
    local rc=$?
    {
        echo "### $title (exit $rc)"
        echo
        echo '```'
        echo "\$ $*"
        tail -n 25 "$log"
        echo '```'
        echo
    } >> "$REPORT"
    cp "$log" "$WORK/last.out"
    return $rc
}

# ---------------------------------------------------------------- 1. host programs
if want 1; then
cd "$ROOT"
echo "## 1. Host programs that launch cdpc's kernels (docs/build-example)" >> "$REPORT"
echo >> "$REPORT"
mkdir -p "$WORK/example" "$WORK/reference"
cp docs/build-example/* "$WORK/example/"
cp docs/build-example/*.cu "$WORK/reference/"
cd "$WORK/example"
step "make (cdpc's objects; nvcc's and g++'s host programs)" \
    make CDPC="$CDPC" NVCC="$NVCC" CUDA="$CUDA_HOME" CUDA_LIB="$CUDA_HOME/lib64" app.cubin app.fatbin app-nvcc app-gxx
step "app-nvcc" ./app-nvcc; cp "$WORK/last.out" "$WORK/nvcc-host.out"
step "app-gxx" ./app-gxx; cp "$WORK/last.out" "$WORK/gxx-host.out"
cd "$WORK/reference"
step "reference: nvcc alone" "$NVCC" -arch=sm_90 -rdc=true main.cu launch.cu scale.cu -o app-ref
step "app-ref" ./app-ref; cp "$WORK/last.out" "$WORK/ref.out"
if cmp -s "$WORK/ref.out" "$WORK/nvcc-host.out" && cmp -s "$WORK/ref.out" "$WORK/gxx-host.out"; then
    verdict="identical"
else
    verdict="DIFFERENT"
fi
printf '**Outputs of app-nvcc and app-gxx against nvcc alone: %s.**\n\n' "$verdict" >> "$REPORT"
fi

# ---------------------------------------------------------------- 2. -lineinfo
if want 2; then
cd "$ROOT"
echo "## 2. -lineinfo under compute-sanitizer" >> "$REPORT"
echo >> "$REPORT"
mkdir -p "$WORK/fault"
cd "$WORK/fault"
cat > fault.cu <<'EOF'
// Out of bounds on purpose: compute-sanitizer must name this file and line 5.
extern "C" __global__ void child(int *data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int far = i + n * 1024 * 1024;
    data[far] = i;
}

extern "C" __global__ void parent(int *data, int n) {
    child<<<1, 32>>>(data, n);
}
EOF
cat > main.cu <<'EOF'
#include <cstdio>
extern "C" __global__ void parent(int *data, int n);
int main() {
    int *data;
    cudaMalloc(&data, 32 * sizeof(int));
    parent<<<1, 1>>>(data, 32);
    printf("parent: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
EOF
step "cdpc -lineinfo host object" "$CDPC" --emit host-obj -arch=sm_90 -lineinfo fault.cu -o fault.host.o
step "link with nvcc" "$NVCC" -arch=sm_90 -rdc=true main.cu fault.host.o -o fault-cdpc
step "nvcc -lineinfo" "$NVCC" -arch=sm_90 -rdc=true -lineinfo main.cu fault.cu -o fault-nvcc
step "compute-sanitizer, cdpc's build" compute-sanitizer --print-limit 1 ./fault-cdpc
grep -o 'fault.cu:[0-9]*' "$WORK/last.out" | sort -u > cdpc.lines
step "compute-sanitizer, nvcc's build" compute-sanitizer --print-limit 1 ./fault-nvcc
grep -o 'fault.cu:[0-9]*' "$WORK/last.out" | sort -u > nvcc.lines
printf '**Source lines reported: cdpc %s; nvcc %s.**\n\n' "$(tr '\n' ' ' < cdpc.lines)" "$(tr '\n' ' ' < nvcc.lines)" >> "$REPORT"
fi

# ---------------------------------------------------------------- 3. -G
if want 3; then
cd "$ROOT"
echo "## 3. -G under cuda-gdb" >> "$REPORT"
echo >> "$REPORT"
mkdir -p "$WORK/debug"
cd "$WORK/debug"
cat > scale.cu <<'EOF'
extern "C" __global__ void child(int *data) {
    int x = data[threadIdx.x];
    int y = x * 3 + 1;
    data[threadIdx.x] = y;
}

extern "C" __global__ void parent(int *data) {
    child<<<1, 4>>>(data);
}
EOF
cat > main.cu <<'EOF'
#include <cstdio>
extern "C" __global__ void parent(int *data);
int main() {
    int host[4] = {10, 20, 30, 40};
    int *data;
    cudaMalloc(&data, sizeof host);
    cudaMemcpy(data, host, sizeof host, cudaMemcpyHostToDevice);
    parent<<<1, 1>>>(data);
    cudaDeviceSynchronize();
    cudaMemcpy(host, data, sizeof host, cudaMemcpyDeviceToHost);
    printf("%d %d %d %d\n", host[0], host[1], host[2], host[3]);
    return 0;
}
EOF
step "cdpc -G host object" "$CDPC" --emit host-obj -arch=sm_90 -G scale.cu -o scale.host.o
step "link with nvcc" "$NVCC" -arch=sm_90 -rdc=true -G main.cu scale.host.o -o debug-cdpc
step "nvcc -G" "$NVCC" -arch=sm_90 -rdc=true -G main.cu scale.cu -o debug-nvcc
for build in cdpc nvcc; do
    # The kernel's code is loaded at run time: the breakpoint waits for it (pending).
    step "cuda-gdb, $build's build" cuda-gdb -batch -ex 'set breakpoint pending on' -ex 'set cuda break_on_launch none' -ex 'break scale.cu:4' \
        -ex run -ex 'print x' -ex 'print y' -ex 'print data' -ex 'print *data' -ex 'info cuda kernels' -ex continue ./debug-$build
    grep -E '^\$[0-9]+ = |Breakpoint 1, |scale.cu:4' "$WORK/last.out" | sed -E 's/0x[0-9a-f]+/0x.../g' | head -7 > $build.gdb
done
{
    echo "**cuda-gdb at scale.cu:4, cdpc's build:**"
    echo '```'; cat cdpc.gdb; echo '```'
    echo "**nvcc's build:**"
    echo '```'; cat nvcc.gdb; echo '```'
} >> "$REPORT"
fi

# ---------------------------------------------------------------- 4. PTX-only fat binary
if want 4; then
cd "$ROOT"
echo "## 4. A fat binary with PTX only, JIT-linked with libcudadevrt" >> "$REPORT"
echo >> "$REPORT"
mkdir -p "$WORK/jit"
cd "$WORK/jit"
cat > tree.cu <<'EOF'
extern "C" __global__ void child(int *data, int base) {
    data[base + threadIdx.x] += base + 1;
}

extern "C" __global__ void parent(int *data) {
    child<<<1, 32>>>(data, threadIdx.x * 32);
}
EOF
cat > load.cpp <<'EOF'
// Loads a fat binary (argv[1]) with the driver API, directly (argv[2] = "direct") or through a
// JIT link with libcudadevrt (argv[2] = path of libcudadevrt.a), runs parent<<<1, 4>>> and
// prints the result.
#include <cuda.h>
#include <cstdio>
#include <string_view>
#include <vector>
#define CHECK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char *s; cuGetErrorName(r, &s); printf("%s: %s\n", #x, s); return 1; } } while (0)
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) { printf("cannot open %s\n", argv[1]); return 1; }
    std::vector<char> image(1 << 24);
    image.resize(fread(image.data(), 1, image.size(), f));
    fclose(f);
    CUdevice dev; CUcontext ctx; CUmodule mod;
    CHECK(cuInit(0)); CHECK(cuDeviceGet(&dev, 0)); CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    if (std::string_view(argv[2]) == "direct") {
        CHECK(cuModuleLoadData(&mod, image.data()));
    } else {
        CUlinkState link; void *cubin; size_t size;
        CHECK(cuLinkCreate(0, NULL, NULL, &link));
        CHECK(cuLinkAddData(link, CU_JIT_INPUT_FATBINARY, image.data(), image.size(), "tree", 0, NULL, NULL));
        CHECK(cuLinkAddFile(link, CU_JIT_INPUT_LIBRARY, argv[2], 0, NULL, NULL));
        CHECK(cuLinkComplete(link, &cubin, &size));
        CHECK(cuModuleLoadData(&mod, cubin));
        CHECK(cuLinkDestroy(link));
    }
    CUfunction parent; CHECK(cuModuleGetFunction(&parent, mod, "parent"));
    CUdeviceptr data; CHECK(cuMemAlloc(&data, 128 * sizeof(int))); CHECK(cuMemsetD32(data, 0, 128));
    void *args[] = {&data};
    CHECK(cuLaunchKernel(parent, 1, 1, 1, 4, 1, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());
    int host[128]; CHECK(cuMemcpyDtoH(host, data, sizeof host));
    long sum = 0; for (int i = 0; i < 128; i++) sum += host[i];
    printf("ok: data[0]=%d data[127]=%d sum=%ld\n", host[0], host[127], sum);
    return 0;
}
EOF
step "load.cpp" g++ -std=c++17 -I"$CUDA_HOME/include" load.cpp -o load -L"$CUDA_HOME/lib64/stubs" -lcuda
step "cdpc, PTX only" "$CDPC" tree.cu -o cdpc.fatbin -gencode arch=compute_90,code=compute_90
step "nvcc, PTX only" "$NVCC" -rdc=true -fatbin -gencode arch=compute_90,code=compute_90 tree.cu -o nvcc.fatbin
for build in cdpc nvcc; do
    step "$build's fat binary, JIT-linked with libcudadevrt" ./load $build.fatbin "$CUDA_HOME/lib64/libcudadevrt.a"
    grep '^ok\|: CUDA_ERROR' "$WORK/last.out" > $build.linked
    step "$build's fat binary, loaded directly" ./load $build.fatbin direct
    grep '^ok\|: CUDA_ERROR' "$WORK/last.out" > $build.direct
done
{
    echo "**JIT-linked: cdpc \`$(cat cdpc.linked)\`; nvcc \`$(cat nvcc.linked)\`.**"
    echo
    echo "**Loaded directly: cdpc \`$(cat cdpc.direct)\`; nvcc \`$(cat nvcc.direct)\`.**"
    echo
} >> "$REPORT"
fi

# ---------------------------------------------------------------- 5. profiling
if want 5; then
cd "$ROOT"
echo "## 5. Nsight Compute on the host program (docs/build-example)" >> "$REPORT"
echo >> "$REPORT"
mkdir -p "$WORK/profile" "$WORK/profile-ref"
cp docs/build-example/* "$WORK/profile/"
cp docs/build-example/*.cu "$WORK/profile-ref/"
cd "$WORK/profile"
step "make app-nvcc (cdpc's host objects)" make CDPC="$CDPC" NVCC="$NVCC" CUDA="$CUDA_HOME" CUDA_LIB="$CUDA_HOME/lib64" app-nvcc
step "ncu, cdpc's build" ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread ./app-nvcc
grep -E '^  [A-Za-z_].*\(|gpu__time_duration|launch__grid_size|launch__registers' "$WORK/last.out" | sed -E 's/[0-9]+\.[0-9]+/#/g' > "$WORK/cdpc.ncu"
cd "$WORK/profile-ref"
step "nvcc alone" "$NVCC" -arch=sm_90 -rdc=true main.cu launch.cu scale.cu -o app-ref
step "ncu, nvcc's build" ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread ./app-ref
grep -E '^  [A-Za-z_].*\(|gpu__time_duration|launch__grid_size|launch__registers' "$WORK/last.out" | sed -E 's/[0-9]+\.[0-9]+/#/g' > "$WORK/nvcc.ncu"
{
    echo "**Kernels and metrics ncu reports (durations masked), cdpc's build:**"
    echo '```'; cat "$WORK/cdpc.ncu"; echo '```'
    echo "**nvcc's build:**"
    echo '```'; cat "$WORK/nvcc.ncu"; echo '```'
} >> "$REPORT"
fi

# ---------------------------------------------------------------- 6. static kernels
if want 6; then
cd "$ROOT"
echo "## 6. Two host objects with a static kernel of one name" >> "$REPORT"
echo >> "$REPORT"
mkdir -p "$WORK/static" && cd "$WORK/static"
for f in a b; do
    v=$([ $f = a ] && echo 1 || echo 2)
    printf 'static __global__ void set(int *p) { *p = %s; }\n__global__ void run_%s(int *p) { set<<<1, 1>>>(p); }\n' "$v" "$f" > $f.cu
    step "cdpc $f.cu --emit host-obj" "$CDPC" $f.cu --emit host-obj -o $f.o --cuda-home "$CUDA_HOME"
done
cat > main.cu <<'EOF2'
#include <cstdio>
__global__ void run_a(int *);
__global__ void run_b(int *);
int main() {
    int *p, a = 0, b = 0;
    cudaMalloc(&p, sizeof(int));
    run_a<<<1, 1>>>(p); cudaMemcpy(&a, p, sizeof(int), cudaMemcpyDeviceToHost);
    run_b<<<1, 1>>>(p); cudaMemcpy(&b, p, sizeof(int), cudaMemcpyDeviceToHost);
    printf("run_a set %d, run_b set %d: %s\n", a, b, a == 1 && b == 2 ? "each file's own static kernel" : "WRONG");
    return !(a == 1 && b == 2);
}
EOF2
step "nvcc links both" "$NVCC" -arch=sm_90 -rdc=true main.cu a.o b.o -o app
step "run" ./app
fi
cd "$ROOT"
echo "wrote $REPORT"
