// Device-side objects of classes with pure virtual functions, made by one kernel with `new` and
// used by another through the base class (an abstract base's vtable, whose pure slots nvcc
// writes as 0, stays in the program). Written for cdpc's tests of 2026-11-26 (not copied).
#include <cstdio>

// The object escapes to code the compiler cannot see while the base's destructor runs, so the
// destructor stores the base's vtable.
__device__ __noinline__ void touch(const void *p) { asm volatile("" ::"l"(p) : "memory"); }

template <class T> class Store {
public:
  __device__ virtual ~Store() { touch(this); }
  __device__ virtual void put(T v) = 0;
  __device__ virtual T take() = 0;
};

template <class T> class Stack : public Store<T> {
  T items[8];
  int n = 0;

public:
  __device__ void put(T v) override { items[n++ % 8] = v; }
  __device__ T take() override { return n > 0 ? items[--n % 8] : T(); }
};

template <class T> class Queue : public Store<T> {
  T items[8];
  int head = 0, tail = 0;

public:
  __device__ void put(T v) override { items[tail++ % 8] = v; }
  __device__ T take() override { return head < tail ? items[head++ % 8] : T(); }
};

__device__ Store<int> *stores[64];

__global__ void make() {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i % 2)
    stores[i] = new Stack<int>();
  else
    stores[i] = new Queue<int>();
}

__global__ void use(int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  Store<int> *s = stores[i];
  for (int k = 0; k < 5; k++)
    s->put(i * 10 + k);
  out[i] = s->take() * 100 + s->take();
  delete s;
}

__global__ void parent(int *out) {
  make<<<2, 32>>>();
  use<<<2, 32>>>(out);
}

int main() {
  int *out, h[64];
  cudaMalloc(&out, sizeof h);
  parent<<<1, 1>>>(out);
  printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 64; i++)
    printf("%d%c", h[i], i % 8 == 7 ? '\n' : ' ');
  return 0;
}
