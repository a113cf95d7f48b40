// CUDA 12.8's __nv_atomic_* built-ins under contention, from kernels that a parent launches on
// the device: every operation, every order and scope, 4-, 8- and 16-byte operands. Every value
// printed is determined by the program (totals, extremes, permutations' sums, what a release
// made visible to an acquire), so nvcc's build and cdpc's print the same bytes when both
// compile the operations to what they mean. Written for cdpc's tests of 2026-11-26 (not copied).
#include <cstdio>
#include <cstring>

struct __align__(16) Pair {
  unsigned long long a, b;
};

struct Totals {
  int add_i;
  unsigned add_u;
  unsigned long long add_ull;
  float add_f;
  double add_d;
  int sub_i;
  unsigned long long fetched_sum;
  int min_i, max_i;
  unsigned min_u, max_u;
  long long min_ll, max_ll;
  unsigned long long max_ull;
  unsigned and_u, or_u, xor_u;
  unsigned long long or_ull;
  int exch_last;
  unsigned long long exch_sum;
  int locked_count;
  int lock;
  Pair pair;
  unsigned long long pair_sum;
  Pair cas_pair;
  float neg_zero;
  float neg_zero_result;
  short half;
  unsigned char byte;
  int seen_mismatch;
  int data[64];
  int flag;
  int fence_data;
  int fence_flag;
  int fence_seen;
};

__global__ void arithmetic(Totals *t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int old = __nv_atomic_fetch_add(&t->add_i, 1, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_add(&t->fetched_sum, (unsigned long long)old, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_add(&t->add_u, 3u, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_SYSTEM);
  __nv_atomic_fetch_add(&t->add_ull, 1ull << 33, __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_CLUSTER);
  __nv_atomic_fetch_add(&t->add_f, 0.5f, __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_add(&t->add_d, 0.25, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_BLOCK);
  __nv_atomic_fetch_sub(&t->sub_i, 2, __NV_ATOMIC_CONSUME, __NV_THREAD_SCOPE_THREAD);
  __nv_atomic_sub(&t->sub_i, -1, __NV_ATOMIC_RELAXED);
  __nv_atomic_fetch_min(&t->min_i, 1000 - i, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_max(&t->max_i, i - 1000, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_min(&t->min_u, 0xffffff00u + (unsigned)(i % 200), __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_SYSTEM);
  __nv_atomic_fetch_max(&t->max_u, 0x80000000u + (unsigned)i, __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_min(&t->min_ll, -(1ll << 40) - i, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_max(&t->max_ll, (1ll << 40) + i, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_max(&t->max_ull, 0x8000000000000000ull + i, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_BLOCK);
  __nv_atomic_fetch_and(&t->and_u, i % 32 < 20 ? ~(1u << (i % 32)) : 0xffffffffu, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_or(&t->or_u, 1u << (i % 31), __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_xor(&t->xor_u, (unsigned)i * 2654435761u, __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_or(&t->or_ull, 1ull << (i % 64), __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_SYSTEM);
}

__global__ void exchanges(Totals *t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int was = __nv_atomic_exchange_n(&t->exch_last, i + 1, __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_add(&t->exch_sum, (unsigned long long)was, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  // A lock of compare-and-swap: the count it guards is a plain int.
  for (;;) {
    int expected = 0;
    if (__nv_atomic_compare_exchange_n(&t->lock, &expected, 1, false, __NV_ATOMIC_ACQUIRE, __NV_ATOMIC_RELAXED,
                                       __NV_THREAD_SCOPE_DEVICE)) {
      volatile int *count = &t->locked_count;
      *count = *count + 1;
      __nv_atomic_store_n(&t->lock, 0, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);
      break;
    }
    if (expected != 1)
      __nv_atomic_fetch_add(&t->seen_mismatch, 1, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  }
  // 16 bytes: each thread's pair in, the one before it out; every pair is seen once.
  Pair mine = {(unsigned long long)i + 1, ((unsigned long long)i + 1) << 20};
  Pair got;
  __nv_atomic_exchange(&t->pair, &mine, &got, __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_fetch_add(&t->pair_sum, got.a + got.b, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  Pair seen;
  __nv_atomic_load(&t->cas_pair, &seen, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  for (;;) {
    Pair next = {seen.a + 1, seen.b + 3};
    if (__nv_atomic_compare_exchange(&t->cas_pair, &seen, &next, true, __NV_ATOMIC_ACQ_REL, __NV_ATOMIC_ACQUIRE,
                                     __NV_THREAD_SCOPE_DEVICE))
      break;
  }
}

// One block writes data and releases a flag; the others acquire it and read the data.
__global__ void message(Totals *t) {
  if (blockIdx.x == 0) {
    if (threadIdx.x < 64)
      t->data[threadIdx.x] = 7 * threadIdx.x + 1;
    __syncthreads();
    if (threadIdx.x == 0) {
      __nv_atomic_store_n(&t->flag, 1, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);
      t->fence_data = 4242;
      __nv_atomic_thread_fence(__NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);
      __nv_atomic_store_n(&t->fence_flag, 1, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
    }
    return;
  }
  if (threadIdx.x < 64) {
    while (__nv_atomic_load_n(&t->flag, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE) == 0) {
    }
    if (t->data[threadIdx.x] != 7 * (int)threadIdx.x + 1)
      __nv_atomic_fetch_add(&t->seen_mismatch, 1, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  }
  if (threadIdx.x == 64) {
    while (__nv_atomic_load_n(&t->fence_flag, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE) == 0) {
    }
    __nv_atomic_thread_fence(__NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE);
    __nv_atomic_fetch_add(&t->fence_seen, *(volatile int *)&t->fence_data == 4242 ? 1 : 100,
                          __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_SYSTEM);
  }
}

__global__ void small(Totals *t) {
  // nvcc's subtraction adds 0 - v: -0.0f minus +0.0f is +0.0f through it.
  t->neg_zero_result = __nv_atomic_fetch_sub(&t->neg_zero, 0.0f, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);
  short h = __nv_atomic_load_n(&t->half, __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_store_n(&t->half, (short)(h * 3), __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE);
  unsigned char b;
  __nv_atomic_load(&t->byte, &b, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_BLOCK);
  b = (unsigned char)(b + 200);
  __nv_atomic_store(&t->byte, &b, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_SYSTEM);
}

// The parent: launches the others from the device, in order, on the device's NULL stream.
__global__ void parent(Totals *t, int blocks) {
  arithmetic<<<blocks, 256>>>(t);
  exchanges<<<blocks, 256>>>(t);
  message<<<4, 128>>>(t);
  small<<<1, 1>>>(t);
}

int main() {
  Totals h;
  memset(&h, 0, sizeof h);
  h.min_i = 1 << 30;
  h.max_i = -(1 << 30);
  h.min_u = 0xffffffffu;
  h.and_u = 0xffffffffu;
  h.sub_i = 1000000;
  h.min_ll = 0;
  h.neg_zero = -0.0f;
  h.half = -1234;
  h.byte = 77;
  Totals *d;
  cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, &h, sizeof h, cudaMemcpyHostToDevice);
  const int blocks = 64;
  parent<<<1, 1>>>(d, blocks);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    printf("error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  unsigned fz, fnz;
  memcpy(&fz, &h.neg_zero, 4);
  memcpy(&fnz, &h.neg_zero_result, 4);
  printf("add i=%d u=%u ull=%llu f=%.3f d=%.3f sub=%d fetched=%llu\n", h.add_i, h.add_u, h.add_ull, h.add_f, h.add_d,
         h.sub_i, h.fetched_sum);
  printf("min/max i=%d %d u=%u %u ll=%lld %lld ull=%llu\n", h.min_i, h.max_i, h.min_u, h.max_u, h.min_ll, h.max_ll,
         h.max_ull);
  printf("bits and=%08x or=%08x xor=%08x or64=%016llx\n", h.and_u, h.or_u, h.xor_u, h.or_ull);
  // What the exchanges returned and what was left: every value put in, once.
  printf("exchange all=%llu lock=%d count=%d\n", h.exch_sum + h.exch_last, h.lock, h.locked_count);
  printf("pairs all=%llu cas=%llu,%llu\n", h.pair_sum + h.pair.a + h.pair.b, h.cas_pair.a, h.cas_pair.b);
  printf("message flag=%d fence=%d mismatches=%d\n", h.flag, h.fence_seen, h.seen_mismatch);
  printf("small zero=%08x result=%08x half=%d byte=%u\n", fz, fnz, h.half, h.byte);
  return 0;
}
