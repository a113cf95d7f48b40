// clang: /nonexistent/clang++
// No Clang where it was asked for: CUDA C++ cannot be compiled, and the message says what to install.
__global__ void k(int *p) { p[0] = 1; }
