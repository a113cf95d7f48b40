#!/usr/bin/env python3
"""The linker of the Python extension (`cargo xtask wheel`): rustc's link of `lib_cdpc.so`,
done by `zig cc -target x86_64-linux-gnu.2.28` so that the wheel installs on glibc 2.28 and
newer (manylinux_2_28), although LLVM 22 and this machine's libraries come from a newer glibc.

rustc calls it with a gcc-style command line. It is changed so:
  * zig's linker links against glibc 2.28's symbol versions (zig ships those stubs);
  * libstdc++, zlib, zstd, libffi and libxml2 are linked statically from this machine's
    archives, so the wheel needs no libstdc++ newer than the user's and bundles no .so;
  * rustc's choice of lld through gcc (`-fuse-ld=lld`, `-B.../gcc-ld`) is dropped: zig links
    with its own lld;
  * compat.c supplies `__libc_single_threaded`, which libstdc++.a reads and glibc 2.28 lacks;
  * the library is named `_cdpc.abi3.so` (its SONAME) and its references to Python's own
    symbols are made weak (`weaken_python`): the extension is also the C API's library
    (docs/EMBEDDING.md), which C programs link and load where no Python is.

`CDPC_ZIG` names the zig to run (`python -m ziglang` from PyPI's `ziglang` when unset: the
xtask installs it into the build venv). The linked library is then checked (`objdump -T`) and
removed, failing the build, if anything in it would not load on glibc 2.28: a GLIBC version
above 2.28, a GLIBCXX version, a symbol undefined without a version that is not Python's.
"""
import os
import shutil
import subprocess
import sys
import tempfile

GLIBC = "2.28"
STATIC = {"stdc++", "z", "zstd", "ffi", "xml2"}
# Dropped: libz3 is listed by llvm-config but nothing the extension links uses it (the link
# would report its symbols as undefined and the check after the build would fail).
DROPPED_LIBS = {"z3"}
HERE = os.path.dirname(os.path.abspath(__file__))
# The extension's file name in the wheel (maturin's name for an abi3 module `cdpc._cdpc`).
SONAME = "_cdpc.abi3.so"


def archive(name):
    """The static archive of `-l<name>` that the system's C compiler finds (gcc also looks in
    its own folder, where libstdc++.a is). `CDPC_HOST_CC` names another compiler."""
    cxx = os.environ.get("CDPC_HOST_CC", "cc")
    out = subprocess.run([cxx, f"-print-file-name=lib{name}.a"], capture_output=True, text=True, check=True).stdout.strip()
    if not os.path.isabs(out) or not os.path.isfile(out):
        sys.exit(f"link.py: lib{name}.a not found (`{cxx} -print-file-name=lib{name}.a` says `{out}`): install its -dev package")
    return out


def zig():
    if os.environ.get("CDPC_ZIG"):
        return [os.environ["CDPC_ZIG"]]
    return [sys.executable, "-m", "ziglang"]


def main(args):
    out = []
    skip_next = False
    for i, arg in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if arg.startswith("-B") or arg.startswith("-fuse-ld="):
            continue
        if arg == "-L" and i + 1 < len(args) and args[i + 1] in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"):
            # The system's libraries would shadow zig's glibc stubs.
            skip_next = True
            continue
        if arg.startswith("-l") and arg[2:] in STATIC:
            out.append(archive(arg[2:]))
            continue
        if arg.startswith("-l") and arg[2:] in DROPPED_LIBS:
            continue
        out.append(arg)
    if not any("-soname" in arg for arg in out):
        # The name C programs record (DT_NEEDED) when they link the extension as the C API's
        # library: `-l:_cdpc.abi3.so`, found through their rpath (cdpc.pc).
        out.append(f"-Wl,-soname,{SONAME}")
    with tempfile.TemporaryDirectory(prefix="cdpc-link-") as tmp:
        compat = os.path.join(tmp, "compat.o")
        cc = zig() + ["cc", "-target", f"x86_64-linux-gnu.{GLIBC}"]
        subprocess.run(cc + ["-c", "-O2", "-fPIC", os.path.join(HERE, "compat.c"), "-o", compat], check=True)
        status = subprocess.run(cc + out + [compat]).returncode
    if status != 0:
        return status
    output = args[args.index("-o") + 1]
    weaken_python(output)
    problems = check(output)
    if problems:
        os.remove(output)
        sys.exit("link.py: {} would not load on glibc {}:\n  {}".format(output, GLIBC, "\n  ".join(problems)))
    return 0


def weaken_python(path):
    """Makes every undefined dynamic symbol of Python's (`Py...`, `_Py...`) weak, in place.

    A Python process defines them, and the dynamic loader binds weak references like any other
    there. A C program that links the extension as the C API's library has no Python: the
    linker accepts weak undefined symbols of a shared library (strong ones fail the link), and
    the loader leaves them null instead of refusing the library. Only the extension's Python
    module (`PyInit__cdpc`) uses them, and Python alone calls it."""
    import struct

    with open(path, "r+b") as f:
        data = bytearray(f.read())
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            sys.exit(f"link.py: {path} is not a 64-bit little-endian ELF file")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        changed = 0
        for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
            if kind != 11:  # SHT_DYNSYM
                continue
            strtab = sections[link][4]
            for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
                st_name, st_info, _other, st_shndx = struct.unpack_from("<IBBH", data, at)
                end = data.index(0, strtab + st_name)
                name = data[strtab + st_name:end].decode()
                if st_shndx == 0 and st_info >> 4 == 1 and name.startswith(("Py", "_Py")):  # SHN_UNDEF, STB_GLOBAL
                    data[at + 4] = (2 << 4) | (st_info & 0xF)  # STB_WEAK
                    changed += 1
        if changed:
            f.seek(0)
            f.write(data)


def check(path):
    """What keeps `path` from loading on glibc GLIBC: symbol versions above it, libstdc++
    versions (libstdc++ is linked statically), symbols left undefined without a version that
    are neither weak nor Python's (a glibc function newer than GLIBC: zig leaves those
    undefined, and the dynamic loader of an older glibc would refuse the library)."""
    table = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
    limit = tuple(int(x) for x in GLIBC.split("."))
    problems = []
    for line in table.splitlines():
        fields = line.split()
        if "*UND*" not in fields:
            continue
        name = fields[-1]
        version = next((f.strip("()") for f in fields if f.startswith("(") and f.endswith(")")), None)
        weak = fields[1] == "w"
        if version and version.startswith("GLIBC_") and tuple(int(x) for x in version[6:].split(".")) > limit:
            problems.append(f"{name} needs {version}")
        elif version and version.startswith(("GLIBCXX_", "CXXABI_")):
            problems.append(f"{name} needs libstdc++'s {version}")
        elif not version and not weak and not name.startswith(("Py", "_Py")):
            problems.append(f"{name} is undefined (add it to compat.c)")
    return problems


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
