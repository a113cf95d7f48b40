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
 * ("memory"), as NVIDIA's header does.
 *
 * 6. CUDA 12.8's `__nv_atomic_*` built-ins. nvcc's front end knows `__nv_atomic_fetch_add(p, v,
 * __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE)` and the rest (fetch_sub, _and, _or, _xor,
 * _min, _max and their forms without a result, exchange, compare_exchange, load and store, each
 * with an `_n` form, thread_fence); Clang knows neither them nor their enumerators (its CUDA
 * wrapper keeps NVIDIA's device_functions.h, which declares the enumerators, out). Clang's own
 * `__scoped_atomic_*` built-ins are no substitute: Clang 22 writes no scope into NVPTX's IR, and
 * LLVM 22's NVPTX drops the ordering of every `atomicrmw` (a release `fetch_add` became a relaxed
 * `atom.global.add`; measured with llc-22). So each function here is nvcc's instruction in inline
 * assembly, as nvcc 13.5 writes it at sm_90 (measured for every order, scope and type, and the
 * errors for what nvcc refuses): the operation, its semantics and scope (`atom.add.release.gpu.s32`;
 * consume is acquire; sequentially consistent is `fence.sc.<scope>` before the acquire form, or
 * before the relaxed store; a compare-and-exchange takes the semantics of both its orders; the
 * thread scope is `.cta`, the cluster scope `.gpu` below sm_90), on the generic address, with
 * "memory" as a barrier to the compiler. A subtraction adds `0 - v`, as nvcc's does; 16-byte
 * operands go through a `.b128` register. What nvcc refuses is refused at the call with nvcc's
 * message (`diagnose_if`): an order or scope that is no constant (nvcc: no integer literal) or out
 * of range, an order the operation cannot take, a type or size the instruction has not; the cluster
 * scope below sm_90 is nvcc's warning. A refused call's body reaches only catch-all templates, so
 * that the one message is all the user sees.
 *
 * 7. Cooperative groups' clusters. CUDA's cooperative_groups.h offers `this_cluster()` and
 * `cluster_group` only to nvcc, NVRTC, or a compiler that defines _CG_CLUSTER_INTRINSICS_AVAILABLE
 * (from sm_90): the cluster intrinsics they call (`__clusterRelativeBlockRank`,
 * `__cluster_barrier_arrive`, `__cluster_map_shared_rank`, ...) are nvcc's sm_90_rt.h, which
 * Clang's wrapper replaces with its own definitions of the same functions
 * (__clang_cuda_intrinsics.h, sm_90 on and on the host side). So the macro is defined here:
 * `cg::this_cluster().sync()` was "no member named 'this_cluster'" through cdpc.
 *
 * 8. `__cluster_dims__(x, y, z)`, `__maxnreg__(n)` and `__block_size__((x, y, z)[, (cx, cy, cz)])`.
 * nvcc writes a kernel's compile-time cluster shape as `.explicitcluster` and `.reqnctapercluster
 * x, y, z`, its register bound as `.maxnreg n`, and blocks as clusters as `.blocksareclusters`,
 * `.reqntid` and `.reqnctapercluster`; Clang 22 takes the `cluster_dims` attribute CUDA's
 * host_defines.h spells the first as and drops it for NVPTX without a word (the kernel ran
 * without clusters), and drops the unknown `maxnreg` and `block_size` attributes with a warning.
 * Here each macro is an annotation that Clang keeps with its evaluated arguments (a tuple's
 * parentheses taken off, so that it is three arguments and not a comma expression); cdpc's
 * pipeline (pipeline/qualifiers.rs) makes them NVPTX's attributes, which give nvcc's
 * directives, and refuses what nvcc refuses (`E1021`). Below sm_90 `__cluster_dims__` and
 * `__block_size__` are nvcc's errors.
 *
 * 9. nvcc's optimisation hints `__inline_hint__` and `__nv_pure__`. host_defines.h spells them as
 * attributes Clang does not know (`nv_inline_hint`, `nv_pure`), so every function carrying one
 * was a warning ("unknown attribute ... ignored"), an error under -Werror, where nvcc compiles
 * it. They are hints, which Clang ignored anyway: here they are nothing.
 *
 * 10. nvcc's own built-ins that CUDA's headers call and Clang's do not replace. Clang's wrapper
 * includes NVIDIA's sm_20_intrinsics.hpp and sm_61_intrinsics.hpp, whose __dp4a, __dp2a_lo,
 * __dp2a_hi, __nv_bswap16/32/64, __isGridConstant, __cvta_generic_to_grid_constant and
 * __cvta_grid_constant_to_generic call built-ins of nvcc's front end (`__nv_idp4a_s_s_impl`,
 * ...): through cdpc they compiled to calls of undefined functions, nvlink's "Undefined
 * reference". Each is defined here as the instruction nvcc writes for it (`dp4a.s32.s32`,
 * `dp2a.hi.u32.u32`, `cvta.to.param`, `cvta.param`; a byte swap as LLVM's `bswap`, which NVPTX
 * writes as nvcc's `prmt`; `isspacep.param`). And `__nv_aligned_device_malloc`, which NVIDIA's
 * crt/math_functions.h declares and Clang's wrapper leaves out, is nvcc's call of the
 * `__cuda_syscall_aligned_malloc` system call. Clang's math headers declare device `nan` and
 * `nanf` and define neither (a call was E0104, or in a `-dc` object an undefined
 * `_ZL3nanPKc` that nvlink refused; NVIDIA's `interval` sample): here they are libdevice's
 * `__nv_nan` and `__nv_nanf`, as nvcc's are.
 *
 * 11. The C library's headers that nvcc's cuda_runtime.h includes. nvcc includes cuda_runtime.h
 * in every file, and its headers include <ctype.h> (crt/host_defines.h), <limits.h> and
 * <stddef.h> (driver_types.h), <string.h> and <time.h> (crt/common_functions.h), <math.h>,
 * <stdlib.h>, <cmath> and <cstdlib> (crt/math_functions.h) and <utility> (cuda_runtime.h) on
 * both sides, and <new>, <stdio.h> and <assert.h> (crt/common_functions.h) on the device side
 * only, where __CUDA_ARCH__ is defined (measured: the preprocessed host and device passes of
 * `nvcc -keep` of an empty file; `printf` without <stdio.h> is `nvcc -ptx`'s but not
 * `nvcc -c`'s). Clang's CUDA wrapper and the headers it includes leave out <math.h> and <time.h>
 * on both sides, and <stdio.h> and <assert.h> on the device side (Clang's `-M` of the same file
 * on each side; <new> is section 2's). Without libstdc++'s <math.h>, which brings <cmath>'s functions into the global
 * namespace, a host function calling `isfinite(x)` found only the __device__ overloads of
 * Clang's __clang_cuda_cmath.h ("no matching function"); without <time.h>, `clock()` in host
 * code found only Clang's __device__ `clock` and CLOCKS_PER_SEC was undeclared. They are
 * included here where nvcc's headers include them (docs/NVCC-DIALECT.md).
 *
 * 12. nvcc's identity: `__NVCC__` and `__CUDACC_VER_MAJOR__`/`__CUDACC_VER_MINOR__`. nvcc defines
 * them in every file; Clang defines neither, so code that declares its kernels and helpers under
 * `#ifdef __NVCC__` (a header shared with a C++ compiler) had them undeclared ("use of undeclared
 * identifier" at their first use, three of the 452 files nvcc compiles in bench/acceptance), and
 * `#if __CUDACC_VER_MAJOR__ >= 11` read 0. CCCL and cooperative groups read `__NVCC__` as "nvcc's
 * own front end" (CUDA 13's include folder: nv/target, cuda/std/__cccl/compiler.h, a check of
 * extended lambdas in invoke.h that also needs `__CUDACC_EXTENDED_LAMBDA__`, which cdpc does not
 * define, and cooperative_groups/details/info.h's clusters, which section 7 enables anyway): their
 * compiler detection is made here first, as Clang, and guarded, so that it holds when the program
 * includes them later. Defined only with CUDA 13's headers (older CCCL reads `__NVCC__` in more
 * places); the version from `CUDA_VERSION` (cuda.h), as literals. `__CUDACC_VER_BUILD__` is not
 * known from the headers and stays undefined.
 *
 * 13. Raw `__shared__` storage. nvcc leaves a `__shared__` variable's constructor and destructor
 * out (`__shared__ cuda::barrier<...> bar;`, initialised later with `init(&bar, n)`); Clang
 * refuses a type whose constructor or destructor does something. Where it does, cdpc compiles
 * the file again with the declaration rewritten to `__cdpc_shared_storage<T>`, a union of one `T`
 * with an empty constructor and destructor (which Clang accepts, as nvcc's rule does), and a
 * reference of the variable's name from `__cdpc_shared_ref` (clang/shared_storage.rs). An array
 * of storage gives a reference to the array of `T`, of the same size and layout.
 *
 * 14. Initialised variable-length arrays. g++ (nvcc's host compiler) accepts `T a[n] = {...}` with
 * `n` no constant expression: the elements given, the rest value-initialised. Clang refuses it;
 * where it does, cdpc compiles the file again with the initialiser moved into a second
 * declarator that calls `__cdpc_vla_init(a, length)({...})` (clang/vla_init.rs), which fills the
 * array so (the list's elements converted to the array's element type, as an array of it).
 *
 * 15. Extended lambdas. nvcc's `--extended-lambda` defines `__CUDACC_EXTENDED_LAMBDA__`; cdpc's
 * gives Clang `__CDPC_EXTENDED_LAMBDA__` in its place, and this header defines the first as the
 * second and includes what CUDA's cuda_runtime.h includes for it (`<functional>`, `<utility>`,
 * and its `__nv_lambda_preheader_injection`): inside Clang's wrapper, before device code's
 * `malloc` is declared, `<functional>` made `new` in device code call the host's `malloc`
 * (cuda::macro_for_clang). CCCL's invoke.h then asks nvcc's own traits of a lambda's closure type
 * (`__nv_is_extended_device_lambda_closure_type`, ...), which Clang lacks: they answer "no" here,
 * and CCCL's check (a `__device__` lambda's return type asked for in host code) is not made.
 *
 * 16. 128-bit `atomicCAS` and `atomicExch` (and their `_block` and `_system` forms) of any
 * trivially copyable type of 16 bytes aligned to 16, from sm_90: nvcc's crt/sm_90_rt.h defines
 * them as templates over nvcc's built-ins (`__u128AtomicCAS`, ...), and Clang's wrapper does not
 * include that header, so a call was "no matching function for call to 'atomicCAS'". Here they
 * are the same templates over section 6's compare-and-swap and exchange of bits (`cas_bits`,
 * `exchange_bits`: `.b128` at 16 bytes), relaxed, of the device, block or system scope, as nvcc writes them (`atom.cas.b128`, `atom.exch.b128`, on the
 * generic address where nvcc's knows it is global). Below sm_90 they are not declared, as with
 * nvcc. `__NV_DISABLE_128_ATOMICS` leaves them out, as it does nvcc's.
 *
 * 17. The command line's macros. The names of this header's declarations are nobody's business
 * but cdpc's, and nvcc reads no such header: `-DA=1` or `-DN=1024` must not reach them. Where
 * the command line defines macros to hide (clang/hidden_macros.rs), `__CDPC_HIDE` names a file
 * that hides them when included and shows them again when included once more; the C library's
 * and CCCL's headers included here, which nvcc's compilation reads too, see them.
 *
 * 18. A system header. nvcc's compilation reads CUDA's headers as system headers (no warning of
 * `-Wall` or `-Wextra` from them); this one, which nvcc does not read at all, is one too: with
 * `-Wextra` its declarations' unused parameters were warnings in every file. */
#pragma clang system_header
#if defined(__CDPC_EXTENDED_LAMBDA__) && !defined(__CUDACC_EXTENDED_LAMBDA__)
#define __CUDACC_EXTENDED_LAMBDA__ __CDPC_EXTENDED_LAMBDA__
#if defined(__cplusplus) && defined(__CUDA__)
#include <functional>
#include <utility>
struct __device_builtin__ __nv_lambda_preheader_injection {};
#endif
#endif
#if defined(__cplusplus) && defined(__CUDA__) && defined(__CUDACC_EXTENDED_LAMBDA__) && \
    !defined(__nv_is_extended_device_lambda_closure_type)
#define __nv_is_extended_device_lambda_closure_type(...) false
#define __nv_is_extended_host_device_lambda_closure_type(...) false
#define __nv_is_extended_device_lambda_with_preserved_return_type(...) false
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_MANAGED__)
#define __CDPC_MANAGED__
#undef __managed__
#define __managed__ __attribute__((device)) __attribute__((section("cdpc.managed")))
#include <new>
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_NVCC_HOST_HEADERS__)
#define __CDPC_NVCC_HOST_HEADERS__
#include <math.h>
#include <time.h>
#if defined(__CUDA_ARCH__)
#include <assert.h>
#include <stdio.h>
#endif
#endif

/* The command line's macros, hidden from cdpc's declarations below (clang/hidden_macros.rs). */
#ifdef __CDPC_HIDE
#include __CDPC_HIDE
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

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_NV_ATOMIC__)
#define __CDPC_NV_ATOMIC__

enum {
  __NV_ATOMIC_RELAXED,
  __NV_ATOMIC_CONSUME,
  __NV_ATOMIC_ACQUIRE,
  __NV_ATOMIC_RELEASE,
  __NV_ATOMIC_ACQ_REL,
  __NV_ATOMIC_SEQ_CST
};

enum {
  __NV_THREAD_SCOPE_THREAD,
  __NV_THREAD_SCOPE_BLOCK,
  __NV_THREAD_SCOPE_CLUSTER,
  __NV_THREAD_SCOPE_DEVICE,
  __NV_THREAD_SCOPE_SYSTEM
};

#if defined(__CUDA_ARCH__)
#define __CDPC_NV_ARCH __CUDA_ARCH__
#else
#define __CDPC_NV_ARCH 0
#endif
#if __SIZEOF_POINTER__ == 8
#define __CDPC_NV_P "l"
#else
#define __CDPC_NV_P "r"
#endif
/* The cluster scope's cases exist from sm_90 (ptxas refuses `.cluster` below it, even where
 * no thread reaches it), as do fence.acquire and fence.release. */
#if __CDPC_NV_ARCH >= 900
#define __CDPC_NV_FROM_SM90(...) __VA_ARGS__
#else
#define __CDPC_NV_FROM_SM90(...)
#endif

/* A switch over (semantics * 4 + scope): one case per PTX scope of one semantics. A call's
 * order and scope are constants, so that the switch folds to one case once the function is
 * inlined (at -O0 every case stays, and the one of the call's constants runs). */
#define __CDPC_NV_SCOPES(N, SEM, AT, ...)                                                        \
  case (N) * 4 + 0:                                                                              \
    AT(SEM, "cta", __VA_ARGS__) break;                                                           \
    __CDPC_NV_FROM_SM90(case (N) * 4 + 1 : AT(SEM, "cluster", __VA_ARGS__) break;)               \
  case (N) * 4 + 2:                                                                              \
    AT(SEM, "gpu", __VA_ARGS__) break;                                                           \
  case (N) * 4 + 3:                                                                              \
    AT(SEM, "sys", __VA_ARGS__) break;
#define __CDPC_NV_ALL_SEMS(AT, ...)                                                              \
  __CDPC_NV_SCOPES(0, "relaxed", AT, __VA_ARGS__)                                                \
  __CDPC_NV_SCOPES(1, "acquire", AT, __VA_ARGS__)                                                \
  __CDPC_NV_SCOPES(2, "release", AT, __VA_ARGS__)                                                \
  __CDPC_NV_SCOPES(3, "acq_rel", AT, __VA_ARGS__)

namespace __cdpc_nv_atomic {
template <class T> struct bare { typedef T type; };
template <class T> struct bare<const T> { typedef T type; };
template <class T> struct bare<volatile T> { typedef T type; };
template <class T> struct bare<const volatile T> { typedef T type; };

/* What a type is to the instructions: an enumeration's bits are its underlying type's (nvcc
 * takes one for and, or and xor alone). */
template <class T, bool E = __is_enum(T)> struct kind {
  enum {
    enumeration = E,
    integral = __is_integral(T),
    floating = __is_floating_point(T),
    is_signed = __is_signed(T),
    size = sizeof(T)
  };
};
template <class T> struct kind<T, true> {
  enum {
    enumeration = 1,
    integral = kind<__underlying_type(T)>::integral,
    floating = 0,
    is_signed = kind<__underlying_type(T)>::is_signed,
    size = sizeof(T)
  };
};

/* The C type of the PTX type an arithmetic instruction takes for T (T itself where there is
 * none: the call was refused, and reaches a catch-all). */
template <class T, bool F = kind<T>::floating, bool S = kind<T>::is_signed, int N = kind<T>::size>
struct arith { typedef T type; };
template <class T> struct arith<T, false, true, 4> { typedef int type; };
template <class T> struct arith<T, false, false, 4> { typedef unsigned int type; };
template <class T> struct arith<T, false, true, 8> { typedef long long type; };
template <class T> struct arith<T, false, false, 8> { typedef unsigned long long type; };
template <class T> struct arith<T, true, true, 4> { typedef float type; };
template <class T> struct arith<T, true, true, 8> { typedef double type; };

/* The bits of a load, store, exchange or compare-and-swap of N bytes. */
struct b128 {
  unsigned long long lo, hi;
};
template <int N> struct raw {
  unsigned char b[N];
};
template <int N> struct bits { typedef raw<N> type; };
template <> struct bits<1> { typedef unsigned char type; };
template <> struct bits<2> { typedef unsigned short type; };
template <> struct bits<4> { typedef unsigned int type; };
template <> struct bits<8> { typedef unsigned long long type; };
template <> struct bits<16> { typedef b128 type; };

/* PTX's semantics (0 relaxed, 1 acquire, 2 release, 3 acq_rel) and scopes (0 cta, 1 cluster,
 * 2 gpu, 3 sys) of nvcc's orders and scopes. */
__device__ constexpr int rmw_sem(int o) {
  return o == __NV_ATOMIC_RELAXED ? 0 : o == __NV_ATOMIC_RELEASE ? 2 : o == __NV_ATOMIC_ACQ_REL ? 3 : 1;
}
__device__ constexpr int cas_sem(int s, int f) {
  return (s == __NV_ATOMIC_SEQ_CST || f == __NV_ATOMIC_SEQ_CST) ? 1
         : (s == __NV_ATOMIC_CONSUME || s == __NV_ATOMIC_ACQUIRE || s == __NV_ATOMIC_ACQ_REL ||
            f == __NV_ATOMIC_CONSUME || f == __NV_ATOMIC_ACQUIRE)
             ? ((s == __NV_ATOMIC_RELEASE || s == __NV_ATOMIC_ACQ_REL) ? 3 : 1)
             : (s == __NV_ATOMIC_RELEASE ? 2 : 0);
}
__device__ constexpr int ptx_scope(int s) {
  return s <= __NV_THREAD_SCOPE_BLOCK     ? 0
         : s == __NV_THREAD_SCOPE_CLUSTER ? (__CDPC_NV_ARCH >= 900 ? 1 : 2)
         : s == __NV_THREAD_SCOPE_DEVICE  ? 2
                                          : 3;
}

#define __CDPC_NV_FENCE_AT(SEM, SCOPE, _) asm volatile("fence." SEM "." SCOPE ";" ::: "memory");
/* fence.sc (sem 0 here), fence.acquire, fence.release and fence.acq_rel. */
__device__ __forceinline__ void fence(int sem, int scope) {
  switch (sem * 4 + scope) {
    __CDPC_NV_SCOPES(0, "sc", __CDPC_NV_FENCE_AT, )
    __CDPC_NV_FROM_SM90(__CDPC_NV_SCOPES(1, "acquire", __CDPC_NV_FENCE_AT, ))
    __CDPC_NV_FROM_SM90(__CDPC_NV_SCOPES(2, "release", __CDPC_NV_FENCE_AT, ))
    __CDPC_NV_SCOPES(3, "acq_rel", __CDPC_NV_FENCE_AT, )
  }
}

/* Read-modify-write instructions: one function per operation and PTX type. */
struct op_add {};
struct op_and {};
struct op_or {};
struct op_xor {};
struct op_min {};
struct op_max {};
struct op_exch {};
#define __CDPC_NV_RMW_AT(SEM, SCOPE, OP, TY, C)                                                  \
  asm volatile("atom." OP "." SEM "." SCOPE "." TY " %0,[%1],%2;" : "=" C(__r) : __CDPC_NV_P(__p), C(__v) : "memory");
#define __CDPC_NV_RMW(OP, TY, T, C)                                                              \
  __device__ __forceinline__ T rmw(op_##OP, T *__p, T __v, int __sem, int __scope) {             \
    T __r;                                                                                       \
    switch (__sem * 4 + __scope) { __CDPC_NV_ALL_SEMS(__CDPC_NV_RMW_AT, #OP, TY, C) }            \
    return __r;                                                                                  \
  }
__CDPC_NV_RMW(add, "s32", int, "r")
__CDPC_NV_RMW(add, "u32", unsigned int, "r")
__CDPC_NV_RMW(add, "u64", unsigned long long, "l")
__CDPC_NV_RMW(add, "f32", float, "f")
__CDPC_NV_RMW(add, "f64", double, "d")
__CDPC_NV_RMW(min, "s32", int, "r")
__CDPC_NV_RMW(min, "u32", unsigned int, "r")
__CDPC_NV_RMW(min, "s64", long long, "l")
__CDPC_NV_RMW(min, "u64", unsigned long long, "l")
__CDPC_NV_RMW(max, "s32", int, "r")
__CDPC_NV_RMW(max, "u32", unsigned int, "r")
__CDPC_NV_RMW(max, "s64", long long, "l")
__CDPC_NV_RMW(max, "u64", unsigned long long, "l")
__CDPC_NV_RMW(and, "b32", int, "r")
__CDPC_NV_RMW(and, "b32", unsigned int, "r")
__CDPC_NV_RMW(and, "b64", long long, "l")
__CDPC_NV_RMW(and, "b64", unsigned long long, "l")
__CDPC_NV_RMW(or, "b32", int, "r")
__CDPC_NV_RMW(or, "b32", unsigned int, "r")
__CDPC_NV_RMW(or, "b64", long long, "l")
__CDPC_NV_RMW(or, "b64", unsigned long long, "l")
__CDPC_NV_RMW(xor, "b32", int, "r")
__CDPC_NV_RMW(xor, "b32", unsigned int, "r")
__CDPC_NV_RMW(xor, "b64", long long, "l")
__CDPC_NV_RMW(xor, "b64", unsigned long long, "l")
__CDPC_NV_RMW(exch, "b32", unsigned int, "r")
__CDPC_NV_RMW(exch, "b64", unsigned long long, "l")

#define __CDPC_NV_EXCH128_AT(SEM, SCOPE, _)                                                      \
  asm volatile("{ .reg .b128 __cdpc_q0, __cdpc_q1; mov.b128 __cdpc_q1, {%2, %3}; atom.exch." SEM "." SCOPE \
               ".b128 __cdpc_q0,[%4],__cdpc_q1; mov.b128 {%0, %1}, __cdpc_q0; }"                 \
               : "=l"(__r.lo), "=l"(__r.hi) : "l"(__v.lo), "l"(__v.hi), __CDPC_NV_P(__p) : "memory");
__device__ __forceinline__ b128 rmw(op_exch, b128 *__p, b128 __v, int __sem, int __scope) {
  b128 __r;
  switch (__sem * 4 + __scope) { __CDPC_NV_FROM_SM90(__CDPC_NV_ALL_SEMS(__CDPC_NV_EXCH128_AT, )) }
  return __r;
}

/* Compare-and-swap: the old value. */
#define __CDPC_NV_CAS_AT(SEM, SCOPE, TY, C)                                                      \
  asm volatile("atom.cas." SEM "." SCOPE "." TY " %0,[%1],%2,%3;"                               \
               : "=" C(__r) : __CDPC_NV_P(__p), C(__e), C(__d) : "memory");
#define __CDPC_NV_CAS(TY, T, C)                                                                  \
  __device__ __forceinline__ T cas(T *__p, T __e, T __d, int __sem, int __scope) {               \
    T __r;                                                                                       \
    switch (__sem * 4 + __scope) { __CDPC_NV_ALL_SEMS(__CDPC_NV_CAS_AT, TY, C) }                 \
    return __r;                                                                                  \
  }
__CDPC_NV_CAS("b32", unsigned int, "r")
__CDPC_NV_CAS("b64", unsigned long long, "l")
#define __CDPC_NV_CAS128_AT(SEM, SCOPE, _)                                                       \
  asm volatile("{ .reg .b128 __cdpc_q0, __cdpc_q1, __cdpc_q2; mov.b128 __cdpc_q1, {%2, %3}; "    \
               "mov.b128 __cdpc_q2, {%4, %5}; atom.cas." SEM "." SCOPE                           \
               ".b128 __cdpc_q0,[%6],__cdpc_q1,__cdpc_q2; mov.b128 {%0, %1}, __cdpc_q0; }"      \
               : "=l"(__r.lo), "=l"(__r.hi)                                                      \
               : "l"(__e.lo), "l"(__e.hi), "l"(__d.lo), "l"(__d.hi), __CDPC_NV_P(__p) : "memory");
__device__ __forceinline__ b128 cas(b128 *__p, b128 __e, b128 __d, int __sem, int __scope) {
  b128 __r;
  switch (__sem * 4 + __scope) { __CDPC_NV_FROM_SM90(__CDPC_NV_ALL_SEMS(__CDPC_NV_CAS128_AT, )) }
  return __r;
}

/* Loads (relaxed or acquire) and stores (relaxed or release). A byte goes through a 32-bit
 * register, as nvcc's does. */
#define __CDPC_NV_LD_AT(SEM, SCOPE, TY, C, R)                                                    \
  asm volatile("ld." SEM "." SCOPE "." TY " %0, [%1];" : "=" C(__r) : __CDPC_NV_P(__p) : "memory");
#define __CDPC_NV_ST_AT(SEM, SCOPE, TY, C, R)                                                    \
  asm volatile("st." SEM "." SCOPE "." TY " [%0], %1;" ::__CDPC_NV_P(__p), C((R)__v) : "memory");
#define __CDPC_NV_LDST(TY, T, C, R)                                                              \
  __device__ __forceinline__ T load(T *__p, int __sem, int __scope) {                            \
    R __r;                                                                                       \
    switch (__sem * 4 + __scope) {                                                               \
      __CDPC_NV_SCOPES(0, "relaxed", __CDPC_NV_LD_AT, TY, C, R)                                  \
      __CDPC_NV_SCOPES(1, "acquire", __CDPC_NV_LD_AT, TY, C, R)                                  \
    }                                                                                            \
    return (T)__r;                                                                               \
  }                                                                                              \
  __device__ __forceinline__ void store(T *__p, T __v, int __sem, int __scope) {                 \
    switch (__sem * 4 + __scope) {                                                               \
      __CDPC_NV_SCOPES(0, "relaxed", __CDPC_NV_ST_AT, TY, C, R)                                  \
      __CDPC_NV_SCOPES(2, "release", __CDPC_NV_ST_AT, TY, C, R)                                  \
    }                                                                                            \
  }
__CDPC_NV_LDST("b8", unsigned char, "r", unsigned int)
__CDPC_NV_LDST("b16", unsigned short, "h", unsigned short)
__CDPC_NV_LDST("b32", unsigned int, "r", unsigned int)
__CDPC_NV_LDST("b64", unsigned long long, "l", unsigned long long)
#define __CDPC_NV_LD128_AT(SEM, SCOPE, _)                                                        \
  asm volatile("{ .reg .b128 __cdpc_q0; ld." SEM "." SCOPE ".b128 __cdpc_q0, [%2]; mov.b128 {%0, %1}, __cdpc_q0; }" \
               : "=l"(__r.lo), "=l"(__r.hi) : __CDPC_NV_P(__p) : "memory");
#define __CDPC_NV_ST128_AT(SEM, SCOPE, _)                                                        \
  asm volatile("{ .reg .b128 __cdpc_q0; mov.b128 __cdpc_q0, {%1, %2}; st." SEM "." SCOPE ".b128 [%0], __cdpc_q0; }" \
               ::__CDPC_NV_P(__p), "l"(__v.lo), "l"(__v.hi) : "memory");
__device__ __forceinline__ b128 load(b128 *__p, int __sem, int __scope) {
  b128 __r;
  switch (__sem * 4 + __scope) {
    __CDPC_NV_SCOPES(0, "relaxed", __CDPC_NV_LD128_AT, )
    __CDPC_NV_SCOPES(1, "acquire", __CDPC_NV_LD128_AT, )
  }
  return __r;
}
__device__ __forceinline__ void store(b128 *__p, b128 __v, int __sem, int __scope) {
  switch (__sem * 4 + __scope) {
    __CDPC_NV_SCOPES(0, "relaxed", __CDPC_NV_ST128_AT, )
    __CDPC_NV_SCOPES(2, "release", __CDPC_NV_ST128_AT, )
  }
}

/* Whether a compare-and-swap found what it expected (no memcmp: at -O0 that is a call of the
 * C library, which the device has not). */
__device__ __forceinline__ bool equal(unsigned int a, unsigned int b) { return a == b; }
__device__ __forceinline__ bool equal(unsigned long long a, unsigned long long b) { return a == b; }
__device__ __forceinline__ bool equal(b128 a, b128 b) { return a.lo == b.lo && a.hi == b.hi; }

/* `0 - v`, the operand nvcc adds for a subtraction, without signed overflow. */
__device__ __forceinline__ int negated(int v) { return (int)(0u - (unsigned int)v); }
__device__ __forceinline__ unsigned int negated(unsigned int v) { return 0u - v; }
__device__ __forceinline__ unsigned long long negated(unsigned long long v) { return 0ull - v; }
__device__ __forceinline__ float negated(float v) { return 0.0f - v; }
__device__ __forceinline__ double negated(double v) { return 0.0 - v; }

/* The catch-alls: what a call the checks refused reaches (it is never compiled to code). */
template <class Op, class T> __device__ __forceinline__ T rmw(Op, T *, T v, int, int) { return v; }
template <class T> __device__ __forceinline__ T cas(T *, T e, T, int, int) { return e; }
template <class T> __device__ __forceinline__ T load(T *p, int, int) { return *p; }
template <class T> __device__ __forceinline__ void store(T *, T, int, int) {}
template <class T> __device__ __forceinline__ bool equal(T, T) { return false; }
template <class T> __device__ __forceinline__ T negated(T v) { return v; }

template <class Op, class U>
__device__ __forceinline__ U fetch(Op op, U *p, U v, int order, int scope) {
  typedef typename arith<U>::type A;
  if (order == __NV_ATOMIC_SEQ_CST)
    fence(0, ptx_scope(scope));
  return __builtin_bit_cast(U, rmw(op, (A *)p, __builtin_bit_cast(A, v), rmw_sem(order), ptx_scope(scope)));
}
template <class U> __device__ __forceinline__ U minus(U v) {
  typedef typename arith<U>::type A;
  return __builtin_bit_cast(U, negated(__builtin_bit_cast(A, v)));
}
template <class U> __device__ __forceinline__ void load_bits(const void *p, U *ret, int order, int scope) {
  typedef typename bits<sizeof(U)>::type B;
  if (order == __NV_ATOMIC_SEQ_CST)
    fence(0, ptx_scope(scope));
  B r = load((B *)p, order == __NV_ATOMIC_RELAXED ? 0 : 1, ptx_scope(scope));
  __builtin_memcpy((void *)ret, &r, sizeof(U));
}
template <class U> __device__ __forceinline__ void store_bits(void *p, const U *val, int order, int scope) {
  typedef typename bits<sizeof(U)>::type B;
  if (order == __NV_ATOMIC_SEQ_CST)
    fence(0, ptx_scope(scope));
  B v;
  __builtin_memcpy(&v, (const void *)val, sizeof(U));
  store((B *)p, v, order == __NV_ATOMIC_RELEASE ? 2 : 0, ptx_scope(scope));
}
template <class U> __device__ __forceinline__ void exchange_bits(void *p, const U *val, U *ret, int order, int scope) {
  typedef typename bits<sizeof(U)>::type B;
  if (order == __NV_ATOMIC_SEQ_CST)
    fence(0, ptx_scope(scope));
  B v;
  __builtin_memcpy(&v, (const void *)val, sizeof(U));
  B r = rmw(op_exch(), (B *)p, v, rmw_sem(order), ptx_scope(scope));
  __builtin_memcpy((void *)ret, &r, sizeof(U));
}
template <class U>
__device__ __forceinline__ bool cas_bits(void *p, U *expected, const U *desired, int success, int failure, int scope) {
  typedef typename bits<sizeof(U)>::type B;
  if (success == __NV_ATOMIC_SEQ_CST || failure == __NV_ATOMIC_SEQ_CST)
    fence(0, ptx_scope(scope));
  B e, d;
  __builtin_memcpy(&e, (const void *)expected, sizeof(U));
  __builtin_memcpy(&d, (const void *)desired, sizeof(U));
  B r = cas((B *)p, e, d, cas_sem(success, failure), ptx_scope(scope));
  bool same = equal(r, e);
  __builtin_memcpy((void *)expected, &r, sizeof(U));
  return same;
}
} /* namespace __cdpc_nv_atomic */

/* What nvcc refuses, refused at the call with nvcc's message. T is the pointer's element type;
 * U the same without const and volatile. */
#define __CDPC_NV_IF(COND, MESSAGE) __attribute__((diagnose_if(COND, MESSAGE, "error")))
#define __CDPC_NV_K __cdpc_nv_atomic::kind<U>
#define __CDPC_NV_ORDER(O)                                                                       \
  __CDPC_NV_IF(!__builtin_constant_p(O), "atomic operation's memory order argument is not an integer literal") \
  __CDPC_NV_IF(__builtin_constant_p(O) && ((O) < 0 || (O) > 5), "invalid memory order value for atomic operations")
#define __CDPC_NV_SCOPE(S)                                                                       \
  __CDPC_NV_IF(!__builtin_constant_p(S), "atomic operation's scope argument is not an integer literal") \
  __CDPC_NV_IF(__builtin_constant_p(S) && ((S) < 0 || (S) > 4), "invalid thread scope value for atomic operations") \
  __attribute__((diagnose_if(__CDPC_NV_ARCH != 0 && __CDPC_NV_ARCH < 900 && (S) == __NV_THREAD_SCOPE_CLUSTER, \
                             "atomic operations' scope of cluster is supported on architecture sm_90 or above. " \
                             "Using device scope instead.",                                      \
                             "warning")))
#define __CDPC_NV_COMMON(WRITES)                                                                 \
  __CDPC_NV_IF(__CDPC_NV_ARCH != 0 && __CDPC_NV_ARCH < 700,                                      \
               "the __nv_atomic functions need sm_70 or newer (their memory orders and scopes are PTX's from sm_70)") \
  __CDPC_NV_IF((WRITES) && __is_const(T), "the first argument of an atomic operation that writes cannot point to const")
#define __CDPC_NV_NUMBER                                                                         \
  __CDPC_NV_IF(!__CDPC_NV_K::integral && !__CDPC_NV_K::floating,                                 \
               "first argument must be a pointer to integer, unscoped enum or float type")       \
  __CDPC_NV_IF((__CDPC_NV_K::integral || __CDPC_NV_K::floating) && __CDPC_NV_K::size != 4 && __CDPC_NV_K::size != 8, \
               "atomic operations and, or, xor, add, sub, min and max are valid only on objects of size 4, or 8 for sm_90 and below.")
#define __CDPC_NV_NO_ENUM                                                                        \
  __CDPC_NV_IF(__CDPC_NV_K::enumeration,                                                         \
               "atomic operations add, sub, min and max take no enumeration (nvcc: the argument is incompatible with the parameter of its underlying type)")
#define __CDPC_NV_ARITH                                                                          \
  __CDPC_NV_NUMBER                                                                               \
  __CDPC_NV_NO_ENUM                                                                              \
  __CDPC_NV_IF(__CDPC_NV_K::integral && __CDPC_NV_K::is_signed && __CDPC_NV_K::size == 8,        \
               "atomic operations add and sub are not valid on signed integer of size 8.")
#define __CDPC_NV_LOGICAL                                                                        \
  __CDPC_NV_NUMBER                                                                               \
  __CDPC_NV_IF(__CDPC_NV_K::floating, "For a logical atomic operation, the first argument cannot be any floating-point types.")
#define __CDPC_NV_MINMAX                                                                         \
  __CDPC_NV_NUMBER                                                                               \
  __CDPC_NV_NO_ENUM                                                                              \
  __CDPC_NV_IF(__CDPC_NV_K::floating, "atomic operations min and max are not supported on any floating-point types.")
#define __CDPC_NV_INTEGRAL                                                                       \
  __CDPC_NV_IF(!__is_integral(U), "non-generic nv atomic load, store, cas and exchange are valid only on integral types.")
#define __CDPC_NV_EXCHANGE_SIZE                                                                  \
  __CDPC_NV_IF(sizeof(U) != 4 && sizeof(U) != 8 && sizeof(U) != 16,                              \
               "atomic exchange is valid only on objects of size 4, 8 or 16 bytes.")             \
  __CDPC_NV_IF(sizeof(U) == 16 && __CDPC_NV_ARCH != 0 && __CDPC_NV_ARCH < 900,                   \
               "128-bit atomic exchange or compare-and-exchange is supported on architecture sm_90 or above.")
#define __CDPC_NV_LOAD_STORE_SIZE                                                                \
  __CDPC_NV_IF(sizeof(U) != 1 && sizeof(U) != 2 && sizeof(U) != 4 && sizeof(U) != 8 && sizeof(U) != 16, \
               "atomic load and store are valid only on objects of size 1, 2, 4, 8 or 16 bytes.")
#define __CDPC_NV_LOAD_ORDER(O)                                                                  \
  __CDPC_NV_IF((O) == __NV_ATOMIC_RELEASE || (O) == __NV_ATOMIC_ACQ_REL, "atomic load's memory order cannot be release or acq_rel.")
#define __CDPC_NV_STORE_ORDER(O)                                                                 \
  __CDPC_NV_IF((O) == __NV_ATOMIC_CONSUME || (O) == __NV_ATOMIC_ACQUIRE || (O) == __NV_ATOMIC_ACQ_REL, \
               "atomic store's memory order cannot be consume, acquire or acq_rel.")
#define __CDPC_NV_FAILURE_ORDER(F)                                                               \
  __CDPC_NV_IF((F) == __NV_ATOMIC_RELEASE || (F) == __NV_ATOMIC_ACQ_REL, "failure order cannot be release or acq_rel.")

/* U is never deduced: the value's type is the pointer's (an `int` literal for an
 * `unsigned long long *` converts, as nvcc converts it). */
#define __CDPC_NV_TEMPLATE template <class T, class U = typename __cdpc_nv_atomic::bare<T>::type>
#define __CDPC_NV_U typename __cdpc_nv_atomic::bare<T>::type
#define __CDPC_NV_SYSTEM = __NV_THREAD_SCOPE_SYSTEM
#define __CDPC_NV_FETCH(NAME, OP, CHECKS, VALUE)                                                 \
  __CDPC_NV_TEMPLATE                                                                             \
  __device__ __forceinline__ U __nv_atomic_fetch_##NAME(T *__ptr, __CDPC_NV_U __val, int __order, int __scope __CDPC_NV_SYSTEM) \
      __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_COMMON(true) CHECKS {          \
    return __cdpc_nv_atomic::fetch(__cdpc_nv_atomic::op_##OP(), (U *)__ptr, VALUE, __order, __scope); \
  }                                                                                              \
  __CDPC_NV_TEMPLATE                                                                             \
  __device__ __forceinline__ void __nv_atomic_##NAME(T *__ptr, __CDPC_NV_U __val, int __order, int __scope __CDPC_NV_SYSTEM) \
      __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_COMMON(true) CHECKS {          \
    (void)__cdpc_nv_atomic::fetch(__cdpc_nv_atomic::op_##OP(), (U *)__ptr, VALUE, __order, __scope); \
  }
__CDPC_NV_FETCH(add, add, __CDPC_NV_ARITH, __val)
__CDPC_NV_FETCH(sub, add, __CDPC_NV_ARITH, __cdpc_nv_atomic::minus(__val))
__CDPC_NV_FETCH(and, and, __CDPC_NV_LOGICAL, __val)
__CDPC_NV_FETCH(or, or, __CDPC_NV_LOGICAL, __val)
__CDPC_NV_FETCH(xor, xor, __CDPC_NV_LOGICAL, __val)
__CDPC_NV_FETCH(min, min, __CDPC_NV_MINMAX, __val)
__CDPC_NV_FETCH(max, max, __CDPC_NV_MINMAX, __val)

__CDPC_NV_TEMPLATE
__device__ __forceinline__ void __nv_atomic_load(T *__ptr, __CDPC_NV_U *__ret, int __order, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_COMMON(false) __CDPC_NV_LOAD_STORE_SIZE
        __CDPC_NV_LOAD_ORDER(__order) {
  __cdpc_nv_atomic::load_bits((const void *)__ptr, __ret, __order, __scope);
}
__CDPC_NV_TEMPLATE
__device__ __forceinline__ U __nv_atomic_load_n(T *__ptr, int __order, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_COMMON(false) __CDPC_NV_INTEGRAL
        __CDPC_NV_LOAD_STORE_SIZE __CDPC_NV_LOAD_ORDER(__order) {
  __CDPC_NV_U __ret;
  __cdpc_nv_atomic::load_bits((const void *)__ptr, &__ret, __order, __scope);
  return __ret;
}
__CDPC_NV_TEMPLATE
__device__ __forceinline__ void __nv_atomic_store(T *__ptr, __CDPC_NV_U *__val, int __order, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_COMMON(true) __CDPC_NV_LOAD_STORE_SIZE
        __CDPC_NV_STORE_ORDER(__order) {
  __cdpc_nv_atomic::store_bits((void *)__ptr, __val, __order, __scope);
}
__CDPC_NV_TEMPLATE
__device__ __forceinline__ void __nv_atomic_store_n(T *__ptr, __CDPC_NV_U __val, int __order, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_COMMON(true) __CDPC_NV_INTEGRAL
        __CDPC_NV_LOAD_STORE_SIZE __CDPC_NV_STORE_ORDER(__order) {
  __cdpc_nv_atomic::store_bits((void *)__ptr, &__val, __order, __scope);
}
__CDPC_NV_TEMPLATE
__device__ __forceinline__ void __nv_atomic_exchange(T *__ptr, __CDPC_NV_U *__val, __CDPC_NV_U *__ret, int __order, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_COMMON(true) __CDPC_NV_EXCHANGE_SIZE {
  __cdpc_nv_atomic::exchange_bits((void *)__ptr, __val, __ret, __order, __scope);
}
__CDPC_NV_TEMPLATE
__device__ __forceinline__ U __nv_atomic_exchange_n(T *__ptr, __CDPC_NV_U __val, int __order, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_COMMON(true) __CDPC_NV_INTEGRAL __CDPC_NV_EXCHANGE_SIZE {
  __CDPC_NV_U __ret;
  __cdpc_nv_atomic::exchange_bits((void *)__ptr, &__val, &__ret, __order, __scope);
  return __ret;
}
__CDPC_NV_TEMPLATE
__device__ __forceinline__ bool __nv_atomic_compare_exchange(T *__ptr, __CDPC_NV_U *__expected, __CDPC_NV_U *__desired, bool __weak, int __success,
                                                             int __failure, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__success) __CDPC_NV_ORDER(__failure) __CDPC_NV_FAILURE_ORDER(__failure) __CDPC_NV_SCOPE(__scope)
        __CDPC_NV_COMMON(true) __CDPC_NV_EXCHANGE_SIZE {
  (void)__weak;
  return __cdpc_nv_atomic::cas_bits((void *)__ptr, __expected, __desired, __success, __failure, __scope);
}
__CDPC_NV_TEMPLATE
__device__ __forceinline__ bool __nv_atomic_compare_exchange_n(T *__ptr, __CDPC_NV_U *__expected, __CDPC_NV_U __desired, bool __weak, int __success,
                                                               int __failure, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__success) __CDPC_NV_ORDER(__failure) __CDPC_NV_FAILURE_ORDER(__failure) __CDPC_NV_SCOPE(__scope)
        __CDPC_NV_COMMON(true) __CDPC_NV_INTEGRAL __CDPC_NV_EXCHANGE_SIZE {
  (void)__weak;
  return __cdpc_nv_atomic::cas_bits((void *)__ptr, __expected, &__desired, __success, __failure, __scope);
}
__device__ __forceinline__ void __nv_atomic_thread_fence(int __order, int __scope __CDPC_NV_SYSTEM)
    __CDPC_NV_ORDER(__order) __CDPC_NV_SCOPE(__scope) __CDPC_NV_IF(__order == __NV_ATOMIC_RELAXED, "fence's memory order cannot be relaxed.")
        __CDPC_NV_IF(__CDPC_NV_ARCH != 0 && __CDPC_NV_ARCH < 700,
                     "the __nv_atomic functions need sm_70 or newer (their memory orders and scopes are PTX's from sm_70)") {
  /* fence.acquire and fence.release from sm_90, fence.acq_rel below it, as nvcc writes them. */
  __cdpc_nv_atomic::fence(__order == __NV_ATOMIC_SEQ_CST   ? 0
                          : __order == __NV_ATOMIC_ACQ_REL ? 3
                          : __CDPC_NV_ARCH < 900           ? 3
                          : __order == __NV_ATOMIC_RELEASE ? 2
                                                           : 1,
                          __cdpc_nv_atomic::ptx_scope(__scope));
}

#undef __CDPC_NV_TEMPLATE
#undef __CDPC_NV_U
#undef __CDPC_NV_SYSTEM
#undef __CDPC_NV_FETCH
#undef __CDPC_NV_IF
#undef __CDPC_NV_K
#undef __CDPC_NV_ORDER
#undef __CDPC_NV_SCOPE
#undef __CDPC_NV_COMMON
#undef __CDPC_NV_NUMBER
#undef __CDPC_NV_ARITH
#undef __CDPC_NV_NO_ENUM
#undef __CDPC_NV_LOGICAL
#undef __CDPC_NV_MINMAX
#undef __CDPC_NV_INTEGRAL
#undef __CDPC_NV_EXCHANGE_SIZE
#undef __CDPC_NV_LOAD_STORE_SIZE
#undef __CDPC_NV_LOAD_ORDER
#undef __CDPC_NV_STORE_ORDER
#undef __CDPC_NV_FAILURE_ORDER
#undef __CDPC_NV_RMW
#undef __CDPC_NV_RMW_AT
#undef __CDPC_NV_EXCH128_AT
#undef __CDPC_NV_CAS
#undef __CDPC_NV_CAS_AT
#undef __CDPC_NV_CAS128_AT
#undef __CDPC_NV_LDST
#undef __CDPC_NV_LD_AT
#undef __CDPC_NV_ST_AT
#undef __CDPC_NV_LD128_AT
#undef __CDPC_NV_ST128_AT
#undef __CDPC_NV_FENCE_AT
#undef __CDPC_NV_ALL_SEMS
#undef __CDPC_NV_SCOPES
#undef __CDPC_NV_FROM_SM90
#undef __CDPC_NV_P
#undef __CDPC_NV_ARCH
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__NV_DISABLE_128_ATOMICS) && \
    !defined(__CDPC_U128_ATOMICS__) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900)
#define __CDPC_U128_ATOMICS__
namespace __cdpc_u128_atomic {
template <bool B, class T> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
/* nvcc's condition on the type (sm_90_rt.h, `__NV_ATOMIC_RET_TYPE`). */
template <class T>
struct of : enable_if<sizeof(T) == 16 && __alignof(T) >= 16 && __is_trivially_copyable(T), T> {};
/* Section 6's compare-and-swap and exchange of 16 bytes, relaxed, in nvcc's `scope`. */
template <class T> __device__ __forceinline__ T cas(T *__p, T __e, T __d, int __scope) {
  __cdpc_nv_atomic::cas_bits(__p, &__e, &__d, __NV_ATOMIC_RELAXED, __NV_ATOMIC_RELAXED, __scope);
  return __e;
}
template <class T> __device__ __forceinline__ T exch(T *__p, T __v, int __scope) {
  T __r = __v;
  __cdpc_nv_atomic::exchange_bits(__p, &__v, &__r, __NV_ATOMIC_RELAXED, __scope);
  return __r;
}
} // namespace __cdpc_u128_atomic
template <typename _T>
static __device__ __inline__ typename __cdpc_u128_atomic::of<_T>::type atomicCAS(_T *__address, _T __compare, _T __val) {
  return __cdpc_u128_atomic::cas(__address, __compare, __val, __NV_THREAD_SCOPE_DEVICE);
}
template <typename _T>
static __device__ __inline__ typename __cdpc_u128_atomic::of<_T>::type atomicCAS_block(_T *__address, _T __compare, _T __val) {
  return __cdpc_u128_atomic::cas(__address, __compare, __val, __NV_THREAD_SCOPE_BLOCK);
}
template <typename _T>
static __device__ __inline__ typename __cdpc_u128_atomic::of<_T>::type atomicCAS_system(_T *__address, _T __compare, _T __val) {
  return __cdpc_u128_atomic::cas(__address, __compare, __val, __NV_THREAD_SCOPE_SYSTEM);
}
template <typename _T>
static __device__ __inline__ typename __cdpc_u128_atomic::of<_T>::type atomicExch(_T *__address, _T __val) {
  return __cdpc_u128_atomic::exch(__address, __val, __NV_THREAD_SCOPE_DEVICE);
}
template <typename _T>
static __device__ __inline__ typename __cdpc_u128_atomic::of<_T>::type atomicExch_block(_T *__address, _T __val) {
  return __cdpc_u128_atomic::exch(__address, __val, __NV_THREAD_SCOPE_BLOCK);
}
template <typename _T>
static __device__ __inline__ typename __cdpc_u128_atomic::of<_T>::type atomicExch_system(_T *__address, _T __val) {
  return __cdpc_u128_atomic::exch(__address, __val, __NV_THREAD_SCOPE_SYSTEM);
}
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(_CG_CLUSTER_INTRINSICS_AVAILABLE)
#define _CG_CLUSTER_INTRINSICS_AVAILABLE
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_CLUSTER_DIMS__)
#define __CDPC_CLUSTER_DIMS__
#undef __cluster_dims__
#undef __block_size__
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define __cluster_dims__(...) _Pragma("GCC error \"__cluster_dims__ is not supported for this GPU architecture\"")
#define __block_size__(...) _Pragma("GCC error \"__block_size__ is not supported for this GPU architecture\"")
#else
#define __cluster_dims__(...) __attribute__((annotate("cdpc.cluster_dims", __VA_ARGS__)))
#define __CDPC_UNPAREN(...) __VA_ARGS__
#define __CDPC_BLOCK_SIZE_1(b) __attribute__((annotate("cdpc.block_size", __CDPC_UNPAREN b)))
#define __CDPC_BLOCK_SIZE_2(b, c)                                                                \
  __CDPC_BLOCK_SIZE_1(b) __attribute__((annotate("cdpc.block_cluster", __CDPC_UNPAREN c)))
#define __CDPC_BLOCK_SIZE_PICK(_1, _2, NAME, ...) NAME
#define __block_size__(...) __CDPC_BLOCK_SIZE_PICK(__VA_ARGS__, __CDPC_BLOCK_SIZE_2, __CDPC_BLOCK_SIZE_1, )(__VA_ARGS__)
#endif
#undef __maxnreg__
#define __maxnreg__(n) __attribute__((annotate("cdpc.maxnreg", n)))
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_HINTS__)
#define __CDPC_HINTS__
#undef __inline_hint__
#define __inline_hint__
#undef __nv_pure__
#define __nv_pure__
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_NV_BUILTINS__)
#define __CDPC_NV_BUILTINS__
#if __SIZEOF_POINTER__ == 8
#define __CDPC_NV_PTR "l"
#define __CDPC_NV_PTR_TY ".u64"
#else
#define __CDPC_NV_PTR "r"
#define __CDPC_NV_PTR_TY ".u32"
#endif
#define __CDPC_NV_DP(NAME, OP, T)                                                                \
  extern "C" __device__ __forceinline__ T NAME(T __a, T __b, T __c) {                            \
    T __r;                                                                                       \
    asm(OP " %0, %1, %2, %3;" : "=r"(__r) : "r"(__a), "r"(__b), "r"(__c));                        \
    return __r;                                                                                  \
  }
__CDPC_NV_DP(__nv_idp4a_s_s_impl, "dp4a.s32.s32", int)
__CDPC_NV_DP(__nv_idp4a_u_u_impl, "dp4a.u32.u32", unsigned int)
__CDPC_NV_DP(__nv_idp2a_lo_s_s_impl, "dp2a.lo.s32.s32", int)
__CDPC_NV_DP(__nv_idp2a_lo_u_u_impl, "dp2a.lo.u32.u32", unsigned int)
__CDPC_NV_DP(__nv_idp2a_hi_s_s_impl, "dp2a.hi.s32.s32", int)
__CDPC_NV_DP(__nv_idp2a_hi_u_u_impl, "dp2a.hi.u32.u32", unsigned int)
#undef __CDPC_NV_DP
extern "C" __device__ __forceinline__ unsigned short __nv_bswap16_impl(unsigned short __x) { return __builtin_bswap16(__x); }
extern "C" __device__ __forceinline__ unsigned int __nv_bswap32_impl(unsigned int __x) { return __builtin_bswap32(__x); }
extern "C" __device__ __forceinline__ unsigned long long __nv_bswap64_impl(unsigned long long __x) { return __builtin_bswap64(__x); }
extern "C" __device__ __forceinline__ unsigned __nv_isGridConstant_impl(const void *__p) {
  unsigned __r;
  asm("{ .reg .pred __cdpc_p; isspacep.param __cdpc_p, %1; selp.u32 %0, 1, 0, __cdpc_p; }" : "=r"(__r) : __CDPC_NV_PTR(__p));
  return __r;
}
extern "C" __device__ __forceinline__ size_t __nv_cvta_generic_to_param_impl(const void *__p) {
  size_t __r;
  asm("cvta.to.param" __CDPC_NV_PTR_TY " %0, %1;" : "=" __CDPC_NV_PTR(__r) : __CDPC_NV_PTR(__p));
  return __r;
}
extern "C" __device__ __forceinline__ void *__nv_cvta_param_to_generic_impl(size_t __raw) {
  void *__r;
  asm("cvta.param" __CDPC_NV_PTR_TY " %0, %1;" : "=" __CDPC_NV_PTR(__r) : __CDPC_NV_PTR(__raw));
  return __r;
}
static __inline__ __attribute__((always_inline)) __attribute__((device)) double nan(const char *__tagp) {
  return __nv_nan((const signed char *)__tagp);
}
static __inline__ __attribute__((always_inline)) __attribute__((device)) float nanf(const char *__tagp) {
  return __nv_nanf((const signed char *)__tagp);
}
extern "C" __device__ void *__cuda_syscall_aligned_malloc(size_t, size_t);
extern "C" inline __device__ void *__nv_aligned_device_malloc(size_t __size, size_t __align) {
  return __cuda_syscall_aligned_malloc(__size, __align);
}
#undef __CDPC_NV_PTR
#undef __CDPC_NV_PTR_TY
#endif

/* The command line's macros again. */
#ifdef __CDPC_HIDE
#include __CDPC_HIDE
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__NVCC__) && !defined(__CDPC_NVCC_IDENTITY__) && \
    defined(CUDA_VERSION) && CUDA_VERSION >= 13000 && CUDA_VERSION < 14000
#define __CDPC_NVCC_IDENTITY__
#if __has_include(<nv/target>) && __has_include(<cuda/std/__cccl/compiler.h>)
#include <nv/target>
#include <cuda/std/__cccl/compiler.h>
#define __NVCC__ 1
#endif
#ifndef __CUDACC_VER_MAJOR__
#define __CUDACC_VER_MAJOR__ 13
#if CUDA_VERSION % 1000 / 10 == 0
#define __CUDACC_VER_MINOR__ 0
#elif CUDA_VERSION % 1000 / 10 == 1
#define __CUDACC_VER_MINOR__ 1
#elif CUDA_VERSION % 1000 / 10 == 2
#define __CUDACC_VER_MINOR__ 2
#elif CUDA_VERSION % 1000 / 10 == 3
#define __CUDACC_VER_MINOR__ 3
#elif CUDA_VERSION % 1000 / 10 == 4
#define __CUDACC_VER_MINOR__ 4
#elif CUDA_VERSION % 1000 / 10 == 5
#define __CUDACC_VER_MINOR__ 5
#elif CUDA_VERSION % 1000 / 10 == 6
#define __CUDACC_VER_MINOR__ 6
#elif CUDA_VERSION % 1000 / 10 == 7
#define __CUDACC_VER_MINOR__ 7
#elif CUDA_VERSION % 1000 / 10 == 8
#define __CUDACC_VER_MINOR__ 8
#else
#define __CUDACC_VER_MINOR__ 9
#endif
#endif
#endif

/* The command line's macros, hidden from cdpc's declarations below (clang/hidden_macros.rs). */
#ifdef __CDPC_HIDE
#include __CDPC_HIDE
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_SHARED_STORAGE__)
#define __CDPC_SHARED_STORAGE__
template <class T> union __cdpc_shared_storage {
  T value;
  __host__ __device__ __cdpc_shared_storage() {}
  __host__ __device__ ~__cdpc_shared_storage() {}
};
template <class S> struct __cdpc_shared_of;
template <class T> struct __cdpc_shared_of<__cdpc_shared_storage<T>> {
  typedef T type;
};
template <class S, decltype(sizeof(0)) N> struct __cdpc_shared_of<S[N]> {
  typedef typename __cdpc_shared_of<S>::type type[N];
};
template <class S> __host__ __device__ inline typename __cdpc_shared_of<S>::type &__cdpc_shared_ref(S &storage) {
  return reinterpret_cast<typename __cdpc_shared_of<S>::type &>(storage);
}
#endif

#if defined(__cplusplus) && defined(__CUDA__) && !defined(__CDPC_VLA_INIT__)
#define __CDPC_VLA_INIT__
struct __cdpc_vla_empty {};
template <class E> struct __cdpc_vla_filler {
  E *a;
  decltype(sizeof(0)) n;
  __host__ __device__ void fill(decltype(sizeof(0)) from) const {
    for (decltype(sizeof(0)) i = from; i < n; ++i)
      a[i] = E();
  }
  __host__ __device__ void operator()(__cdpc_vla_empty) const { fill(0); }
  template <decltype(sizeof(0)) N> __host__ __device__ void operator()(const E (&init)[N]) const {
    decltype(sizeof(0)) given = N < n ? N : n;
    for (decltype(sizeof(0)) i = 0; i < given; ++i)
      a[i] = init[i];
    fill(given);
  }
};
template <class T> __host__ __device__ inline __cdpc_vla_filler<T> __cdpc_vla_init(T *a, decltype(sizeof(0)) n) {
  return {a, n};
}
template <class T> __host__ __device__ inline __cdpc_vla_filler<T> __cdpc_vla_init(const T *a, decltype(sizeof(0)) n) {
  return {const_cast<T *>(a), n};
}
#endif

/* The include guards of the headers Clang's wrapper includes and nvcc's compilation does not,
 * read under cdpc's guards (nvcc_text.rs, rule 8): undefined, as with nvcc, until the program
 * includes one of them itself. */
#ifdef __CDPC_GUARD___cuda_cuda_h__
#undef __cuda_cuda_h__
#endif
#ifdef __CDPC_GUARD_CURAND_H_
#undef CURAND_H_
#endif
#ifdef __CDPC_GUARD_CURAND_MTGP32_H
#undef CURAND_MTGP32_H
#endif
#ifdef __CDPC_GUARD_CURAND_MTGP32_KERNEL_H
#undef CURAND_MTGP32_KERNEL_H
#endif

/* The command line's macros again. */
#ifdef __CDPC_HIDE
#include __CDPC_HIDE
#endif
