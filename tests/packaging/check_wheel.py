"""Checks that a built wheel is what PyPI and manylinux2014 (glibc 2.17) users
can install: its tags, the highest GLIBC symbol version its extension needs
(objdump -T), the libraries it links (all from the manylinux2014 set), that
the extension is stripped, that the typing files and the ``sandbox-reclaim``
console script ship, and auditwheel's verdict.

    python tests/packaging/check_wheel.py <wheel> [--max-glibc 2.17]

Exits non-zero, naming every problem, when any check fails.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# The libraries a manylinux2014 extension may link against (PEP 599).
MANYLINUX2014_LIBS = {
    "libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libc.so.6",
    "libnsl.so.1", "libutil.so.1", "libpthread.so.0", "libresolv.so.2", "libX11.so.6",
    "libXext.so.6", "libXrender.so.1", "libICE.so.6", "libSM.so.6", "libGL.so.1",
    "libgobject-2.0.so.0", "libgthread-2.0.so.0", "libglib-2.0.so.0",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
}


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        sys.exit(f"check_wheel: {name} is required (Debian package binutils)")
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--max-glibc", default="2.17")
    args = parser.parse_args()
    wheel: Path = args.wheel
    max_glibc = version(args.max_glibc)
    problems: list[str] = []

    # Tags: the file name's and the WHEEL metadata's must agree, abi3 for CPython >= 3.10,
    # manylinux2014 (= manylinux_2_17) x86_64.
    name_tags = wheel.name.removesuffix(".whl").split("-")[-3:]
    expected_platforms = {"manylinux2014_x86_64", "manylinux_2_17_x86_64"}
    if name_tags[:2] != ["cp310", "abi3"] or set(name_tags[2].split(".")) != expected_platforms:
        problems.append(f"file name tags {'-'.join(name_tags)}, expected cp310-abi3-{'.'.join(sorted(expected_platforms))}")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        wheel_file = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        tags = {
            line.split(":", 1)[1].strip()
            for line in archive.read(wheel_file).decode().splitlines()
            if line.startswith("Tag:")
        }
        if tags != {f"cp310-abi3-{platform}" for platform in expected_platforms}:
            problems.append(f"WHEEL tags {sorted(tags)}")
        for required in ("sandbox_reclaim/py.typed", "sandbox_reclaim/_native.pyi", "sandbox_reclaim/__init__.py"):
            if required not in names:
                problems.append(f"{required} is not in the wheel")
        # The `sandbox-reclaim` console script pip installs (pyproject's [project.scripts]).
        entry_points = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        lines = archive.read(entry_points[0]).decode().splitlines() if entry_points else []
        # `name = target` (spaces around "=" are optional) in [console_scripts].
        scripts = ["=".join(part.strip() for part in line.split("=", 1)) for line in lines]
        if "[console_scripts]" not in scripts or "sandbox-reclaim=sandbox_reclaim._cli:main" not in scripts:
            problems.append(f"no console script sandbox-reclaim = sandbox_reclaim._cli:main in entry_points.txt: {lines}")
        extensions = [n for n in names if n.endswith(".so")]
        if extensions != ["sandbox_reclaim/_native.abi3.so"]:
            problems.append(f"extensions {extensions}, expected sandbox_reclaim/_native.abi3.so")
        with tempfile.TemporaryDirectory() as tmp:
            for extension in extensions:
                path = Path(archive.extract(extension, tmp))
                symbols = subprocess.run([tool("objdump"), "-T", str(path)], check=True, capture_output=True, text=True).stdout
                # (version, symbol) for each dynamic symbol with a GLIBC_x.y version.
                versioned = [
                    (version(match.group(1)), line.split()[-1])
                    for line in symbols.splitlines()
                    if (match := re.search(r"\bGLIBC_([0-9]+(?:\.[0-9]+)+)\b", line))
                ]
                glibc = sorted({v for v, _ in versioned})
                if not glibc:
                    problems.append(f"{extension}: no GLIBC symbol versions found (objdump -T output unexpected)")
                elif glibc[-1] > max_glibc:
                    too_new = sorted({symbol for v, symbol in versioned if v > max_glibc})
                    problems.append(f"{extension} needs GLIBC_{'.'.join(map(str, glibc[-1]))} > {args.max_glibc}: {', '.join(too_new)}")
                print(f"{extension}: highest GLIBC symbol version {'.'.join(map(str, glibc[-1])) if glibc else '?'} (limit {args.max_glibc})")
                dynamic = subprocess.run([tool("readelf"), "-d", str(path)], check=True, capture_output=True, text=True).stdout
                needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
                outside = sorted(set(needed) - MANYLINUX2014_LIBS)
                if outside:
                    problems.append(f"{extension} links libraries outside manylinux2014: {outside}")
                print(f"{extension}: links {', '.join(needed)}")
                sections = subprocess.run([tool("readelf"), "-S", "-W", str(path)], check=True, capture_output=True, text=True).stdout
                if re.search(r"\]\s+\.symtab\s", sections):
                    problems.append(f"{extension} is not stripped (has .symtab)")
                print(f"{extension}: {path.stat().st_size} bytes, stripped")

    # auditwheel, PyPA's own checker, must agree on the platform tag.
    audit = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(wheel)], capture_output=True, text=True)
    verdict = " ".join((audit.stdout + audit.stderr).split())
    if audit.returncode != 0 or 'consistent with the following platform tag: "manylinux_2_17_x86_64"' not in verdict:
        problems.append(f"auditwheel show: {verdict}")
    else:
        print("auditwheel show: consistent with manylinux_2_17_x86_64")

    for problem in problems:
        print(f"check_wheel: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_wheel: {wheel.name} is manylinux2014 (glibc <= {args.max_glibc}), abi3, stripped, typed, with its console script")
    return 0


if __name__ == "__main__":
    sys.exit(main())
