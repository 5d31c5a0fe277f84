"""The lowest macOS a bundle runs on, read from its binaries; fail if Info.plist promises less.

Every Mach-O file records the oldest macOS it was linked for: ``LC_BUILD_VERSION``'s
``minos`` (or the older ``LC_VERSION_MIN_MACOSX``).  dyld refuses to load a library whose
minimum is above the running system, so the app's real minimum is the highest of them —
whatever ``LSMinimumSystemVersion`` says.  A wheel built for a newer macOS (onnxruntime,
PySide6, numpy) silently raises it; this script makes that a build failure instead of a
crash on a user's Mac.

    python packaging/macos/minos.py [--plist APP/Contents/Info.plist | --max 14.0] PATH...

Prints the highest minimum found and every file above the limit; exit 1 when any is.
Pure Python (struct), so the rule is tested on Linux with synthetic headers
(tests/packaging/test_macos_minos.py); ``vtool -show-build`` shows the same numbers on a Mac.
"""

from __future__ import annotations

import argparse
import os
import plistlib
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MH_MAGIC_64, MH_MAGIC = 0xFEEDFACF, 0xFEEDFACE  # read little-endian (every Mac CPU since 2006)
FAT_MAGIC, FAT_MAGIC_64 = 0xCAFEBABE, 0xCAFEBABF  # the fat header is big-endian
LC_BUILD_VERSION = 0x32
LC_VERSION_MIN_MACOSX = 0x24
PLATFORM_MACOS = 1
MAX_FAT_ARCHS = 30
"""A fat header with more slices than any real one is a Java class file (same magic)."""

Version = tuple[int, int, int]


@dataclass(frozen=True)
class Slice:
    path: Path
    offset: int
    minos: Version | None
    """None: the slice names no macOS minimum (an iOS slice, or no version command)."""


def decode_version(value: int) -> Version:
    """Mach-O's packed ``xxxx.yy.zz`` (nibbles) into (major, minor, patch)."""
    return value >> 16, (value >> 8) & 0xFF, value & 0xFF


def encode_version(version: Version) -> int:
    major, minor, patch = version
    return (major << 16) | (minor << 8) | patch


def parse_version(text: str) -> Version:
    parts = [int(p) for p in text.strip().split(".")]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"not a version: {text!r}")
    parts += [0] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


def show(version: Version | None) -> str:
    if version is None:
        return "none"
    major, minor, patch = version
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


def _thin_minos(data: bytes, offset: int) -> Version | None:
    """The macOS minimum of one thin Mach-O image starting at ``offset``."""
    (magic,) = struct.unpack_from("<I", data, offset)
    header_size = 32 if magic == MH_MAGIC_64 else 28
    ncmds, sizeofcmds = struct.unpack_from("<II", data, offset + 16)
    at, end = offset + header_size, offset + header_size + sizeofcmds
    found: Version | None = None
    for _ in range(ncmds):
        if at + 8 > min(end, len(data)):
            break
        cmd, cmdsize = struct.unpack_from("<II", data, at)
        if cmd == LC_BUILD_VERSION:
            platform, minos = struct.unpack_from("<II", data, at + 8)
            if platform == PLATFORM_MACOS:
                found = decode_version(minos)
        elif cmd == LC_VERSION_MIN_MACOSX and found is None:
            (version,) = struct.unpack_from("<I", data, at + 8)
            found = decode_version(version)
        if cmdsize < 8:
            break  # a corrupt command would loop forever
        at += cmdsize
    return found


def read_slices(path: Path) -> list[Slice]:
    """Each Mach-O image in ``path`` (one, or one per architecture of a fat file);
    [] for any other file."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return []
            little = struct.unpack_from("<I", head)[0]
            big = struct.unpack_from(">I", head)[0]
            if little not in (MH_MAGIC, MH_MAGIC_64) and big not in (FAT_MAGIC, FAT_MAGIC_64):
                return []
            data = head + f.read()
    except OSError:
        return []
    if little in (MH_MAGIC, MH_MAGIC_64):
        return [Slice(path, 0, _thin_minos(data, 0))]
    (count,) = struct.unpack_from(">I", data, 4)
    if count > MAX_FAT_ARCHS:
        return []
    slices: list[Slice] = []
    for i in range(count):
        if big == FAT_MAGIC_64:  # cputype, cpusubtype, offset (u64), size (u64), align, reserved
            (offset,) = struct.unpack_from(">Q", data, 8 + i * 32 + 8)
        else:  # cputype, cpusubtype, offset, size, align
            (offset,) = struct.unpack_from(">I", data, 8 + i * 20 + 8)
        if offset + 28 <= len(data) and struct.unpack_from("<I", data, offset)[0] in (MH_MAGIC, MH_MAGIC_64):
            slices.append(Slice(path, offset, _thin_minos(data, offset)))
    return slices


def walk(roots: list[Path]) -> Iterator[Slice]:
    for root in roots:
        files = [root] if root.is_file() else sorted(
            Path(folder) / name for folder, _dirs, names in os.walk(root) for name in names)
        for file in files:
            if not file.is_symlink():
                yield from read_slices(file)


def plist_minimum(plist: Path) -> Version:
    with open(plist, "rb") as f:
        data = plistlib.load(f)
    value = data.get("LSMinimumSystemVersion")
    if not isinstance(value, str):
        raise SystemExit(f"error: {plist} has no LSMinimumSystemVersion")
    return parse_version(value)


def above(slices: list[Slice], limit: Version) -> list[Slice]:
    return [s for s in slices if s.minos is not None and s.minos > limit]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    limit = parser.add_mutually_exclusive_group(required=True)
    limit.add_argument("--plist", type=Path, help="read the limit from this Info.plist")
    limit.add_argument("--max", help="the limit, e.g. 14.0")
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    maximum = plist_minimum(args.plist) if args.plist else parse_version(args.max)
    slices = list(walk(args.paths))
    if not slices:
        print("error: no Mach-O files found in " + ", ".join(map(str, args.paths)), file=sys.stderr)
        return 1
    known = [s.minos for s in slices if s.minos is not None]
    highest = max(known) if known else None
    print(f"{len(slices)} Mach-O image(s); highest minimum macOS {show(highest)}; "
          f"LSMinimumSystemVersion {show(maximum)}")
    bad = above(slices, maximum)
    for s in bad:
        print(f"  needs macOS {show(s.minos)}: {s.path}" + (f" (slice at {s.offset})" if s.offset else ""),
              file=sys.stderr)
    if bad:
        print(f"error: {len(bad)} binary(ies) need a newer macOS than LSMinimumSystemVersion "
              f"{show(maximum)}: raise it (Info.plist and README) or build/pin those for the older one",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
