; Clang 22's host IR (-O3, --cuda-host-only -fgpu-rdc, cdpc's additions header) of:
;   __managed__ int counter;
;   __device__ __managed__ float scale[4] = {1, 2, 3, 4};
;   namespace ns { static __managed__ int hidden = 7; }
;   extern __managed__ int elsewhere;
;   __global__ void child(int *p) { atomicAdd(&counter, 1); p[threadIdx.x] = scale[threadIdx.x % 4] + ns::hidden + elsewhere; }
;   int run(int *d, int n) {
;       counter = 0;
;       scale[1] = 5.0f;
;       child<<<1, 32>>>(d);
;       cudaDeviceSynchronize();
;       int sum = 0;
;       for (int i = 0; i < n; i++) sum += scale[i % 4];
;       return counter + ns::hidden + elsewhere + sum;
;   }

source_filename = "managed.cu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%struct.dim3 = type { i32, i32, i32 }

@counter = dso_local global i32 undef, section "cdpc.managed", align 4
@scale = dso_local global [4 x float] undef, section "cdpc.managed", align 16
@_ZN2nsL6hiddenE = internal global i32 undef, section "cdpc.managed", align 4
@elsewhere = external global i32, section "cdpc.managed", align 4
@0 = private unnamed_addr constant [11 x i8] c"_Z5childPi\00", align 1
@1 = private unnamed_addr constant [8 x i8] c"counter\00", align 1
@2 = private unnamed_addr constant [6 x i8] c"scale\00", align 1
@3 = private unnamed_addr constant [42 x i8] c"_ZN2nsL6hiddenE__static__7253b84c95433ed9\00", align 1
@4 = private constant [1 x i8] c"x", section "__nv_relfatbin", align 8
@__cuda_fatbin_wrapper = internal constant { i32, i32, ptr, ptr } { i32 1180844977, i32 1, ptr @4, ptr null }, section ".nvFatBinSegment", align 8
@5 = private constant [22 x i8] c"__nv_78244ae0414e51e7\00", section "__nv_module_id", align 32
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @__cuda_module_ctor, ptr null }]
@__clang_gpu_used_external = internal global [1 x ptr] [ptr @elsewhere]
@llvm.compiler.used = appending global [1 x ptr] [ptr @__clang_gpu_used_external], section "llvm.metadata"

@__fatbinwrap__nv_78244ae0414e51e7 = alias { i32, i32, ptr, ptr }, ptr @__cuda_fatbin_wrapper

define dso_local void @_Z20__device_stub__childPi(ptr noundef %0) #0 {
  %2 = alloca ptr, align 8
  %3 = alloca %struct.dim3, align 8
  %4 = alloca %struct.dim3, align 8
  %5 = alloca i64, align 8
  %6 = alloca ptr, align 8
  store ptr %0, ptr %2, align 8
  %7 = alloca ptr, align 16
  store ptr %2, ptr %7, align 16
  %8 = call i32 @__cudaPopCallConfiguration(ptr nonnull %3, ptr nonnull %4, ptr nonnull %5, ptr nonnull %6)
  %9 = load i64, ptr %5, align 8
  %10 = load ptr, ptr %6, align 8
  %11 = load i64, ptr %3, align 8
  %12 = getelementptr inbounds nuw i8, ptr %3, i64 8
  %13 = load i32, ptr %12, align 8
  %14 = load i64, ptr %4, align 8
  %15 = getelementptr inbounds nuw i8, ptr %4, i64 8
  %16 = load i32, ptr %15, align 8
  %17 = call noundef i32 @cudaLaunchKernel(ptr noundef nonnull @_Z20__device_stub__childPi, i64 %11, i32 %13, i64 %14, i32 %16, ptr noundef nonnull %7, i64 noundef %9, ptr noundef %10)
  ret void
}

declare i32 @__cudaPopCallConfiguration(ptr, ptr, ptr, ptr) local_unnamed_addr

declare i32 @cudaLaunchKernel(ptr, i64, i32, i64, i32, ptr, i64, ptr) local_unnamed_addr

define dso_local noundef i32 @_Z3runPii(ptr noundef %0, i32 noundef %1) local_unnamed_addr #1 {
  %3 = alloca ptr, align 8
  %4 = alloca %struct.dim3, align 8
  %5 = alloca %struct.dim3, align 8
  %6 = alloca i64, align 8
  %7 = alloca ptr, align 8
  %8 = alloca ptr, align 16
  store i32 0, ptr @counter, align 4
  store float 5.000000e+00, ptr getelementptr inbounds nuw (i8, ptr @scale, i64 4), align 4
  %9 = tail call i32 @__cudaPushCallConfiguration(i64 4294967297, i32 1, i64 4294967328, i32 1, i64 noundef 0, ptr noundef null)
  %10 = icmp eq i32 %9, 0
  br i1 %10, label %11, label %22

11:                                               ; preds = %2
  call void @llvm.lifetime.start.p0(ptr nonnull %3)
  call void @llvm.lifetime.start.p0(ptr nonnull %4)
  call void @llvm.lifetime.start.p0(ptr nonnull %5)
  call void @llvm.lifetime.start.p0(ptr nonnull %6)
  call void @llvm.lifetime.start.p0(ptr nonnull %7)
  call void @llvm.lifetime.start.p0(ptr nonnull %8)
  store ptr %0, ptr %3, align 8
  store ptr %3, ptr %8, align 16
  %12 = call i32 @__cudaPopCallConfiguration(ptr nonnull %4, ptr nonnull %5, ptr nonnull %6, ptr nonnull %7)
  %13 = load i64, ptr %6, align 8
  %14 = load ptr, ptr %7, align 8
  %15 = load i64, ptr %4, align 8
  %16 = getelementptr inbounds nuw i8, ptr %4, i64 8
  %17 = load i32, ptr %16, align 8
  %18 = load i64, ptr %5, align 8
  %19 = getelementptr inbounds nuw i8, ptr %5, i64 8
  %20 = load i32, ptr %19, align 8
  %21 = call noundef i32 @cudaLaunchKernel(ptr noundef nonnull @_Z20__device_stub__childPi, i64 %15, i32 %17, i64 %18, i32 %20, ptr noundef nonnull %8, i64 noundef %13, ptr noundef %14)
  call void @llvm.lifetime.end.p0(ptr nonnull %3)
  call void @llvm.lifetime.end.p0(ptr nonnull %4)
  call void @llvm.lifetime.end.p0(ptr nonnull %5)
  call void @llvm.lifetime.end.p0(ptr nonnull %6)
  call void @llvm.lifetime.end.p0(ptr nonnull %7)
  call void @llvm.lifetime.end.p0(ptr nonnull %8)
  br label %22

22:                                               ; preds = %11, %2
  %23 = call i32 @cudaDeviceSynchronize()
  %24 = icmp sgt i32 %1, 0
  br i1 %24, label %25, label %43

25:                                               ; preds = %22
  %26 = and i32 %1, 1
  %27 = icmp eq i32 %1, 1
  br i1 %27, label %32, label %28

28:                                               ; preds = %25
  %29 = and i32 %1, 2147483646
  br label %51

30:                                               ; preds = %51
  %31 = icmp eq i32 %26, 0
  br i1 %31, label %43, label %32

32:                                               ; preds = %30, %25
  %33 = phi i32 [ 0, %25 ], [ %70, %30 ]
  %34 = phi i32 [ 0, %25 ], [ %69, %30 ]
  %35 = icmp ne i32 %26, 0
  call void @llvm.assume(i1 %35)
  %36 = and i32 %33, 3
  %37 = zext nneg i32 %36 to i64
  %38 = getelementptr inbounds nuw float, ptr @scale, i64 %37
  %39 = load float, ptr %38, align 4
  %40 = sitofp i32 %34 to float
  %41 = fadd float %39, %40
  %42 = fptosi float %41 to i32
  br label %43

43:                                               ; preds = %32, %30, %22
  %44 = phi i32 [ 0, %22 ], [ %69, %30 ], [ %42, %32 ]
  %45 = load i32, ptr @counter, align 4
  %46 = load i32, ptr @_ZN2nsL6hiddenE, align 4
  %47 = load i32, ptr @elsewhere, align 4
  %48 = add i32 %45, %44
  %49 = add i32 %48, %46
  %50 = add i32 %49, %47
  ret i32 %50

51:                                               ; preds = %51, %28
  %52 = phi i32 [ 0, %28 ], [ %70, %51 ]
  %53 = phi i32 [ 0, %28 ], [ %69, %51 ]
  %54 = phi i32 [ 0, %28 ], [ %71, %51 ]
  %55 = and i32 %52, 2
  %56 = zext nneg i32 %55 to i64
  %57 = getelementptr inbounds nuw float, ptr @scale, i64 %56
  %58 = load float, ptr %57, align 8
  %59 = sitofp i32 %53 to float
  %60 = fadd float %58, %59
  %61 = fptosi float %60 to i32
  %62 = and i32 %52, 2
  %63 = zext nneg i32 %62 to i64
  %64 = getelementptr inbounds nuw float, ptr @scale, i64 %63
  %65 = getelementptr inbounds nuw i8, ptr %64, i64 4
  %66 = load float, ptr %65, align 4
  %67 = sitofp i32 %61 to float
  %68 = fadd float %66, %67
  %69 = fptosi float %68 to i32
  %70 = add nuw nsw i32 %52, 2
  %71 = add i32 %54, 2
  %72 = icmp eq i32 %71, %29
  br i1 %72, label %30, label %51
}

declare i32 @__cudaPushCallConfiguration(i64, i32, i64, i32, i64 noundef, ptr noundef) local_unnamed_addr #2

declare i32 @cudaDeviceSynchronize() local_unnamed_addr #2

define internal void @__cuda_register_globals(ptr %0) {
  %2 = tail call i32 @__cudaRegisterFunction(ptr %0, ptr nonnull @_Z20__device_stub__childPi, ptr nonnull @0, ptr nonnull @0, i32 -1, ptr null, ptr null, ptr null, ptr null, ptr null)
  tail call void @__cudaRegisterVar(ptr %0, ptr nonnull @counter, ptr nonnull @1, ptr nonnull @1, i32 0, i64 4, i32 0, i32 0)
  tail call void @__cudaRegisterVar(ptr %0, ptr nonnull @scale, ptr nonnull @2, ptr nonnull @2, i32 0, i64 16, i32 0, i32 0)
  tail call void @__cudaRegisterVar(ptr %0, ptr nonnull @_ZN2nsL6hiddenE, ptr nonnull @3, ptr nonnull @3, i32 0, i64 4, i32 0, i32 0)
  ret void
}

declare i32 @__cudaRegisterFunction(ptr, ptr, ptr, ptr, i32, ptr, ptr, ptr, ptr, ptr) local_unnamed_addr

declare void @__cudaRegisterVar(ptr, ptr, ptr, ptr, i32, i64, i32, i32) local_unnamed_addr

define internal void @__cuda_module_ctor() {
  tail call void @__cudaRegisterLinkedBinary__nv_78244ae0414e51e7(ptr nonnull @__cuda_register_globals, ptr nonnull @__cuda_fatbin_wrapper, ptr nonnull @5, ptr nonnull @dummy)
  ret void
}

declare void @__cudaRegisterLinkedBinary__nv_78244ae0414e51e7(ptr, ptr, ptr, ptr) local_unnamed_addr

define internal void @dummy(ptr readnone captures(none) %0) #3 {
  ret void
}

declare void @llvm.lifetime.start.p0(ptr captures(none)) #4

declare void @llvm.lifetime.end.p0(ptr captures(none)) #4

declare void @llvm.assume(i1 noundef) #5

attributes #0 = { mustprogress norecurse uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" "uniform-work-group-size"="true" }
attributes #1 = { mustprogress uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #2 = { "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #3 = { mustprogress nofree norecurse nosync nounwind willreturn memory(none) }
attributes #4 = { nocallback nofree nosync nounwind willreturn memory(argmem: readwrite) }
attributes #5 = { nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write) }

