/* cdpc's stdlib.h and cstdlib: malloc and free of device code are not declared here. */
#ifndef __CDPC_STDLIB_H__
#define __CDPC_STDLIB_H__
#include <stddef.h>
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647
#endif
