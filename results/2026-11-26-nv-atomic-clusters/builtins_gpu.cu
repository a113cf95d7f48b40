// nvcc's built-ins that NVIDIA's headers call and Clang's did not replace (dot products, byte
// swaps, the grid constant's address conversions), the aligned device allocation, and device
// nan()/nanf() with tags known at run time: every value printed, bit for bit. Written for
// cdpc's tests of 2026-11-26 (not copied).
#include <cmath>
#include <cstdio>
#include <cstring>

struct Args {
  int a[8];
};

__global__ void child(const __grid_constant__ Args args, unsigned long long *out) {
  int i = threadIdx.x;
  out[i] = (unsigned)__dp4a(args.a[i % 8], args.a[(i + 3) % 8], i);
  out[16 + i] = __dp4a((unsigned)args.a[i % 8], (unsigned)args.a[(i + 5) % 8], (unsigned)i);
  out[32 + i] = (unsigned)(__dp2a_lo(args.a[i % 8], args.a[(i + 1) % 8], -i) ^ __dp2a_hi(args.a[(i + 2) % 8], args.a[(i + 7) % 8], i));
  out[48 + i] = __nv_bswap64(0x0102030405060708ull * (i + 1)) ^ __nv_bswap32(0xa1b2c3d4u + i) ^ __nv_bswap16((unsigned short)(0xbeef + i));
  size_t raw = __cvta_generic_to_grid_constant(&args.a[i % 8]);
  const int *back = (const int *)__cvta_grid_constant_to_generic(raw);
  out[64 + i] = (unsigned)*back + 1000u * __isGridConstant(back);
}

__global__ void parent(unsigned long long *out, const char *tags) {
  Args args;
  for (int k = 0; k < 8; k++)
    args.a[k] = (int)(0x7f80ff01u * (k + 3)) ^ (k << 9);
  child<<<1, 16>>>(args, out);
  void *p = __nv_aligned_device_malloc(1000, 256);
  out[80] = p ? ((unsigned long long)p % 256) : 12345;
  if (p) {
    ((int *)p)[249] = 7;
    out[81] = ((int *)p)[249];
    free(p);
  }
  double d = nan(tags);
  float f = nanf(tags + 4);
  double e = std::nan("");
  memcpy(&out[82], &d, 8);
  unsigned fb;
  memcpy(&fb, &f, 4);
  out[83] = fb;
  memcpy(&out[84], &e, 8);
}

int main() {
  unsigned long long *out, h[85];
  char *tags;
  const char t[] = "123\0" "0x2a";
  cudaMalloc(&out, sizeof h);
  cudaMalloc(&tags, sizeof t);
  cudaMemset(out, 0, sizeof h);
  cudaMemcpy(tags, t, sizeof t, cudaMemcpyHostToDevice);
  parent<<<1, 1>>>(out, tags);
  cudaError_t e = cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(e));
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 85; i++)
    printf("%016llx%c", h[i], i % 4 == 3 ? '\n' : ' ');
  printf("\n");
  return 0;
}
