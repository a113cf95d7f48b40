#!/usr/bin/env python3
"""Packages cdpc for sccache-dist's build servers (docs/SCCACHE.md, "Distributed compilation").

    scripts/sccache-dist-toolchain.py CDPC ARCHIVE.tar.gz

A build server runs a distributed compilation in a sandbox whose files are the toolchain
archive's alone, plus the step's input. cdpc's step (`cdpc-steps/cicc --step-compile`) writes
the headers its bundle carries where they are missing, so the archive needs what cdpc itself
runs and reads that is not a header: cdpc, the NVIDIA tools it drives (ptxas, nvlink,
fatbinary, libcudadevrt.a, libdevice, CUDA's headers, which its search checks for), Clang's
resource headers, the host compiler (cdpc asks it for its own include folder, and Clang's
driver finds GCC's installation by its files), the shared libraries of each program, and the
symbolic links on the way to each (`/lib -> usr/lib`), every file at the path it has here.
The CUDA folder and the resource folder are the ones cdpc names in `cdpc -v -E` of a probe.

It prints the client's `[[dist.toolchains]]` entry for sccache's configuration: sccache
matches a step by its program, `cdpc-steps/cicc` beside CDPC (made by `cdpc --dryrun --keep`,
which this script runs), and runs CDPC from the archive.
"""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

# The host compiler's programs cdpc may run (`-ccbin` aside), as cdpc looks for them on PATH.
HOST_PROGRAMS = ["c++", "g++", "cc", "gcc"]
# Big programs of GCC's installation folder that nothing of cdpc's runs.
GCC_SKIPPED = {"cc1", "cc1plus", "cc1obj", "lto1", "lto-wrapper", "collect2", "f951", "plugin"}
CUDA_PARTS = ["bin/ptxas", "bin/nvlink", "bin/fatbinary", "include", "nvvm/libdevice", "lib/libcudadevrt.a"]


class Archive:
    def __init__(self):
        self.members = {}  # path -> kind ("file", "dir", "link")

    def add(self, path, recursive=True, skip=()):
        """`path` as it is here, with each symbolic link met on the way to it."""
        path = os.path.abspath(path)
        parts = path.strip("/").split("/")
        prefix = ""
        for i, part in enumerate(parts):
            prefix += "/" + part
            if os.path.islink(prefix):
                if prefix not in self.members:
                    self.members[prefix] = "link"
                    target = os.path.join(os.path.dirname(prefix), os.readlink(prefix))
                    self.add(target, recursive=False)
                rest = "/".join(parts[i + 1:])
                if rest:
                    real = os.path.join(os.path.dirname(prefix), os.readlink(prefix), rest)
                    self.add(real, recursive, skip)
                return
        if os.path.isdir(path):
            self.members[path] = "dir"
            if recursive:
                for name in sorted(os.listdir(path)):
                    if name not in skip:
                        self.add(os.path.join(path, name), True, skip)
        elif os.path.isfile(path):
            self.members[path] = "file"

    def add_program(self, path):
        """A program and the shared libraries `ldd` names for it, with its interpreter."""
        self.add(path, recursive=False)
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        for lib in re.findall(r"(/\S+) \(0x", out):
            self.add(lib, recursive=False)

    def write(self, archive):
        with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
            tmp = tarfile.TarInfo("tmp")
            tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
            tar.addfile(tmp)
            for path in sorted(self.members):
                tar.add(path, arcname=path.lstrip("/"), recursive=False)


def probe(cdpc):
    """The CUDA folder and Clang's resource folder, from `cdpc -v -E` of a probe file."""
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "probe.cu")
        with open(source, "w") as f:
            f.write("__global__ void probe() {}\n")
        env = dict(os.environ, CDPC_CACHE_DIR="")
        out = subprocess.run([cdpc, "-v", "-E", source], capture_output=True, text=True, env=env, cwd=work)
        text = out.stdout + out.stderr
        cuda = re.search(r"--cuda-path=(\S+)", text)
        resource = re.search(r"-resource-dir (\S+)", text)
        if out.returncode != 0 or not cuda or not resource:
            sys.exit(f"cdpc -v -E of a probe file named no CUDA or resource folder:\n{text}")
        # The step program sccache recognises, made by cdpc's own dry run.
        subprocess.run([cdpc, "-c", source, "-o", os.path.join(work, "probe.o"), "--dryrun", "--keep"], capture_output=True, env=env, cwd=work)
        return cuda.group(1), resource.group(1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cdpc = os.path.realpath(shutil.which(sys.argv[1]) or sys.argv[1])
    archive_path = os.path.abspath(sys.argv[2])
    cuda, resource = probe(cdpc)
    archive = Archive()
    archive.add_program(cdpc)
    for part in CUDA_PARTS:
        path = os.path.join(cuda, part)
        if part.startswith("bin/"):
            archive.add_program(path)
        elif os.path.exists(path):
            archive.add(path)
    archive.add(os.path.join(resource, "include"))
    gcc_dirs = set()
    for name in HOST_PROGRAMS:
        program = shutil.which(name)
        if not program:
            continue
        archive.add_program(os.path.realpath(program))
        archive.add(program, recursive=False)
        # GCC's installation folder, whose `include` cdpc asks for.
        include = subprocess.run([program, "-print-file-name=include"], capture_output=True, text=True).stdout.strip()
        if os.path.isabs(include):
            gcc_dirs.add(os.path.dirname(include))
    for path in sorted(gcc_dirs):
        archive.add(path, skip=GCC_SKIPPED)
    archive.write(archive_path)
    steps = os.path.join(os.path.dirname(cdpc), "cdpc-steps", "cicc")
    print("[[dist.toolchains]]")
    print('type = "path_override"')
    print(f'compiler_executable = "{steps}"')
    print(f'archive = "{archive_path}"')
    print(f'archive_compiler_executable = "{cdpc}"')


if __name__ == "__main__":
    main()
