; Clang's device IR for kernels with cdpc's qualifier annotations (additions.h section 8:
; __cluster_dims__, __maxnreg__, __block_size__) and an abstract class's vtable with a pure
; slot, the shapes pipeline::qualifiers and pipeline::cxx_abi read.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
@.cd = private unnamed_addr constant [18 x i8] c"cdpc.cluster_dims\00", section "llvm.metadata"
@.mr = private unnamed_addr constant [13 x i8] c"cdpc.maxnreg\00", section "llvm.metadata"
@.bs = private unnamed_addr constant [16 x i8] c"cdpc.block_size\00", section "llvm.metadata"
@.bc = private unnamed_addr constant [19 x i8] c"cdpc.block_cluster\00", section "llvm.metadata"
@.file = private unnamed_addr constant [5 x i8] c"k.cu\00", section "llvm.metadata"
@.two = private unnamed_addr constant { i32 } { i32 2 }, section "llvm.metadata"
@.forty = private unnamed_addr constant { i32 } { i32 40 }, section "llvm.metadata"
@.block = private unnamed_addr constant { i32, i32, i32 } { i32 64, i32 1, i32 1 }, section "llvm.metadata"
@.pair = private unnamed_addr constant { i32, i32, i32 } { i32 2, i32 1, i32 1 }, section "llvm.metadata"
@llvm.global.annotations = appending global [5 x { ptr, ptr, ptr, i32, ptr }] [
  { ptr, ptr, ptr, i32, ptr } { ptr @clustered, ptr @.cd, ptr @.file, i32 3, ptr @.two },
  { ptr, ptr, ptr, i32, ptr } { ptr @bounded, ptr @.mr, ptr @.file, i32 4, ptr @.forty },
  { ptr, ptr, ptr, i32, ptr } { ptr @blocks, ptr @.bs, ptr @.file, i32 5, ptr @.block },
  { ptr, ptr, ptr, i32, ptr } { ptr @blocks, ptr @.bc, ptr @.file, i32 5, ptr @.pair },
  { ptr, ptr, ptr, i32, ptr } { ptr @launched, ptr @.mr, ptr @.file, i32 6, ptr @.forty }], section "llvm.metadata"
@_ZTV4Base = linkonce_odr unnamed_addr constant { [4 x ptr] } { [4 x ptr] [ptr null, ptr null, ptr @__cxa_pure_virtual, ptr @_ZN4Base1gEv] }
declare void @__cxa_pure_virtual()
define linkonce_odr void @_ZN4Base1gEv(ptr %this) { ret void }
define ptx_kernel void @clustered(ptr %p) #0 { store i32 1, ptr %p
  ret void }
define ptx_kernel void @bounded(ptr %p) #0 { store ptr @_ZTV4Base, ptr %p
  ret void }
define ptx_kernel void @blocks(ptr %p) #1 { store i32 3, ptr %p
  ret void }
declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)
define ptx_kernel void @launched(ptr %p) #0 {
entry:
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 8)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %r = call i32 @cudaLaunchDevice(ptr @clustered, ptr %buf, { i32, i32, i32 } { i32 2, i32 1, i32 1 }, { i32, i32, i32 } { i32 32, i32 1, i32 1 }, i32 0, ptr null)
  br label %done
done:
  ret void
}
attributes #0 = { "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #1 = { "nvvm.maxntid"="128" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
