// flags: --extended-lambda
// A `__device__` lambda copied in device code whose capture has a host-only copy constructor:
// nvcc copies the lambda without it (warning #20011-D), Clang's copy calls it.
struct Holder {
  Holder() {}
  Holder(const Holder &other) : value(other.value) {}
  __host__ __device__ int get() const { return value; }
  int value = 0;
};
template <class F> __device__ int copy_and_call(const F &f) {
  F copy = f;
  return copy(1);
}
template <class F> __global__ void apply(F f, int *out) { *out = copy_and_call(f); }
void launch(Holder h, int *out) {
  auto op = [=] __device__(int i) { return h.get() + i; };
  apply<<<1, 1>>>(op, out);
}
