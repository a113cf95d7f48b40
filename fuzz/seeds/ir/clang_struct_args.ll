; ModuleID = 'structs.cu'
source_filename = "structs.cu"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%struct.Graph = type { i32, i32, ptr, ptr, ptr, ptr, ptr, ptr, ptr, i32, ptr, ptr, ptr, ptr, ptr, ptr, i64 }
%struct.Space = type { i32, ptr, ptr, i64 }
%struct.Kilo = type { ptr, [127 x i64] }
%struct.dim3 = type { i32, i32, i32 }

; Function Attrs: mustprogress nofree noinline norecurse nounwind willreturn memory(read, argmem: readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none)
define dso_local ptx_kernel void @child136(ptr noundef readonly byval(%struct.Graph) align 8 captures(none) %0, ptr noundef readonly byval(%struct.Space) align 8 captures(none) %1, ptr noundef captures(none) %2) #0 {
  %4 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %5 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %6 = mul i32 %4, %5
  %7 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %8 = add i32 %6, %7
  %9 = load i32, ptr %0, align 8, !tbaa !8
  %10 = icmp ult i32 %8, %9
  br i1 %10, label %11, label %39

11:                                               ; preds = %3
  %12 = getelementptr inbounds nuw i8, ptr %0, i64 8
  %13 = load ptr, ptr %12, align 8, !tbaa !13
  %14 = zext i32 %8 to i64
  %15 = getelementptr inbounds nuw i32, ptr %13, i64 %14
  %16 = load i32, ptr %15, align 4, !tbaa !4
  %17 = getelementptr inbounds nuw i8, ptr %0, i64 4
  %18 = load i32, ptr %17, align 4, !tbaa !14
  %19 = add i32 %18, %16
  %20 = getelementptr inbounds nuw i8, ptr %1, i64 8
  %21 = load ptr, ptr %20, align 8, !tbaa !15
  %22 = getelementptr inbounds nuw i32, ptr %21, i64 %14
  %23 = load i32, ptr %22, align 4, !tbaa !4
  %24 = add i32 %19, %23
  %25 = getelementptr inbounds nuw i8, ptr %1, i64 24
  %26 = load i64, ptr %25, align 8, !tbaa !17
  %27 = trunc i64 %26 to i32
  %28 = add i32 %24, %27
  %29 = getelementptr inbounds nuw i8, ptr %0, i64 120
  %30 = load i64, ptr %29, align 8, !tbaa !18
  %31 = trunc i64 %30 to i32
  %32 = add i32 %28, %31
  %33 = getelementptr inbounds nuw i8, ptr %0, i64 112
  %34 = load ptr, ptr %33, align 8, !tbaa !19
  %35 = getelementptr inbounds nuw i32, ptr %34, i64 %14
  %36 = load i32, ptr %35, align 4, !tbaa !4
  %37 = add i32 %32, %36
  %38 = atomicrmw add ptr %2, i32 %37 seq_cst, align 4
  br label %39

39:                                               ; preds = %11, %3
  ret void
}

; Function Attrs: mustprogress nofree noinline norecurse nounwind willreturn memory(readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none)
define dso_local ptx_kernel void @child1k(ptr noundef readonly byval(%struct.Kilo) align 8 captures(none) %0, i32 noundef %1) #1 {
  %3 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %4 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %5 = mul i32 %3, %4
  %6 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %7 = add i32 %5, %6
  %8 = icmp ult i32 %7, %1
  br i1 %8, label %9, label %21

9:                                                ; preds = %2
  %10 = load ptr, ptr %0, align 8, !tbaa !20
  %11 = getelementptr inbounds nuw i8, ptr %0, i64 8
  %12 = load i64, ptr %11, align 8, !tbaa !22
  %13 = getelementptr inbounds nuw i8, ptr %0, i64 512
  %14 = load i64, ptr %13, align 8, !tbaa !22
  %15 = add nsw i64 %14, %12
  %16 = getelementptr inbounds nuw i8, ptr %0, i64 1016
  %17 = load i64, ptr %16, align 8, !tbaa !22
  %18 = add nsw i64 %15, %17
  %19 = trunc i64 %18 to i32
  %20 = atomicrmw add ptr %10, i32 %19 seq_cst, align 4
  br label %21

21:                                               ; preds = %9, %2
  ret void
}

; Function Attrs: convergent mustprogress noinline norecurse nounwind
define dso_local ptx_kernel void @from_params(ptr noundef readonly byval(%struct.Graph) align 8 captures(none) %0, ptr noundef readonly byval(%struct.Space) align 8 captures(none) %1, ptr noundef readonly byval(%struct.Kilo) align 8 captures(none) %2, ptr noundef %3) local_unnamed_addr #2 {
  %5 = alloca %struct.dim3, align 8
  %6 = alloca %struct.dim3, align 8
  %7 = alloca %struct.dim3, align 8
  %8 = alloca %struct.dim3, align 8
  %9 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %10 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %11 = mul i32 %9, %10
  %12 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %13 = add i32 %11, %12
  %14 = load i32, ptr %0, align 8, !tbaa !8
  %15 = icmp ult i32 %13, %14
  br i1 %15, label %16, label %49

16:                                               ; preds = %4
  %17 = tail call noundef ptr @__cudaCDP2GetParameterBuffer(i64 noundef 64, i64 noundef 168) #7
  %18 = icmp eq ptr %17, null
  br i1 %18, label %34, label %19

19:                                               ; preds = %16
  call void @llvm.memcpy.p0.p0.i64(ptr noundef nonnull align 64 dereferenceable(128) %17, ptr noundef nonnull align 8 dereferenceable(128) %0, i64 128, i1 false)
  %20 = getelementptr inbounds nuw i8, ptr %17, i64 128
  call void @llvm.memcpy.p0.p0.i64(ptr noundef nonnull align 64 dereferenceable(32) %20, ptr noundef nonnull align 8 dereferenceable(32) %1, i64 32, i1 false)
  %21 = getelementptr inbounds nuw i8, ptr %17, i64 160
  store ptr %3, ptr %21, align 32, !tbaa !23
  %22 = getelementptr inbounds nuw i8, ptr %0, i64 8
  %23 = load ptr, ptr %22, align 8, !tbaa !13
  %24 = zext i32 %13 to i64
  %25 = getelementptr inbounds nuw i32, ptr %23, i64 %24
  %26 = load i32, ptr %25, align 4, !tbaa !4
  %27 = add i32 %26, 31
  %28 = lshr i32 %27, 5
  call void @llvm.lifetime.start.p0(ptr nonnull %8)
  call void @llvm.lifetime.start.p0(ptr nonnull %7)
  store i32 32, ptr %7, align 8
  %29 = getelementptr inbounds nuw i8, ptr %7, i64 4
  store i32 1, ptr %29, align 4
  %30 = getelementptr inbounds nuw i8, ptr %7, i64 8
  store i32 1, ptr %30, align 8
  store i32 %28, ptr %8, align 8
  %31 = getelementptr inbounds nuw i8, ptr %8, i64 4
  store i32 1, ptr %31, align 4
  %32 = getelementptr inbounds nuw i8, ptr %8, i64 8
  store i32 1, ptr %32, align 8
  %33 = tail call noundef i32 @__cudaCDP2LaunchDevice(ptr noundef nonnull @child136, ptr noundef nonnull %17, ptr noundef nonnull byval(%struct.dim3) align 4 %8, ptr noundef nonnull byval(%struct.dim3) align 4 %7, i32 noundef 0, ptr noundef null) #7
  call void @llvm.lifetime.end.p0(ptr nonnull %8)
  call void @llvm.lifetime.end.p0(ptr nonnull %7)
  br label %34

34:                                               ; preds = %19, %16
  %35 = tail call noundef ptr @__cudaCDP2GetParameterBuffer(i64 noundef 64, i64 noundef 1028) #7
  %36 = icmp eq ptr %35, null
  br i1 %36, label %49, label %37

37:                                               ; preds = %34
  %38 = getelementptr inbounds nuw i8, ptr %0, i64 16
  %39 = load ptr, ptr %38, align 8, !tbaa !24
  %40 = zext i32 %13 to i64
  %41 = getelementptr inbounds nuw i32, ptr %39, i64 %40
  %42 = load i32, ptr %41, align 4, !tbaa !4
  call void @llvm.memcpy.p0.p0.i64(ptr noundef nonnull align 64 dereferenceable(1024) %35, ptr noundef nonnull align 8 dereferenceable(1024) %2, i64 1024, i1 false)
  %43 = getelementptr inbounds nuw i8, ptr %35, i64 1024
  store i32 %42, ptr %43, align 64, !tbaa !4
  call void @llvm.lifetime.start.p0(ptr nonnull %6)
  call void @llvm.lifetime.start.p0(ptr nonnull %5)
  store i32 32, ptr %5, align 8
  %44 = getelementptr inbounds nuw i8, ptr %5, i64 4
  store i32 1, ptr %44, align 4
  %45 = getelementptr inbounds nuw i8, ptr %5, i64 8
  store i32 1, ptr %45, align 8
  store i32 1, ptr %6, align 8
  %46 = getelementptr inbounds nuw i8, ptr %6, i64 4
  store i32 1, ptr %46, align 4
  %47 = getelementptr inbounds nuw i8, ptr %6, i64 8
  store i32 1, ptr %47, align 8
  %48 = tail call noundef i32 @__cudaCDP2LaunchDevice(ptr noundef nonnull @child1k, ptr noundef nonnull %35, ptr noundef nonnull byval(%struct.dim3) align 4 %6, ptr noundef nonnull byval(%struct.dim3) align 4 %5, i32 noundef 0, ptr noundef null) #7
  call void @llvm.lifetime.end.p0(ptr nonnull %6)
  call void @llvm.lifetime.end.p0(ptr nonnull %5)
  br label %49

49:                                               ; preds = %34, %37, %4
  ret void
}

; Function Attrs: mustprogress nocallback nofree nounwind willreturn memory(argmem: readwrite)
declare void @llvm.memcpy.p0.p0.i64(ptr noalias writeonly captures(none), ptr noalias readonly captures(none), i64, i1 immarg) #3

; Function Attrs: convergent mustprogress noinline norecurse nounwind
define dso_local ptx_kernel void @from_locals(ptr noundef %0, ptr noundef %1, i32 noundef %2) local_unnamed_addr #2 {
  %4 = alloca %struct.dim3, align 8
  %5 = alloca %struct.dim3, align 8
  %6 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %7 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %8 = mul i32 %6, %7
  %9 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %10 = add i32 %8, %9
  %11 = zext i32 %10 to i64
  %12 = getelementptr inbounds nuw i32, ptr %1, i64 %11
  %13 = getelementptr inbounds nuw i8, ptr %1, i64 4
  %14 = mul nuw nsw i64 %11, 7
  %15 = zext i32 %2 to i64
  %16 = getelementptr inbounds nuw i32, ptr %1, i64 %15
  %17 = sub i32 0, %10
  %18 = zext i32 %17 to i64
  %19 = icmp ult i32 %10, %2
  br i1 %19, label %20, label %53

20:                                               ; preds = %3
  %21 = tail call noundef ptr @__cudaCDP2GetParameterBuffer(i64 noundef 64, i64 noundef 168) #7
  %22 = icmp eq ptr %21, null
  br i1 %22, label %53, label %23

23:                                               ; preds = %20
  store i32 %2, ptr %21, align 64, !tbaa !4
  %24 = getelementptr inbounds nuw i8, ptr %21, i64 4
  store i32 %10, ptr %24, align 4, !tbaa !4
  %25 = getelementptr inbounds nuw i8, ptr %21, i64 8
  store ptr %12, ptr %25, align 8, !tbaa !23
  %26 = getelementptr inbounds nuw i8, ptr %21, i64 16
  store ptr %1, ptr %26, align 16, !tbaa !23
  %27 = getelementptr inbounds nuw i8, ptr %21, i64 24
  store ptr %1, ptr %27, align 8, !tbaa !23
  %28 = getelementptr inbounds nuw i8, ptr %21, i64 32
  store ptr %1, ptr %28, align 32, !tbaa !23
  %29 = getelementptr inbounds nuw i8, ptr %21, i64 40
  store ptr %1, ptr %29, align 8, !tbaa !23
  %30 = getelementptr inbounds nuw i8, ptr %21, i64 48
  store ptr %1, ptr %30, align 16, !tbaa !23
  %31 = getelementptr inbounds nuw i8, ptr %21, i64 56
  store ptr %1, ptr %31, align 8, !tbaa !23
  %32 = getelementptr inbounds nuw i8, ptr %21, i64 64
  store i32 3, ptr %32, align 64, !tbaa !4
  %33 = getelementptr inbounds nuw i8, ptr %21, i64 72
  store ptr %13, ptr %33, align 8, !tbaa !23
  %34 = getelementptr inbounds nuw i8, ptr %21, i64 80
  store ptr %13, ptr %34, align 16, !tbaa !23
  %35 = getelementptr inbounds nuw i8, ptr %21, i64 88
  store ptr %13, ptr %35, align 8, !tbaa !23
  %36 = getelementptr inbounds nuw i8, ptr %21, i64 96
  store ptr %13, ptr %36, align 32, !tbaa !23
  %37 = getelementptr inbounds nuw i8, ptr %21, i64 104
  store ptr %13, ptr %37, align 8, !tbaa !23
  %38 = getelementptr inbounds nuw i8, ptr %21, i64 112
  store ptr %13, ptr %38, align 16, !tbaa !23
  %39 = getelementptr inbounds nuw i8, ptr %21, i64 120
  store i64 %14, ptr %39, align 8, !tbaa !22
  %40 = getelementptr inbounds nuw i8, ptr %21, i64 128
  store i32 %2, ptr %40, align 64, !tbaa !4
  %41 = getelementptr inbounds nuw i8, ptr %21, i64 136
  store ptr %1, ptr %41, align 8, !tbaa !23
  %42 = getelementptr inbounds nuw i8, ptr %21, i64 144
  store ptr %16, ptr %42, align 16, !tbaa !23
  %43 = getelementptr inbounds nuw i8, ptr %21, i64 152
  store i64 %18, ptr %43, align 8, !tbaa !22
  %44 = getelementptr inbounds nuw i8, ptr %21, i64 160
  store ptr %0, ptr %44, align 32, !tbaa !23
  %45 = load i32, ptr %12, align 4, !tbaa !4
  %46 = and i32 %45, 3
  %47 = add nuw nsw i32 %46, 1
  call void @llvm.lifetime.start.p0(ptr nonnull %5)
  call void @llvm.lifetime.start.p0(ptr nonnull %4)
  store i32 32, ptr %4, align 8
  %48 = getelementptr inbounds nuw i8, ptr %4, i64 4
  store i32 1, ptr %48, align 4
  %49 = getelementptr inbounds nuw i8, ptr %4, i64 8
  store i32 1, ptr %49, align 8
  store i32 %47, ptr %5, align 8
  %50 = getelementptr inbounds nuw i8, ptr %5, i64 4
  store i32 1, ptr %50, align 4
  %51 = getelementptr inbounds nuw i8, ptr %5, i64 8
  store i32 1, ptr %51, align 8
  %52 = tail call noundef i32 @__cudaCDP2LaunchDevice(ptr noundef nonnull @child136, ptr noundef nonnull %21, ptr noundef nonnull byval(%struct.dim3) align 4 %5, ptr noundef nonnull byval(%struct.dim3) align 4 %4, i32 noundef 0, ptr noundef null) #7
  call void @llvm.lifetime.end.p0(ptr nonnull %5)
  call void @llvm.lifetime.end.p0(ptr nonnull %4)
  br label %53

53:                                               ; preds = %20, %23, %3
  ret void
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 2147483647) i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #4

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 1, 1025) i32 @llvm.nvvm.read.ptx.sreg.ntid.x() #4

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x() #4

; Function Attrs: convergent nounwind
declare dso_local ptr @__cudaCDP2GetParameterBuffer(i64 noundef, i64 noundef) local_unnamed_addr #5

; Function Attrs: convergent nounwind
declare dso_local i32 @__cudaCDP2LaunchDevice(ptr noundef, ptr noundef, ptr noundef byval(%struct.dim3) align 4, ptr noundef byval(%struct.dim3) align 4, i32 noundef, ptr noundef) local_unnamed_addr #5

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.start.p0(ptr captures(none)) #6

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.end.p0(ptr captures(none)) #6

attributes #0 = { mustprogress nofree noinline norecurse nounwind willreturn memory(read, argmem: readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none) "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" "uniform-work-group-size"="true" }
attributes #1 = { mustprogress nofree noinline norecurse nounwind willreturn memory(readwrite, inaccessiblemem: none, target_mem0: none, target_mem1: none) "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" "uniform-work-group-size"="true" }
attributes #2 = { convergent mustprogress noinline norecurse nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" "uniform-work-group-size"="true" }
attributes #3 = { mustprogress nocallback nofree nounwind willreturn memory(argmem: readwrite) }
attributes #4 = { mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #5 = { convergent nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #6 = { nocallback nofree nosync nounwind willreturn memory(argmem: readwrite) }
attributes #7 = { convergent nounwind }

!llvm.module.flags = !{!0, !1, !2}
!llvm.ident = !{!3}
!llvm.errno.tbaa = !{!4}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
!2 = !{i32 7, !"frame-pointer", i32 2}
!3 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!4 = !{!5, !5, i64 0}
!5 = !{!"int", !6, i64 0}
!6 = !{!"omnipotent char", !7, i64 0}
!7 = !{!"Simple C++ TBAA"}
!8 = !{!9, !5, i64 0}
!9 = !{!"_ZTS5Graph", !5, i64 0, !5, i64 4, !10, i64 8, !10, i64 16, !10, i64 24, !10, i64 32, !10, i64 40, !10, i64 48, !10, i64 56, !5, i64 64, !10, i64 72, !10, i64 80, !10, i64 88, !10, i64 96, !10, i64 104, !10, i64 112, !12, i64 120}
!10 = !{!"p1 int", !11, i64 0}
!11 = !{!"any pointer", !6, i64 0}
!12 = !{!"long long", !6, i64 0}
!13 = !{!9, !10, i64 8}
!14 = !{!9, !5, i64 4}
!15 = !{!16, !10, i64 8}
!16 = !{!"_ZTS5Space", !5, i64 0, !10, i64 8, !10, i64 16, !12, i64 24}
!17 = !{!16, !12, i64 24}
!18 = !{!9, !12, i64 120}
!19 = !{!9, !10, i64 112}
!20 = !{!21, !10, i64 0}
!21 = !{!"_ZTS4Kilo", !10, i64 0, !6, i64 8}
!22 = !{!12, !12, i64 0}
!23 = !{!10, !10, i64 0}
!24 = !{!9, !10, i64 16}
