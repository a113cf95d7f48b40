/* cdpc: additions to Clang 22's CUDA headers, where nvcc accepts what they do not. cdpc
 * includes this file after Clang's CUDA wrapper on both sides of a compilation
 * (clang::additions_header). Written for cdpc, not copied.
 *
 * 1. `__managed__`. Clang 22 ignores the `managed` attribute in CUDA (it is HIP's), so that a
 * managed variable was a host variable ("reference to __host__ variable in __global__
 * function"). Here it is a device variable in the section "cdpc.managed", a mark that Clang
 * keeps on definitions and declarations alike; cdpc's pipeline (pipeline/managed.rs) gives it
 * NVVM's `managed` annotation on the device side (nvcc's `.attribute(.managed)`) and, on the
 * host side, nvcc's pointer, registration and lazily loaded module.
 *
 * 2. `new` and `delete` in device code. Clang's device `operator new` and `operator delete`
 * (malloc and free, as nvcc's are) are defined in its wrapper of <new>, which its CUDA wrapper
 * does not include: a file that used `new` without including <new> called an undefined
 * `_Znwm` that nvlink refused, where nvcc compiles it. <new> is included here, after the
 * wrapper, so that every file has them.
 *
 * 3. The device runtime API's typed forms. CUDA's cuda_runtime.h has host-only templates of
 * cudaMalloc(T **, size_t), cudaFuncGetAttributes(attr, T *kernel) and the two
 * cudaOccupancyMaxActiveBlocksPerMultiprocessor forms taking a kernel of any type; the device
 * runtime has only their `void *` forms. nvcc calls the device runtime's where device code
 * writes `cudaMalloc(&p, n)` with an `int *p` (or CUB's device-side dispatch asks its kernels'
 * occupancy); Clang picked the host template (the `void *` form needs a conversion C++ does not
 * make implicitly) and left the device code calling an undefined function (E0104, or nvlink's
 * undefined `_ZL10cudaMallocIiE...`). Here each has a device template of the same shape that
 * calls the device runtime's, as the host template calls the host runtime's; Clang overloads
 * on __host__ and __device__, so device code gets these and host code keeps CUDA's.
 *
 * 4. Host code's `min` and `max`. nvcc's crt/math_functions.hpp defines the overloads of ::min
 * and ::max (int, unsigned, long, long long, their mixes, float, double and their mix) for host
 * and device; Clang's CUDA wrapper includes that header with __host__ defined away, so host code
 * calling `max(a, b)` (ten of NVIDIA's cuda-samples do) had no viable function. Here each has a
 * __host__ overload of nvcc's signature and meaning: a mix of signed and unsigned compares
 * unsigned, float and double are fmin/fmax (the operand that is not a NaN).
 *
 * 5. CUDA's cache-hint loads and stores. nvcc's sm_32_intrinsics.h declares __ldca, __ldlu,
 * __stcg, __stcs and __stwb beside __ldcg, __ldcs, __ldcv and __stwt; Clang's
 * __clang_cuda_intrinsics.h defines only the latter (its wrapper skips NVIDIA's header), so a
 * call of the former was "no matching function" through Clang where nvcc compiles it. Each
 * function here is the PTX instruction of its name, as the CUDA programming guide's "Load
 * Functions Using Cache Hints" and "Store Functions Using Cache Hints" describe, for the types
 * nvcc declares it for. Loads of last use and every store tell the compiler they touch memory
 * ("memory"), as NVIDIA's header does. */
#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_MANAGED__)
#define __CDPC_MANAGED__
#undef __managed__
#define __managed__ __attribute__((device)) __attribute__((section("cdpc.managed")))
#include <new>
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_HOST_MIN_MAX__)
#define __CDPC_HOST_MIN_MAX__
#define __CDPC_MIN_MAX_INT(R, A, B)                                                               \
  static inline __host__ R min(const A a, const B b) { return (R)a < (R)b ? (R)a : (R)b; }         \
  static inline __host__ R max(const A a, const B b) { return (R)a > (R)b ? (R)a : (R)b; }
__CDPC_MIN_MAX_INT(int, int, int)
__CDPC_MIN_MAX_INT(unsigned int, unsigned int, unsigned int)
__CDPC_MIN_MAX_INT(unsigned int, int, unsigned int)
__CDPC_MIN_MAX_INT(unsigned int, unsigned int, int)
__CDPC_MIN_MAX_INT(long int, long int, long int)
__CDPC_MIN_MAX_INT(unsigned long int, unsigned long int, unsigned long int)
__CDPC_MIN_MAX_INT(unsigned long int, long int, unsigned long int)
__CDPC_MIN_MAX_INT(unsigned long int, unsigned long int, long int)
__CDPC_MIN_MAX_INT(long long int, long long int, long long int)
__CDPC_MIN_MAX_INT(unsigned long long int, unsigned long long int, unsigned long long int)
__CDPC_MIN_MAX_INT(unsigned long long int, long long int, unsigned long long int)
__CDPC_MIN_MAX_INT(unsigned long long int, unsigned long long int, long long int)
#undef __CDPC_MIN_MAX_INT
static inline __host__ float min(const float a, const float b) { return __builtin_fminf(a, b); }
static inline __host__ float max(const float a, const float b) { return __builtin_fmaxf(a, b); }
static inline __host__ double min(const double a, const double b) { return __builtin_fmin(a, b); }
static inline __host__ double max(const double a, const double b) { return __builtin_fmax(a, b); }
static inline __host__ double min(const float a, const double b) { return __builtin_fmin((double)a, b); }
static inline __host__ double max(const float a, const double b) { return __builtin_fmax((double)a, b); }
static inline __host__ double min(const double a, const float b) { return __builtin_fmin(a, (double)b); }
static inline __host__ double max(const double a, const float b) { return __builtin_fmax(a, (double)b); }
#endif

#if defined(__cplusplus) && defined(__CUDA__) && defined(__CUDACC_RDC__) && !defined(__CDPC_DEVICE_RUNTIME_TEMPLATES__)
#define __CDPC_DEVICE_RUNTIME_TEMPLATES__
template <class T>
static __inline__ __device__ cudaError_t cudaMalloc(T **devPtr, size_t size) {
  return ::cudaMalloc((void **)(void *)devPtr, size);
}
template <class T>
static __inline__ __device__ cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, T *entry) {
  return ::cudaFuncGetAttributes(attr, (const void *)entry);
}
template <class T>
static __inline__ __device__ cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, T func, int blockSize, size_t dynamicSMemSize) {
  return ::cudaOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, (const void *)func, blockSize, dynamicSMemSize);
}
template <class T>
static __inline__ __device__ cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, T func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  return ::cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, (const void *)func, blockSize, dynamicSMemSize, flags);
}
#endif

#ifndef __CDPC_CACHE_HINTS_H__
#define __CDPC_CACHE_HINTS_H__
#if defined(__cplusplus) && defined(__CUDA__) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 320)

#if __SIZEOF_POINTER__ == 8
#define __CDPC_PTR "l"
#else
#define __CDPC_PTR "r"
#endif
#define __CDPC_MEMORY : "memory"

#define __CDPC_LD1(NAME, OP, T, TMP, C, VOL, CLOB)                                               \
  __device__ inline T NAME(const T *__ptr) {                                                      \
    TMP __tmp;                                                                                     \
    asm VOL(OP " %0, [%1];" : C(__tmp) : __CDPC_PTR(__ptr) CLOB);                                \
    return (T)__tmp;                                                                               \
  }
#define __CDPC_LD2(NAME, OP, T, TMP, C, VOL, CLOB)                                               \
  __device__ inline T NAME(const T *__ptr) {                                                      \
    TMP __x, __y;                                                                                  \
    asm VOL(OP " {%0,%1}, [%2];" : C(__x), C(__y) : __CDPC_PTR(__ptr) CLOB);                     \
    T __ret;                                                                                       \
    __ret.x = __x;                                                                                 \
    __ret.y = __y;                                                                                 \
    return __ret;                                                                                  \
  }
#define __CDPC_LD4(NAME, OP, T, TMP, C, VOL, CLOB)                                               \
  __device__ inline T NAME(const T *__ptr) {                                                      \
    TMP __x, __y, __z, __w;                                                                        \
    asm VOL(OP " {%0,%1,%2,%3}, [%4];" : C(__x), C(__y), C(__z), C(__w) : __CDPC_PTR(__ptr) CLOB); \
    T __ret;                                                                                       \
    __ret.x = __x;                                                                                 \
    __ret.y = __y;                                                                                 \
    __ret.z = __z;                                                                                 \
    __ret.w = __w;                                                                                 \
    return __ret;                                                                                  \
  }
#define __CDPC_ST1(NAME, OP, T, TMP, C)                                                          \
  __device__ inline void NAME(T *__ptr, T __value) {                                              \
    asm(OP " [%0], %1;" ::__CDPC_PTR(__ptr), C((TMP)__value) : "memory");                       \
  }
#define __CDPC_ST2(NAME, OP, T, TMP, C)                                                          \
  __device__ inline void NAME(T *__ptr, T __value) {                                              \
    asm(OP " [%0], {%1,%2};" ::__CDPC_PTR(__ptr), C((TMP)__value.x), C((TMP)__value.y) : "memory"); \
  }
#define __CDPC_ST4(NAME, OP, T, TMP, C)                                                          \
  __device__ inline void NAME(T *__ptr, T __value) {                                              \
    asm(OP " [%0], {%1,%2,%3,%4};" ::__CDPC_PTR(__ptr), C((TMP)__value.x), C((TMP)__value.y),   \
        C((TMP)__value.z), C((TMP)__value.w) : "memory");                                          \
  }

/* Every type nvcc declares a cache-hint load for, with its PTX type and register. */
#define __CDPC_LOADS(NAME, HINT, VOL, CLOB)                                                      \
  __CDPC_LD1(NAME, "ld.global." HINT ".s8", char, unsigned int, "=r", VOL, CLOB)                 \
  __CDPC_LD1(NAME, "ld.global." HINT ".s8", signed char, unsigned int, "=r", VOL, CLOB)          \
  __CDPC_LD1(NAME, "ld.global." HINT ".s16", short, unsigned short, "=h", VOL, CLOB)             \
  __CDPC_LD1(NAME, "ld.global." HINT ".s32", int, unsigned int, "=r", VOL, CLOB)                 \
  __CDPC_LD1(NAME, "ld.global." HINT ".s64", long long, unsigned long long, "=l", VOL, CLOB)     \
  __CDPC_LD1(NAME, "ld.global." HINT ".u8", unsigned char, unsigned int, "=r", VOL, CLOB)        \
  __CDPC_LD1(NAME, "ld.global." HINT ".u16", unsigned short, unsigned short, "=h", VOL, CLOB)    \
  __CDPC_LD1(NAME, "ld.global." HINT ".u32", unsigned int, unsigned int, "=r", VOL, CLOB)        \
  __CDPC_LD1(NAME, "ld.global." HINT ".u64", unsigned long long, unsigned long long, "=l", VOL, CLOB) \
  __CDPC_LD1(NAME, "ld.global." HINT ".f32", float, float, "=f", VOL, CLOB)                      \
  __CDPC_LD1(NAME, "ld.global." HINT ".f64", double, double, "=d", VOL, CLOB)                    \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.s8", char2, int, "=r", VOL, CLOB)                      \
  __CDPC_LD4(NAME, "ld.global." HINT ".v4.s8", char4, int, "=r", VOL, CLOB)                      \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.s16", short2, short, "=h", VOL, CLOB)                  \
  __CDPC_LD4(NAME, "ld.global." HINT ".v4.s16", short4, short, "=h", VOL, CLOB)                  \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.s32", int2, int, "=r", VOL, CLOB)                      \
  __CDPC_LD4(NAME, "ld.global." HINT ".v4.s32", int4, int, "=r", VOL, CLOB)                      \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.s64", longlong2, long long, "=l", VOL, CLOB)           \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.u8", uchar2, unsigned int, "=r", VOL, CLOB)            \
  __CDPC_LD4(NAME, "ld.global." HINT ".v4.u8", uchar4, unsigned int, "=r", VOL, CLOB)            \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.u16", ushort2, unsigned short, "=h", VOL, CLOB)        \
  __CDPC_LD4(NAME, "ld.global." HINT ".v4.u16", ushort4, unsigned short, "=h", VOL, CLOB)        \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.u32", uint2, unsigned int, "=r", VOL, CLOB)            \
  __CDPC_LD4(NAME, "ld.global." HINT ".v4.u32", uint4, unsigned int, "=r", VOL, CLOB)            \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.u64", ulonglong2, unsigned long long, "=l", VOL, CLOB) \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.f32", float2, float, "=f", VOL, CLOB)                  \
  __CDPC_LD4(NAME, "ld.global." HINT ".v4.f32", float4, float, "=f", VOL, CLOB)                  \
  __CDPC_LD2(NAME, "ld.global." HINT ".v2.f64", double2, double, "=d", VOL, CLOB)

/* Every type nvcc declares a cache-hint store for. */
#define __CDPC_STORES(NAME, HINT)                                                                \
  __CDPC_ST1(NAME, "st.global." HINT ".s8", char, int, "r")                                      \
  __CDPC_ST1(NAME, "st.global." HINT ".s8", signed char, int, "r")                               \
  __CDPC_ST1(NAME, "st.global." HINT ".s16", short, short, "h")                                  \
  __CDPC_ST1(NAME, "st.global." HINT ".s32", int, int, "r")                                      \
  __CDPC_ST1(NAME, "st.global." HINT ".s64", long long, long long, "l")                          \
  __CDPC_ST1(NAME, "st.global." HINT ".u8", unsigned char, unsigned int, "r")                    \
  __CDPC_ST1(NAME, "st.global." HINT ".u16", unsigned short, unsigned short, "h")                \
  __CDPC_ST1(NAME, "st.global." HINT ".u32", unsigned int, unsigned int, "r")                    \
  __CDPC_ST1(NAME, "st.global." HINT ".u64", unsigned long long, unsigned long long, "l")        \
  __CDPC_ST1(NAME, "st.global." HINT ".f32", float, float, "f")                                  \
  __CDPC_ST1(NAME, "st.global." HINT ".f64", double, double, "d")                                \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.s8", char2, int, "r")                                  \
  __CDPC_ST4(NAME, "st.global." HINT ".v4.s8", char4, int, "r")                                  \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.s16", short2, short, "h")                              \
  __CDPC_ST4(NAME, "st.global." HINT ".v4.s16", short4, short, "h")                              \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.s32", int2, int, "r")                                  \
  __CDPC_ST4(NAME, "st.global." HINT ".v4.s32", int4, int, "r")                                  \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.s64", longlong2, long long, "l")                       \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.u8", uchar2, unsigned int, "r")                        \
  __CDPC_ST4(NAME, "st.global." HINT ".v4.u8", uchar4, unsigned int, "r")                        \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.u16", ushort2, unsigned short, "h")                    \
  __CDPC_ST4(NAME, "st.global." HINT ".v4.u16", ushort4, unsigned short, "h")                    \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.u32", uint2, unsigned int, "r")                        \
  __CDPC_ST4(NAME, "st.global." HINT ".v4.u32", uint4, unsigned int, "r")                        \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.u64", ulonglong2, unsigned long long, "l")             \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.f32", float2, float, "f")                              \
  __CDPC_ST4(NAME, "st.global." HINT ".v4.f32", float4, float, "f")                              \
  __CDPC_ST2(NAME, "st.global." HINT ".v2.f64", double2, double, "d")

/* Cached at all levels; last use (the line may be evicted after it). */
__CDPC_LOADS(__ldca, "ca", volatile, )
__CDPC_LOADS(__ldlu, "lu", , __CDPC_MEMORY)
/* long and unsigned long: their width's instruction. */
#if __SIZEOF_LONG__ == 8
#define __CDPC_LONG_S ".s64"
#define __CDPC_LONG_U ".u64"
#define __CDPC_LONG_R "l"
#else
#define __CDPC_LONG_S ".s32"
#define __CDPC_LONG_U ".u32"
#define __CDPC_LONG_R "r"
#endif
__CDPC_LD1(__ldca, "ld.global.ca" __CDPC_LONG_S, long, unsigned long, "=" __CDPC_LONG_R, volatile, )
__CDPC_LD1(__ldca, "ld.global.ca" __CDPC_LONG_U, unsigned long, unsigned long, "=" __CDPC_LONG_R, volatile, )
__CDPC_LD1(__ldlu, "ld.global.lu" __CDPC_LONG_S, long, unsigned long, "=" __CDPC_LONG_R, , __CDPC_MEMORY)
__CDPC_LD1(__ldlu, "ld.global.lu" __CDPC_LONG_U, unsigned long, unsigned long, "=" __CDPC_LONG_R, , __CDPC_MEMORY)
__CDPC_ST1(__stcg, "st.global.cg" __CDPC_LONG_S, long, long, __CDPC_LONG_R)
__CDPC_ST1(__stcg, "st.global.cg" __CDPC_LONG_U, unsigned long, unsigned long, __CDPC_LONG_R)
__CDPC_ST1(__stcs, "st.global.cs" __CDPC_LONG_S, long, long, __CDPC_LONG_R)
__CDPC_ST1(__stcs, "st.global.cs" __CDPC_LONG_U, unsigned long, unsigned long, __CDPC_LONG_R)
__CDPC_ST1(__stwb, "st.global.wb" __CDPC_LONG_S, long, long, __CDPC_LONG_R)
__CDPC_ST1(__stwb, "st.global.wb" __CDPC_LONG_U, unsigned long, unsigned long, __CDPC_LONG_R)
/* Cache at the global level; streaming (likely accessed once); write back. */
__CDPC_STORES(__stcg, "cg")
__CDPC_STORES(__stcs, "cs")
__CDPC_STORES(__stwb, "wb")

#undef __CDPC_LOADS
#undef __CDPC_STORES
#undef __CDPC_LD1
#undef __CDPC_LD2
#undef __CDPC_LD4
#undef __CDPC_ST1
#undef __CDPC_ST2
#undef __CDPC_ST4
#undef __CDPC_MEMORY
#undef __CDPC_LONG_S
#undef __CDPC_LONG_U
#undef __CDPC_LONG_R
#undef __CDPC_PTR

#endif
#endif
