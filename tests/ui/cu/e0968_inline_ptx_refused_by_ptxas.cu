// emit: obj
// ptxas reads the PTX of an `asm` statement only after Clang and LLVM wrote it: its errors
// are placed at the statement, through the line table of a second compilation.
__global__ void scale(int *p, int k)
{
    int x = p[threadIdx.x];
    asm("mul.lo.u32 %0, %0, %1;" : "+r"(x) : "r"(k));
    asm volatile("bogus.instr.u32 %0, %0;"
                 : "+r"(x));
    p[threadIdx.x] = x;
}
