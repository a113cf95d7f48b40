/* cdpc's stdint.h and cstdint, for LP64 (x86-64 Linux, as nvcc's device code sees it).
 * The language has no typedef yet, so the integer types are macros for the built-in types;
 * they name the same types as glibc's typedefs. */
#ifndef __CDPC_STDINT_H__
#define __CDPC_STDINT_H__
#include <limits.h>
#define int8_t signed char
#define int16_t short
#define int32_t int
#define int64_t long
#define uint8_t unsigned char
#define uint16_t unsigned short
#define uint32_t unsigned int
#define uint64_t unsigned long
#define intptr_t long
#define uintptr_t unsigned long
#define intmax_t long
#define uintmax_t unsigned long
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295U
#define INT64_MIN (-9223372036854775807L - 1)
#define INT64_MAX 9223372036854775807L
#define UINT64_MAX 18446744073709551615UL
#define SIZE_MAX 18446744073709551615UL
#define INTPTR_MAX INT64_MAX
#define UINTPTR_MAX UINT64_MAX
#endif
