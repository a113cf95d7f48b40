#!/usr/bin/env python3
"""Merges archives of `corpus-timing.py --stage build` into one, so that builds of two cdpc
binaries (before and after a change) are timed in the same run, interleaved round by round:

    bundle-merge.py OUT.tar.xz before.tar.xz:-before after.tar.xz

Each input is `PATH[:SUFFIX]`: its variants are renamed VARIANT + SUFFIX (nvcc's is never
renamed, and is taken from the first archive that has it). Programs must be the same in all.
`PATH:SUFFIX+nvcc` renames nvcc's build too (`nvcc` + SUFFIX): a build of changed sources (a
copy of the corpus with a program rewritten by hand, `--corpus`) timed beside nvcc's own.
The run stage then times every variant of OUT as usual (`--stage run --bundle OUT.tar.xz`).
"""
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time

MANIFEST = "manifest.json"


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, inputs = sys.argv[1], sys.argv[2:]
    work = tempfile.mkdtemp()
    try:
        merged = None
        for i, spec in enumerate(inputs):
            path, _, suffix = spec.partition(":")
            suffix, plus, what = suffix.partition("+")
            if plus and what != "nvcc":
                raise SystemExit(f"bundle-merge: {spec!r}: only `+nvcc` may follow the suffix")
            keep_nvcc = not plus
            into = os.path.join(work, f"in{i}")
            with tarfile.open(path, "r:xz") as tar:
                for m in tar.getmembers():
                    if not ((m.isfile() or m.isdir()) and not os.path.isabs(m.name) and ".." not in m.name.split("/")):
                        raise SystemExit(f"bundle-merge: {path} holds {m.name!r}, not one of the build stage's files")
                tar.extractall(into, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(into)
            with open(os.path.join(into, MANIFEST)) as f:
                manifest = json.load(f)
            if merged is None:
                merged = {**manifest, "variants": {}, "executables": {}, "failed": [], "built_with": []}
            elif manifest["programs"] != merged["programs"]:
                raise SystemExit(f"bundle-merge: {path} holds {manifest['programs']}, the first {merged['programs']}")
            merged["built_with"].append(f"{manifest['built_with']}" + (f" (variants suffixed {suffix})" if suffix else ""))
            rename = {v: v if v == "nvcc" and keep_nvcc else v + suffix for v in manifest["variants"]}
            for v, spec_v in manifest["variants"].items():
                if rename[v] in merged["variants"]:
                    continue
                merged["variants"][rename[v]] = spec_v
            for key, rel in manifest["executables"].items():
                name, variant = key.split(" ", 1)
                new_key = f"{name} {rename[variant]}"
                if new_key in merged["executables"]:
                    continue
                merged["executables"][new_key] = os.path.join(f"in{i}", rel)
            merged["failed"] += [f"{f} ({path})" for f in manifest["failed"]]
        merged["built_with"] = "; ".join(merged["built_with"])
        partial = out + ".partial"
        try:
            with tarfile.open(partial, "w:xz", preset=6) as tar:
                data = json.dumps(merged, indent=1).encode()
                info = tarfile.TarInfo(MANIFEST)
                info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                tar.addfile(info, io.BytesIO(data))
                # Each archive whole under its own folder: its executables beside the data
                # folders (inputs/, outputs/) they read from their working folder.
                for i in range(len(inputs)):
                    into = os.path.join(work, f"in{i}")
                    for entry in sorted(os.listdir(into)):
                        if entry != MANIFEST:
                            tar.add(os.path.join(into, entry), arcname=os.path.join(f"in{i}", entry))
            os.replace(partial, out)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
