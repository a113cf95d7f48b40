#include <setjmp.h>
#include <stdio.h>
#include <time.h>
typedef struct { jmp_buf env; FILE *log; time_t started; } host_state;
__global__ void child(int *out) { out[threadIdx.x] = threadIdx.x; }
__global__ void parent(int *out) { child<<<1, 32>>>(out); }
int run(host_state *s) { if (setjmp(s->env)) return 1; fprintf(s->log, "ok\n"); return 0; }
