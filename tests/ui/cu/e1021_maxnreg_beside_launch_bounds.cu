// nvcc refuses `__maxnreg__` beside `__launch_bounds__` on one kernel, and a bound that is not
// positive; Clang would drop `__maxnreg__` with a warning.
__global__ void __maxnreg__(40)
__launch_bounds__(128) both(int *p) { p[0] = 3; }
__global__ void __maxnreg__(0) none(int *p) { p[0] = 5; }
__global__ void __maxnreg__(32) fine(int *p) { p[0] = 1; }
