// nvcc refuses `__maxnreg__` beside `__launch_bounds__` on one kernel, and a bound that is not
// positive; `__block_size__` with a dimension that is not positive, or with a second tuple
// beside `__cluster_dims__`. Clang would drop `__maxnreg__` and `__block_size__` with a warning.
__global__ void __maxnreg__(40)
__launch_bounds__(128) both(int *p) { p[0] = 3; }
__global__ void __maxnreg__(0) none(int *p) { p[0] = 5; }
__global__ void __maxnreg__(32) fine(int *p) { p[0] = 1; }
__global__ void __block_size__((0, 1, 1)) empty(int *p) { p[0] = 1; }
__global__ void __cluster_dims__(4) __block_size__((128, 1, 1), (2, 1, 1)) twice(int *p) { p[0] = 1; }
