// cxx_graph.cu -- the C++ that real device code is written in: a graph class with member
// functions, references, a namespace and a constructor, driving a child launch per vertex.
//
// Demonstrates: a `struct` with `__device__` member functions (const and not, defined in and
// out of the class), a derived class, `this`, references as parameters, locals and a return
// type, a constructor with a member-initializer list, a function in a namespace called through
// an alias, and a child grid per vertex that gets the graph by value (as KLAP's SSSP and MST
// pass their `Graph`).
//
// The kernels are extern "C" (the runner finds them by name); the device functions keep
// their C++ names (`_ZN5Graph6recordEji`, `_ZN5scale9times_tenERKi`, ...).
//
// Host launch: degrees<<<1, 64>>>(offsets, out, 64); out[v] becomes 10 * degree(v) + 1 for
// each of the 64 vertices, where vertex v has v % 4 edges.

typedef unsigned int uint;

struct Csr {
    uint nnodes;
    const int *offsets;
    __device__ uint degree(uint v) const { return offsets[v + 1] - offsets[v]; }
};

struct Graph : Csr {
    int *out;
    __device__ Graph(const int *offs, int *o, uint n);
    __device__ int &slot(uint v) { return out[v]; }
    __device__ void record(uint v, int value);
};

__device__ Graph::Graph(const int *offs, int *o, uint n) : out(o) {
    offsets = offs;
    nnodes = n;
}

__device__ void Graph::record(uint v, int value) {
    int &s = slot(v);
    s += value;
}

namespace scale {
__device__ int times_ten(const int &x) { return 10 * x; }
}
namespace sc = scale;

extern "C" __global__ void visit(Graph g, uint v) {
    // One thread per edge of v adds 10.
    if (threadIdx.x < g.degree(v)) {
        atomicAdd(&g.slot(v), sc::times_ten(1));
    }
}

__device__ void start(Graph &g, uint v) {
    g.record(v, 1);
    uint d = g.degree(v);
    if (d > 0) {
        visit<<<1, d>>>(g, v);
    }
}

extern "C" __global__ void degrees(const int *offsets, int *out, uint n) {
    Graph g(offsets, out, n);
    uint v = threadIdx.x + blockIdx.x * blockDim.x;
    if (v < g.nnodes) {
        start(g, v);
    }
}
