#!/usr/bin/env python3
"""The loops of a cubin's machine code (SASS), with what each iteration issues.

Where no GPU is at hand, the instructions a kernel issues per point are
the best measure of its compute cost: a memory-bound kernel whose passes
issue as long as its bytes take to move cannot hide one behind the other.
This lists every loop of each kernel in a cubin (a backward branch to a
label), with its instruction count and its loads, stores, shared-memory
accesses, special-function instructions (exp, reciprocal) and branches:

    build/apps/app_softmax_generator -g softmax -o /tmp/sm -e cuda target=host-cuda-sm_90
    python3 scripts/sass_loops.py /tmp/sm/softmax.cubin [--dump]

--dump prints the SASS of each loop too. It needs nvdisasm, from the CUDA
toolkit or `pip install nvidia-cuda-nvdisasm` (NVDISASM=path, or on the
PATH, or in that package).
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

KINDS = ["LDG", "STG", "LDS", "STS", "MUFU", "BAR", "SHFL", "BRA"]


def find_nvdisasm():
    candidates = [os.environ.get("NVDISASM"), shutil.which("nvdisasm"),
                  "/usr/local/cuda/bin/nvdisasm"]
    for site in sys.path:
        candidates += glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "nvdisasm"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    sys.exit("nvdisasm not found: set NVDISASM, or `pip install nvidia-cuda-nvdisasm`")


def opcode(instruction):
    """The opcode of a SASS instruction, without its predicate."""
    words = instruction.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cubin")
    parser.add_argument("--dump", action="store_true", help="print each loop's SASS")
    args = parser.parse_args()
    sass = subprocess.run([find_nvdisasm(), "-c", args.cubin], capture_output=True, text=True,
                          check=True).stdout
    kernel, labels, code = None, {}, []

    def report():
        for i, instruction in enumerate(code):
            target = re.search(r"BRA `\((\.L_x_\d+)\)", instruction)
            if not target or target.group(1) not in labels or labels[target.group(1)] > i:
                continue
            body = code[labels[target.group(1)]:i + 1]
            counts = {k: sum(1 for b in body if opcode(b).split(".")[0] == k) for k in KINDS}
            print("  loop %-8s %4d instructions  %s" % (
                target.group(1), len(body),
                " ".join("%s %d" % (k, n) for k, n in counts.items() if n)))
            if args.dump:
                for b in body:
                    print("      " + b)

    for line in sass.splitlines():
        entry = re.match(r"\s*\.text\.(\S+):", line)
        label = re.match(r"^(\.L_x_\d+):", line)
        instruction = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(.*?)\s*;", line)
        if entry:
            if kernel:
                report()
            kernel, labels, code = entry.group(1), {}, []
            print(kernel)
        elif label:
            labels[label.group(1)] = len(code)
        elif instruction:
            code.append(instruction.group(1))
    if kernel:
        report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
