#pragma once

/* Launches the parent kernel over `blocks` blocks (each launches the child kernel of child.cu
   from the device) and returns the sum of the values the children wrote, or -1 after a CUDA
   error (printed). */
long long dp_checksum(int blocks);

/* What dp_checksum returns when the kernels ran. */
long long dp_expected(int blocks);
