// flags: -Werror
// A warning of Clang's that nvcc's build does not give (cudafe++ writes the braces out, so g++
// never sees this `else`; nvcc's front end says nothing) is W1035, which -Werror leaves a
// warning: nvcc builds this file under -Werror all-warnings, and so does cdpc.
int pick(int a, int b) {
    if (a)
        if (b)
            return 1;
        else
            return 2;
    return 0;
}
__global__ void child(int *p) { p[0] = 1; }
__global__ void parent(int *p) { child<<<1, 1>>>(p); }
