; samples/bfs.cdp as CUDA C++, device side, by clang++-22 -O3 -fgpu-rdc for sm_90: atomicCAS as Clang
; writes it (a seq_cst system-scope cmpxchg, pipeline/atomics.rs), a tail launch and a launch of
; a child that makes them (the documented V1 sequence).
; ModuleID = 'bfs.cu'
source_filename = "bfs.cu"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%struct.dim3 = type { i32, i32, i32 }

@launch_errors = dso_local addrspace(1) externally_initialized global i32 0, align 4
@last_level = dso_local addrspace(1) externally_initialized global i32 -1, align 4
@llvm.compiler.used = appending global [2 x ptr] [ptr addrspacecast (ptr addrspace(1) @last_level to ptr), ptr addrspacecast (ptr addrspace(1) @launch_errors to ptr)], section "llvm.metadata"

; Function Attrs: mustprogress nofree norecurse nounwind willreturn memory(argmem: readwrite)
define dso_local void @visit(i32 noundef %0, ptr noundef captures(none) %1, ptr noundef captures(none) %2, i32 noundef %3) local_unnamed_addr #0 {
  %5 = sext i32 %0 to i64
  %6 = getelementptr inbounds i32, ptr %1, i64 %5
  %7 = cmpxchg ptr %6, i32 -1, i32 %3 seq_cst seq_cst, align 4
  %8 = extractvalue { i32, i1 } %7, 1
  br i1 %8, label %9, label %13

9:                                                ; preds = %4
  %10 = sext i32 %3 to i64
  %11 = getelementptr inbounds i32, ptr %2, i64 %10
  %12 = atomicrmw add ptr %11, i32 1 seq_cst, align 4
  br label %13

13:                                               ; preds = %9, %4
  ret void
}

; Function Attrs: mustprogress nofree noinline norecurse nounwind willreturn memory(argmem: readwrite)
define dso_local ptx_kernel void @expand(ptr noundef readonly captures(none) %0, i32 noundef %1, ptr noundef captures(none) %2, ptr noundef captures(none) %3, i32 noundef %4) #1 {
  %6 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %7 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %8 = mul i32 %6, %7
  %9 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %10 = add i32 %8, %9
  %11 = icmp slt i32 %10, %1
  br i1 %11, label %12, label %24

12:                                               ; preds = %5
  %13 = sext i32 %10 to i64
  %14 = getelementptr inbounds i32, ptr %0, i64 %13
  %15 = load i32, ptr %14, align 4, !tbaa !6
  %16 = sext i32 %15 to i64
  %17 = getelementptr inbounds i32, ptr %2, i64 %16
  %18 = cmpxchg ptr %17, i32 -1, i32 %4 seq_cst seq_cst, align 4
  %19 = extractvalue { i32, i1 } %18, 1
  br i1 %19, label %20, label %24

20:                                               ; preds = %12
  %21 = sext i32 %4 to i64
  %22 = getelementptr inbounds i32, ptr %3, i64 %21
  %23 = atomicrmw add ptr %22, i32 1 seq_cst, align 4
  br label %24

24:                                               ; preds = %20, %12, %5
  ret void
}

; Function Attrs: convergent mustprogress noinline norecurse nounwind
define dso_local ptx_kernel void @bfs_level(ptr noundef %0, ptr noundef %1, ptr noundef %2, ptr noundef %3, i32 noundef %4, i32 noundef %5, i32 noundef %6) #2 {
  %8 = alloca %struct.dim3, align 8
  %9 = alloca %struct.dim3, align 8
  %10 = alloca %struct.dim3, align 8
  %11 = alloca %struct.dim3, align 8
  %12 = sext i32 %5 to i64
  %13 = getelementptr inbounds i32, ptr %3, i64 %12
  %14 = load i32, ptr %13, align 4, !tbaa !6
  %15 = icmp eq i32 %14, 0
  br i1 %15, label %174, label %16

16:                                               ; preds = %7
  %17 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %18 = tail call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %19 = or i32 %17, %18
  %20 = icmp eq i32 %19, 0
  br i1 %20, label %21, label %46

21:                                               ; preds = %16
  store i32 %5, ptr addrspacecast (ptr addrspace(1) @last_level to ptr), align 4, !tbaa !6
  %22 = icmp slt i32 %5, %6
  br i1 %22, label %23, label %46

23:                                               ; preds = %21
  %24 = tail call noundef ptr @__cudaCDP2GetParameterBuffer(i64 noundef 64, i64 noundef 44) #7
  %25 = icmp eq ptr %24, null
  br i1 %25, label %41, label %26

26:                                               ; preds = %23
  %27 = add nsw i32 %5, 1
  store ptr %0, ptr %24, align 64, !tbaa !11
  %28 = getelementptr inbounds nuw i8, ptr %24, i64 8
  store ptr %1, ptr %28, align 8, !tbaa !11
  %29 = getelementptr inbounds nuw i8, ptr %24, i64 16
  store ptr %2, ptr %29, align 16, !tbaa !11
  %30 = getelementptr inbounds nuw i8, ptr %24, i64 24
  store ptr %3, ptr %30, align 8, !tbaa !11
  %31 = getelementptr inbounds nuw i8, ptr %24, i64 32
  store i32 %4, ptr %31, align 32, !tbaa !6
  %32 = getelementptr inbounds nuw i8, ptr %24, i64 36
  store i32 %27, ptr %32, align 4, !tbaa !6
  %33 = getelementptr inbounds nuw i8, ptr %24, i64 40
  store i32 %6, ptr %33, align 8, !tbaa !6
  %34 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %35 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  call void @llvm.lifetime.start.p0(ptr nonnull %11)
  call void @llvm.lifetime.start.p0(ptr nonnull %10)
  store i32 %35, ptr %10, align 8
  %36 = getelementptr inbounds nuw i8, ptr %10, i64 4
  store i32 1, ptr %36, align 4
  %37 = getelementptr inbounds nuw i8, ptr %10, i64 8
  store i32 1, ptr %37, align 8
  store i32 %34, ptr %11, align 8
  %38 = getelementptr inbounds nuw i8, ptr %11, i64 4
  store i32 1, ptr %38, align 4
  %39 = getelementptr inbounds nuw i8, ptr %11, i64 8
  store i32 1, ptr %39, align 8
  %40 = tail call noundef i32 @__cudaCDP2LaunchDevice(ptr noundef nonnull @bfs_level, ptr noundef nonnull %24, ptr noundef nonnull byval(%struct.dim3) align 4 %11, ptr noundef nonnull byval(%struct.dim3) align 4 %10, i32 noundef 0, ptr noundef nonnull inttoptr (i64 3 to ptr)) #7
  call void @llvm.lifetime.end.p0(ptr nonnull %11)
  call void @llvm.lifetime.end.p0(ptr nonnull %10)
  br label %41

41:                                               ; preds = %26, %23
  %42 = tail call noundef i32 @__cudaCDP2GetLastError() #7
  %43 = icmp eq i32 %42, 0
  br i1 %43, label %46, label %44

44:                                               ; preds = %41
  %45 = atomicrmw add ptr addrspacecast (ptr addrspace(1) @launch_errors to ptr), i32 1 seq_cst, align 4
  br label %46

46:                                               ; preds = %21, %44, %41, %16
  %47 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %48 = mul i32 %17, %47
  %49 = add i32 %48, %18
  %50 = icmp slt i32 %49, %4
  br i1 %50, label %51, label %174

51:                                               ; preds = %46
  %52 = sext i32 %49 to i64
  %53 = getelementptr inbounds i32, ptr %2, i64 %52
  %54 = load i32, ptr %53, align 4, !tbaa !6
  %55 = icmp eq i32 %54, %5
  %56 = icmp slt i32 %5, %6
  %57 = and i1 %56, %55
  br i1 %57, label %58, label %174

58:                                               ; preds = %51
  %59 = getelementptr inbounds i32, ptr %0, i64 %52
  %60 = load i32, ptr %59, align 4, !tbaa !6
  %61 = getelementptr i8, ptr %59, i64 4
  %62 = load i32, ptr %61, align 4, !tbaa !6
  %63 = sub nsw i32 %62, %60
  %64 = icmp sgt i32 %63, 32
  br i1 %64, label %76, label %65

65:                                               ; preds = %58
  %66 = icmp sgt i32 %63, 0
  br i1 %66, label %67, label %174

67:                                               ; preds = %65
  %68 = add nsw i32 %5, 1
  %69 = sext i32 %68 to i64
  %70 = getelementptr inbounds i32, ptr %3, i64 %69
  %71 = and i32 %63, 3
  %72 = sub i32 %60, %62
  %73 = icmp ugt i32 %72, -4
  br i1 %73, label %154, label %74

74:                                               ; preds = %67
  %75 = and i32 %63, 2147483644
  br label %99

76:                                               ; preds = %58
  %77 = tail call noundef ptr @__cudaCDP2GetParameterBuffer(i64 noundef 64, i64 noundef 36) #7
  %78 = icmp eq ptr %77, null
  br i1 %78, label %94, label %79

79:                                               ; preds = %76
  %80 = sext i32 %60 to i64
  %81 = getelementptr inbounds i32, ptr %1, i64 %80
  %82 = add nsw i32 %5, 1
  store ptr %81, ptr %77, align 64, !tbaa !11
  %83 = getelementptr inbounds nuw i8, ptr %77, i64 8
  store i32 %63, ptr %83, align 8, !tbaa !6
  %84 = getelementptr inbounds nuw i8, ptr %77, i64 16
  store ptr %2, ptr %84, align 16, !tbaa !11
  %85 = getelementptr inbounds nuw i8, ptr %77, i64 24
  store ptr %3, ptr %85, align 8, !tbaa !11
  %86 = getelementptr inbounds nuw i8, ptr %77, i64 32
  store i32 %82, ptr %86, align 32, !tbaa !6
  %87 = add nuw nsw i32 %63, 127
  %88 = lshr i32 %87, 7
  call void @llvm.lifetime.start.p0(ptr nonnull %9)
  call void @llvm.lifetime.start.p0(ptr nonnull %8)
  store i32 128, ptr %8, align 8
  %89 = getelementptr inbounds nuw i8, ptr %8, i64 4
  store i32 1, ptr %89, align 4
  %90 = getelementptr inbounds nuw i8, ptr %8, i64 8
  store i32 1, ptr %90, align 8
  store i32 %88, ptr %9, align 8
  %91 = getelementptr inbounds nuw i8, ptr %9, i64 4
  store i32 1, ptr %91, align 4
  %92 = getelementptr inbounds nuw i8, ptr %9, i64 8
  store i32 1, ptr %92, align 8
  %93 = tail call noundef i32 @__cudaCDP2LaunchDevice(ptr noundef nonnull @expand, ptr noundef nonnull %77, ptr noundef nonnull byval(%struct.dim3) align 4 %9, ptr noundef nonnull byval(%struct.dim3) align 4 %8, i32 noundef 0, ptr noundef null) #7
  call void @llvm.lifetime.end.p0(ptr nonnull %9)
  call void @llvm.lifetime.end.p0(ptr nonnull %8)
  br label %94

94:                                               ; preds = %79, %76
  %95 = tail call noundef i32 @__cudaCDP2GetLastError() #7
  %96 = icmp eq i32 %95, 0
  br i1 %96, label %174, label %97

97:                                               ; preds = %94
  %98 = atomicrmw add ptr addrspacecast (ptr addrspace(1) @launch_errors to ptr), i32 1 seq_cst, align 4
  br label %174

99:                                               ; preds = %148, %74
  %100 = phi i32 [ 0, %74 ], [ %149, %148 ]
  %101 = phi i32 [ 0, %74 ], [ %150, %148 ]
  %102 = add nsw i32 %100, %60
  %103 = sext i32 %102 to i64
  %104 = getelementptr inbounds i32, ptr %1, i64 %103
  %105 = load i32, ptr %104, align 4, !tbaa !6
  %106 = sext i32 %105 to i64
  %107 = getelementptr inbounds i32, ptr %2, i64 %106
  %108 = cmpxchg ptr %107, i32 -1, i32 %68 seq_cst seq_cst, align 4
  %109 = extractvalue { i32, i1 } %108, 1
  br i1 %109, label %110, label %112

110:                                              ; preds = %99
  %111 = atomicrmw add ptr %70, i32 1 seq_cst, align 4
  br label %112

112:                                              ; preds = %99, %110
  %113 = or disjoint i32 %100, 1
  %114 = add nsw i32 %113, %60
  %115 = sext i32 %114 to i64
  %116 = getelementptr inbounds i32, ptr %1, i64 %115
  %117 = load i32, ptr %116, align 4, !tbaa !6
  %118 = sext i32 %117 to i64
  %119 = getelementptr inbounds i32, ptr %2, i64 %118
  %120 = cmpxchg ptr %119, i32 -1, i32 %68 seq_cst seq_cst, align 4
  %121 = extractvalue { i32, i1 } %120, 1
  br i1 %121, label %122, label %124

122:                                              ; preds = %112
  %123 = atomicrmw add ptr %70, i32 1 seq_cst, align 4
  br label %124

124:                                              ; preds = %122, %112
  %125 = or disjoint i32 %100, 2
  %126 = add nsw i32 %125, %60
  %127 = sext i32 %126 to i64
  %128 = getelementptr inbounds i32, ptr %1, i64 %127
  %129 = load i32, ptr %128, align 4, !tbaa !6
  %130 = sext i32 %129 to i64
  %131 = getelementptr inbounds i32, ptr %2, i64 %130
  %132 = cmpxchg ptr %131, i32 -1, i32 %68 seq_cst seq_cst, align 4
  %133 = extractvalue { i32, i1 } %132, 1
  br i1 %133, label %134, label %136

134:                                              ; preds = %124
  %135 = atomicrmw add ptr %70, i32 1 seq_cst, align 4
  br label %136

136:                                              ; preds = %134, %124
  %137 = or disjoint i32 %100, 3
  %138 = add nsw i32 %137, %60
  %139 = sext i32 %138 to i64
  %140 = getelementptr inbounds i32, ptr %1, i64 %139
  %141 = load i32, ptr %140, align 4, !tbaa !6
  %142 = sext i32 %141 to i64
  %143 = getelementptr inbounds i32, ptr %2, i64 %142
  %144 = cmpxchg ptr %143, i32 -1, i32 %68 seq_cst seq_cst, align 4
  %145 = extractvalue { i32, i1 } %144, 1
  br i1 %145, label %146, label %148

146:                                              ; preds = %136
  %147 = atomicrmw add ptr %70, i32 1 seq_cst, align 4
  br label %148

148:                                              ; preds = %146, %136
  %149 = add nuw nsw i32 %100, 4
  %150 = add i32 %101, 4
  %151 = icmp eq i32 %150, %75
  br i1 %151, label %152, label %99, !llvm.loop !14

152:                                              ; preds = %148
  %153 = icmp eq i32 %71, 0
  br i1 %153, label %174, label %154

154:                                              ; preds = %152, %67
  %155 = phi i32 [ 0, %67 ], [ %149, %152 ]
  %156 = icmp ne i32 %71, 0
  tail call void @llvm.assume(i1 %156)
  br label %157

157:                                              ; preds = %170, %154
  %158 = phi i32 [ %155, %154 ], [ %171, %170 ]
  %159 = phi i32 [ 0, %154 ], [ %172, %170 ]
  %160 = add nsw i32 %158, %60
  %161 = sext i32 %160 to i64
  %162 = getelementptr inbounds i32, ptr %1, i64 %161
  %163 = load i32, ptr %162, align 4, !tbaa !6
  %164 = sext i32 %163 to i64
  %165 = getelementptr inbounds i32, ptr %2, i64 %164
  %166 = cmpxchg ptr %165, i32 -1, i32 %68 seq_cst seq_cst, align 4
  %167 = extractvalue { i32, i1 } %166, 1
  br i1 %167, label %168, label %170

168:                                              ; preds = %157
  %169 = atomicrmw add ptr %70, i32 1 seq_cst, align 4
  br label %170

170:                                              ; preds = %168, %157
  %171 = add nuw nsw i32 %158, 1
  %172 = add i32 %159, 1
  %173 = icmp eq i32 %172, %71
  br i1 %173, label %174, label %157, !llvm.loop !16

174:                                              ; preds = %152, %170, %65, %51, %46, %94, %97, %7
  ret void
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 2147483647) i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #3

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 1, 1025) i32 @llvm.nvvm.read.ptx.sreg.ntid.x() #3

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x() #3

; Function Attrs: convergent nounwind
declare dso_local ptr @__cudaCDP2GetParameterBuffer(i64 noundef, i64 noundef) local_unnamed_addr #4

; Function Attrs: convergent nounwind
declare dso_local i32 @__cudaCDP2LaunchDevice(ptr noundef, ptr noundef, ptr noundef byval(%struct.dim3) align 4, ptr noundef byval(%struct.dim3) align 4, i32 noundef, ptr noundef) local_unnamed_addr #4

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 1, -2147483648) i32 @llvm.nvvm.read.ptx.sreg.nctaid.x() #3

; Function Attrs: convergent nounwind
declare dso_local i32 @__cudaCDP2GetLastError() local_unnamed_addr #4

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.start.p0(ptr captures(none)) #5

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.end.p0(ptr captures(none)) #5

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write)
declare void @llvm.assume(i1 noundef) #6

attributes #0 = { mustprogress nofree norecurse nounwind willreturn memory(argmem: readwrite) "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #1 = { mustprogress nofree noinline norecurse nounwind willreturn memory(argmem: readwrite) "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" "uniform-work-group-size"="true" }
attributes #2 = { convergent mustprogress noinline norecurse nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" "uniform-work-group-size"="true" }
attributes #3 = { mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #4 = { convergent nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #5 = { nocallback nofree nosync nounwind willreturn memory(argmem: readwrite) }
attributes #6 = { nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write) }
attributes #7 = { convergent nounwind }

!llvm.module.flags = !{!0, !1, !2, !3}
!llvm.ident = !{!4, !5}
!llvm.errno.tbaa = !{!6}
!nvvmir.version = !{!10}

!0 = !{i32 2, !"SDK Version", [2 x i32] [i32 12, i32 9]}
!1 = !{i32 1, !"wchar_size", i32 4}
!2 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
!3 = !{i32 7, !"frame-pointer", i32 2}
!4 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!5 = !{!"clang version 3.8.0 (tags/RELEASE_380/final)"}
!6 = !{!7, !7, i64 0}
!7 = !{!"int", !8, i64 0}
!8 = !{!"omnipotent char", !9, i64 0}
!9 = !{!"Simple C++ TBAA"}
!10 = !{i32 2, i32 0}
!11 = !{!12, !12, i64 0}
!12 = !{!"p1 int", !13, i64 0}
!13 = !{!"any pointer", !8, i64 0}
!14 = distinct !{!14, !15}
!15 = !{!"llvm.loop.mustprogress"}
!16 = distinct !{!16, !17}
!17 = !{!"llvm.loop.unroll.disable"}
