#!/usr/bin/env python3
"""Whether cdpc fails a build under `-Werror` where nvcc's succeeds, and the other way round.

    python3 bench/werror/compare.py probes --cdpc BIN [--nvcc NVCC] [-j N]
    python3 bench/werror/compare.py corpus --cdpc BIN [--nvcc NVCC] [-j N] [--corpus DIR]

`probes` compiles one file per warning of Clang's (a host function with the mistake, PROBES
below), `corpus` the device-code files of ../shared/corpus (tests/corpus-programs.txt, their
Makefiles' -I and --default-stream; QT, which nvcc refuses, left out) and samples/*.cu, each
with `-dc -rdc=true -arch=sm_90 -std=c++17` and each of WERRORS, once with nvcc and once with
cdpc, and prints per file and option whether each failed, then the counts: cdpc failing where
nvcc builds (what must not happen), nvcc failing where cdpc builds (a warning nvcc's front end
or g++ gives that Clang does not, or not at that level). The table of
compiler/src/front/cuda/host_warnings.rs was measured with `probes`.
"""
import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# nvcc's and cdpc's spellings of "warnings are errors": the host compiler's, nvcc's own (CMake's
# COMPILE_WARNING_AS_ERROR), each with the host compiler's warning levels.
WERRORS = {
    "-Xcompiler -Werror": ["-Xcompiler", "-Werror"],
    "-Xcompiler -Wall,-Werror": ["-Xcompiler", "-Wall,-Werror"],
    "-Xcompiler -Wall,-Wextra,-Werror": ["-Xcompiler", "-Wall,-Wextra,-Werror"],
    "-Werror all-warnings": ["-Werror", "all-warnings"],
    "-Werror all-warnings -Xcompiler -Wall,-Wextra": ["-Werror", "all-warnings", "-Xcompiler", "-Wall,-Wextra"],
}

PROBES = {
    "unused-variable": "int p_uv(int a) { int x; return a; }",
    "unused-but-set-variable": "int p_ubs(int a) { int x = 0; x = a; return a; }",
    "unused-parameter": "int p_up(int a, int b) { return a; }",
    "sign-compare": "int p_sc(int a, unsigned b) { return a < b; }",
    "parentheses-assign": "int p_pa(int a) { if (a = 3) return 1; return 0; }",
    "parentheses-logic": "int p_pl(int a, int b, int c) { return a && b || c; }",
    "unused-value-arith": "int p_uva(int a) { 255 - 194 * a; return a; }",
    "unused-value-compare": "int p_uvc(int a) { a == 1; return a; }",
    "return-type": "int p_rt(int a) { if (a) return 1; }",
    "format": "int p_fmt(int a) { printf(\"%s\\n\", a); return 0; }",
    "format-insufficient-args": "void p_fia() { printf(\"%d %d\\n\", 1); }",
    "format-extra-args": "void p_fea() { printf(\"%d\\n\", 1, 2); }",
    "format-invalid-specifier": "void p_fis() { printf(\"%y\\n\", 1); }",
    "unused-function": "static int p_uf(int a) { return a; }",
    "uninitialized": "int p_un(int a) { int x; if (a) x = 1; return x; }",
    "misleading-indentation": "int p_mi(int a) { if (a)\n    a++;\n    a++; return a; }",
    "implicit-fallthrough": "int p_if(int a) { switch (a) { case 1: a++; case 2: a--; break; } return a; }",
    "empty-body": "int p_eb(int a) { if (a); return a; }",
    "self-assign": "int p_sa(int a) { a = a; return a; }",
    "type-limits": "int p_tl(unsigned a) { return a >= 0; }",
    "missing-field-initializers": "struct MF { int a, b; }; int p_mf() { MF m = {1}; return m.a; }",
    "unused-label": "int p_ul(int a) { lbl: return a; }",
    "unused-local-typedef": "int p_ult(int a) { typedef int T; return a; }",
    "reorder": "struct RO { int b; int a; RO() : a(1), b(2) {} }; int p_ro() { RO r; return r.a; }",
    "switch": "enum E3 { E_A, E_B }; int p_sw(E3 e) { switch (e) { case E_A: return 1; } return 0; }",
    "char-subscripts": "int p_cs(char c, int *t) { return t[c]; }",
    "sizeof-pointer-div": "int p_spd(int *p) { return sizeof(p) / sizeof(p[0]); }",
    "dangling-else": "int p_de(int a, int b) { if (a) if (b) return 1; else return 2; return 0; }",
    "delete-non-virtual-dtor": "struct DV { virtual void f(); }; void p_dv(DV *d) { delete d; }",
    "literal-conversion": "int p_lc() { int x = 3.5; return x; }",
    "int-in-bool-context": "int p_ib(int a) { return (a << 1) ? 1 : 0; }",
    "constant-logical-operand": "int p_clo(int a) { return a && 3; }",
    "tautological-compare": "int p_tc(int a) { return a == a; }",
    "unused-private-field": "class UPF { int used; int unused_f; public: UPF() : used(0) {} int get() { return used; } }; int p_upf() { UPF u; return u.get(); }",
    "unused-lambda-capture": "int p_ulc(int a) { auto l = [a]() { return 1; }; return l(); }",
    "deprecated-declarations": "[[deprecated]] int old_f(); int p_dd() { return old_f(); }",
    "unused-result": "[[nodiscard]] int nd_f(); void p_ur() { nd_f(); }",
    "string-plus-int": "const char *p_spi(int a) { return \"abc\" + 1; }",
    "null-conversion": "int p_nc() { int x = NULL; return x; }",
    "address-of-temporary/return-stack": "int *p_rsa() { int x = 1; return &x; }",
    "shift-count-overflow": "int p_sco(int a) { return a << 40; }",
    "division-by-zero": "int p_dz(int a) { return a / 0; }",
    "array-bounds": "int p_ab() { int t[2] = {0, 0}; return t[5]; }",
    "overflow": "int p_ov() { int x = 2147483647 + 1; return x; }",
    "comment": "int p_cm(int a) { /* nested /* comment */ return a; }",
    "unused-const-variable": "static const int p_ucv = 3;",
    "unused-but-set-parameter": "int p_ubsp(int a) { a = 3; return 0; }",
    "cast-function-type/deprecated-copy": "struct DC { int x; DC() : x(0) {} DC &operator=(const DC &o) { x = o.x; return *this; } }; DC p_dc(DC a) { DC b(a); return b; }",
    "empty-init-stmt/extra-semi": "int p_es(int a) { return a; };",
    "pessimizing-move": "#include <utility>\nstruct PM { int x; }; PM p_pm() { PM p{1}; return std::move(p); }",
    "mismatched-new-delete": "void p_mnd() { int *p = new int[3]; delete p; }",
    "infinite-recursion": "int p_ir(int a) { return p_ir(a); }",
    "bool-operation": "int p_bo(bool b) { return ~b; }",
    "memset-transposed-args": "#include <cstring>\nvoid p_mta(int *p) { memset(p, 8, 0); }",
    "sizeof-array-argument": "int p_saa(int t[10]) { return sizeof(t); }",
    "uninitialized-self": "int p_uns() { int x = x + 1; return x; }",
    "unsequenced": "int p_us(int a) { return a++ + a++; }",
    "logical-not-parentheses": "int p_lnp(int a, int b) { return !a == b; }",
    "enum-compare": "enum E1 { X1 }; enum E2 { X2 }; int p_ec(E1 a, E2 b) { return a == b; }",
    "writable-strings": "char *p_ws() { return \"abc\"; }",
    "bitwise-op-parentheses": "int p_bop(int a, int b, int c) { return a & b | c; }",
    "shift-op-parentheses": "int p_sop(int a, int b, int c) { return a << b + c; }",
    "parentheses-equality": "int p_peq(int a) { if ((a == 1)) return 1; return 0; }",
    "bitwise-conditional-parentheses": "int p_bcp(int a, int b) { return a & b ? 1 : 0; }",
    "compare-in-bitwise": "int p_cib(int a, int b, int c) { return a & b == c; }",
    "uninitialized-plain": "int p_unp() { int x; return x; }",
    "vla-cxx-extension": "int p_vla(int n) { int t[n]; t[0] = 1; return t[0]; }",
    "c++20-designator": "struct DS { int x, y; }; int p_ds() { DS d{.x = 1, .y = 2}; return d.x; }",
    "pointer-bool-conversion": "void pb_f(); int p_pbc() { if (pb_f) return 1; return 0; }",
    "tautological-constant-out-of-range-compare": "int p_tcor(char c) { return c == 300; }",
    "constant-conversion": "int p_cc() { char c = 300; return c; }",
    "implicit-const-int-float-conversion": "int p_icif() { float f = 16777217; return (int)f; }",
    "sizeof-pointer-memaccess": "#include <cstring>\nvoid p_spm(char *p) { memset(p, 0, sizeof(p)); }",
    "string-compare": "int p_strc(const char *s) { return s == \"abc\"; }",
    "unknown-pragmas": "int p_ukp(int a) {\n#pragma foo bar\n return a; }",
    "source-uses-openmp": "int p_omp(int *t) {\n#pragma omp parallel for\n for (int i = 0; i < 4; i++) t[i] = i; return 0; }",
    "absolute-value": "#include <cstdlib>\nint p_av(double d) { return abs(d); }",
    "inconsistent-missing-override": "struct IB { virtual int f(); virtual int g(); }; struct ID : IB { int f() override; int g(); };",
    "overloaded-virtual": "struct OB { virtual int f(int); }; struct OD : OB { int f(double); };",
    "dynamic-class-memaccess": "#include <cstring>\nstruct DCM { virtual ~DCM(); int x; }; void p_dcm(DCM *d) { memset(d, 0, sizeof(*d)); }",
    "range-loop-construct": "#include <vector>\n#include <string>\nint p_rlc(const std::vector<std::string> &v) { int n = 0; for (const std::string s : v) n += s.size(); return n; }",
    "format-security": "void p_fs(const char *s) { printf(s); }",
    "self-move": "#include <utility>\nint p_sm(int a) { a = std::move(a); return a; }",
    "redundant-move": "#include <utility>\n#include <string>\nstd::string p_rm(std::string s) { return std::move(s); }",
    "unused-comparison-neq": "int p_ucn(int a) { a != 1; return a; }",
    "for-loop-analysis": "int p_fla(int n) { int s = 0; for (int i = 0; i < n; ) s++; return s; }",
    "missing-braces": "struct MB { int a[2]; }; int p_mb() { MB m = {1, 2}; return m.a[0]; }",
    "unneeded-internal-declaration": "static int p_uid_f() { return 1; } int p_uid() { return sizeof(p_uid_f()); }",
    "null-arithmetic": "int p_na(int a) { return a + NULL; }",
    "deprecated-enum-compare/arith": "enum EA { EA1 }; enum EB { EB1 }; int p_dea() { return EA1 + EB1; }",
    "unused-value-cast": "int p_uvcast(int a) { (char)a; return a; }",
}

PROBE_HEAD = "#include <cstdio>\n#include <cstddef>\n__global__ void kernel_probe(int *p) { p[0] = 1; }\n"
PROBE_TAIL = "\nint main() { kernel_probe<<<1, 1>>>(nullptr); return 0; }\n"


def corpus_files(corpus):
    """(name, path, flags) of tests/corpus-programs.txt's files and samples/*.cu."""
    out = []
    with open(os.path.join(ROOT, "tests/corpus-programs.txt")) as listing:
        for line in listing:
            if line.startswith("#") or not line.strip():
                continue
            words = line.split()
            name, path, stream = words[0], os.path.join(corpus, words[1]), words[2]
            if name == "QT":
                continue
            flags = ["-I" + os.path.dirname(path)] + ["-I" + os.path.join(corpus, w) for w in words[3:] if not w.startswith("-")]
            if stream == "per-thread":
                flags += ["--default-stream", "per-thread"]
            out.append((name, path, flags))
    samples = os.path.join(ROOT, "samples")
    for f in sorted(os.listdir(samples)):
        if f.endswith(".cu"):
            out.append((f, os.path.join(samples, f), []))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["probes", "corpus"])
    ap.add_argument("--cdpc", required=True)
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus"))
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="werror-")
    if args.mode == "probes":
        files = []
        for i, (name, code) in enumerate(PROBES.items()):
            path = os.path.join(work, f"probe{i}.cu")
            with open(path, "w") as f:
                f.write(PROBE_HEAD + code + PROBE_TAIL)
            files.append((name, path, []))
    else:
        files = corpus_files(os.path.abspath(args.corpus))

    def one(job):
        (name, path, flags), werror = job
        out = os.path.join(work, f"{abs(hash((name, werror)))}.o")
        base = ["-dc", "-rdc=true", "-arch=sm_90", "-std=c++17"] + flags + [path, "-o", out]
        nvcc = subprocess.run([args.nvcc] + base + WERRORS[werror], capture_output=True).returncode != 0
        cdpc = subprocess.run([args.cdpc] + base + WERRORS[werror], capture_output=True).returncode != 0
        return name, werror, nvcc, cdpc

    jobs = [(f, w) for f in files for w in WERRORS]
    stricter, laxer = [], []
    with ThreadPoolExecutor(args.j) as pool:
        for name, werror, nvcc, cdpc in pool.map(one, jobs):
            verdict = "same" if nvcc == cdpc else ("CDPC FAILS, NVCC BUILDS" if cdpc else "nvcc fails, cdpc builds")
            print(f"{name:40s} {werror:48s} nvcc {'fail' if nvcc else 'ok  '} cdpc {'fail' if cdpc else 'ok  '} {verdict}", flush=True)
            (stricter if cdpc and not nvcc else laxer if nvcc and not cdpc else []).append((name, werror))
    print(f"\n{len(files)} files, {len(WERRORS)} options each: cdpc fails where nvcc builds {len(stricter)}, nvcc fails where cdpc builds {len(laxer)}")
    return 1 if stricter else 0


if __name__ == "__main__":
    sys.exit(main())
