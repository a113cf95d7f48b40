/* cdpc's stdio.h and cstdio: printf is a built-in of device code. */
#ifndef __CDPC_STDIO_H__
#define __CDPC_STDIO_H__
#include <stddef.h>
#define EOF (-1)
#endif
