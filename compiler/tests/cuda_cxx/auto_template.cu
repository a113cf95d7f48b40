// Kernel templates of `auto` and `decltype(auto)` non-type parameters (C++17), launched from
// the device and from host code: Clang 22 writes `TnDa` before such an argument in the symbol
// (the Itanium ABI's newer rule), nvcc the older spelling without it.
enum class Color { Red, Green };
template <auto V> __global__ void ak(int *p) { p[threadIdx.x] = static_cast<int>(V); }
template <decltype(auto) V> __global__ void dk(int *p) { p[threadIdx.x] += V; }
struct Pair { int a, b; };
template <auto V> __global__ void pk(Pair *p, Pair *q) { p[0].a = q[0].b + static_cast<int>(V); }
template <auto V> __global__ void parent(int *p, Pair *s) {
    ak<V><<<1, 32>>>(p);
    dk<4><<<1, 32>>>(p);
    pk<'c'><<<1, 1>>>(s, s);
}
void run(int *p, Pair *s) {
    ak<5><<<1, 1>>>(p);
    parent<Color::Green><<<1, 1>>>(p, s);
}
