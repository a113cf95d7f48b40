"""Generates math.ll (LLVM's math intrinsics, the way another front end writes them) and
math.cu (the same functions through CUDA's math API, for nvcc): one kernel per type, each
computing every function of its inputs into out[f * n + i]."""
UN = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "exp2", "exp10", "log", "log2", "log10"]
BIN = ["pow", "atan2"]
def ll():
    out = ['target triple = "nvptx64-nvidia-cuda"', ""]
    decls = set()
    kernels = []
    for ty, m, sz, cty in [("double", "f64", 8, "double"), ("float", "f32", 4, "float"), ("half", "f16", 2, "half"), ("bfloat", "bf16", 2, "bfloat")]:
        body = ["  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()", "  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()", "  %bd = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()",
                "  %b0 = mul i32 %bid, %bd", "  %t = add i32 %b0, %i", "  %in = icmp slt i32 %t, %n", "  br i1 %in, label %go, label %done", "go:",
                f"  %px = getelementptr {ty}, ptr %x, i32 %t", f"  %a = load {ty}, ptr %px", f"  %py = getelementptr {ty}, ptr %y, i32 %t", f"  %b = load {ty}, ptr %py"]
        slot = 0
        def store(v, vty, slot):
            return [f"  %o{slot}a = mul i32 {slot}, %n", f"  %o{slot}b = add i32 %o{slot}a, %t", f"  %o{slot}p = getelementptr {vty}, ptr %out, i32 %o{slot}b", f"  store {vty} {v}, ptr %o{slot}p"]
        for f in UN:
            decls.add(f"declare {ty} @llvm.{f}.{m}({ty})")
            body.append(f"  %r{slot} = call {ty} @llvm.{f}.{m}({ty} %a)"); body += store(f"%r{slot}", ty, slot); slot += 1
        for f in BIN:
            decls.add(f"declare {ty} @llvm.{f}.{m}({ty}, {ty})")
            body.append(f"  %r{slot} = call {ty} @llvm.{f}.{m}({ty} %a, {ty} %b)"); body += store(f"%r{slot}", ty, slot); slot += 1
        decls.add(f"declare {{{ty}, {ty}}} @llvm.sincos.{m}({ty})")
        body += [f"  %sc = call {{{ty}, {ty}}} @llvm.sincos.{m}({ty} %a)", f"  %s0 = extractvalue {{{ty}, {ty}}} %sc, 0", f"  %s1 = extractvalue {{{ty}, {ty}}} %sc, 1"]
        body += store("%s0", ty, slot); slot += 1; body += store("%s1", ty, slot); slot += 1
        decls.add(f"declare {{{ty}, {ty}}} @llvm.modf.{m}({ty})")
        body += [f"  %md = call {{{ty}, {ty}}} @llvm.modf.{m}({ty} %a)", f"  %m0 = extractvalue {{{ty}, {ty}}} %md, 0", f"  %m1 = extractvalue {{{ty}, {ty}}} %md, 1"]
        body += store("%m0", ty, slot); slot += 1; body += store("%m1", ty, slot); slot += 1
        # The integer results in a kernel's second output, as i64.
        ints = []
        for f in ["llround", "llrint"]:
            decls.add(f"declare i64 @llvm.{f}.i64.{m}({ty})")
            body.append(f"  %q{f} = call i64 @llvm.{f}.i64.{m}({ty} %a)"); ints.append(f"%q{f}")
        decls.add(f"declare {ty} @llvm.powi.{m}.i32({ty}, i32)")
        body += [f"  %pw = call {ty} @llvm.powi.{m}.i32({ty} %a, i32 %t)"]
        body += store("%pw", ty, slot); slot += 1
        for k, v in enumerate(ints):
            body += [f"  %j{k}a = mul i32 {k}, %n", f"  %j{k}b = add i32 %j{k}a, %t", f"  %j{k}p = getelementptr i64, ptr %iout, i32 %j{k}b", f"  store i64 {v}, ptr %j{k}p"]
        body += ["  br label %done", "done:", "  ret void"]
        kernels.append(f"define ptx_kernel void @k_{m}(ptr %x, ptr %y, ptr %out, ptr %iout, i32 %n) {{\nentry:\n" + "\n".join(body) + "\n}")
        slots = slot
    decls |= {"declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()", "declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()", "declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()"}
    return "\n".join(out + sorted(decls) + [""] + kernels) + "\n", slots
def cu():
    src = ["#include <cuda_fp16.h>", "#include <cuda_bf16.h>", ""]
    for ty, m, suf in [("double", "f64", ""), ("float", "f32", "f")]:
        lines = [f'extern "C" __global__ void k_{m}(const {ty} *x, const {ty} *y, {ty} *out, long long *iout, int n)', "{", "  int t = blockIdx.x * blockDim.x + threadIdx.x;", "  if (t >= n) return;", f"  {ty} a = x[t], b = y[t];"]
        slot = 0
        for f in UN:
            lines.append(f"  out[{slot} * n + t] = {f}{suf}(a);"); slot += 1
        lines.append(f"  out[{slot} * n + t] = pow{suf}(a, b);"); slot += 1
        lines.append(f"  out[{slot} * n + t] = atan2{suf}(a, b);"); slot += 1
        lines.append(f"  {{ {ty} s, c; sincos{suf}(a, &s, &c); out[{slot} * n + t] = s; out[{slot + 1} * n + t] = c; }}"); slot += 2
        lines.append(f"  {{ {ty} ip; {ty} fr = modf{suf}(a, &ip); out[{slot} * n + t] = fr; out[{slot + 1} * n + t] = ip; }}"); slot += 2
        # libdevice's powi, which CUDA's math API does not name.
        lines.append(f"  out[{slot} * n + t] = __nv_powi{suf}(a, t);"); slot += 1
        lines.append(f"  iout[t] = llround{suf}(a);")
        lines.append(f"  iout[n + t] = llrint{suf}(a);")
        lines.append("}")
        src += [f'extern "C" __device__ {ty} __nv_powi{suf}({ty}, int);'] + lines + [""]
    # half and bfloat through float, as LLVM's own legalisation of those types computes them.
    for h, m, to, back in [("__half", "f16", "__half2float", "__float2half_rn"), ("__nv_bfloat16", "bf16", "__bfloat162float", "__float2bfloat16_rn")]:
        src += half_kernel(h, m, to, back)
    return "\n".join(src) + "\n"
def half_kernel(h, m, to, back):
    lines = [f'extern "C" __global__ void k_{m}(const {h} *x, const {h} *y, {h} *out, long long *iout, int n)', "{", "  int t = blockIdx.x * blockDim.x + threadIdx.x;", "  if (t >= n) return;", f"  float a = {to}(x[t]), b = {to}(y[t]);"]
    slot = 0
    for f in UN:
        lines.append(f"  out[{slot} * n + t] = __float2half_rn({f}f(a));"); slot += 1
    lines.append(f"  out[{slot} * n + t] = __float2half_rn(powf(a, b));"); slot += 1
    lines.append(f"  out[{slot} * n + t] = __float2half_rn(atan2f(a, b));"); slot += 1
    lines.append(f"  {{ float s, c; sincosf(a, &s, &c); out[{slot} * n + t] = __float2half_rn(s); out[{slot + 1} * n + t] = __float2half_rn(c); }}"); slot += 2
    lines.append(f"  {{ float ip; float fr = modff(a, &ip); out[{slot} * n + t] = __float2half_rn(fr); out[{slot + 1} * n + t] = __float2half_rn(ip); }}"); slot += 2
    lines.append(f"  out[{slot} * n + t] = __float2half_rn(__nv_powif(a, t));"); slot += 1
    lines.append("  iout[t] = llroundf(a);")
    lines.append("  iout[n + t] = llrintf(a);")
    lines.append("}")
    return [l.replace("__float2half_rn(", back + "(") for l in lines] + [""]
text, slots = ll()
open("math.ll", "w").write(text)
open("math.cu", "w").write(cu())
print("slots", slots)
