"""packaging/macos/minos.py: the bundle's real macOS minimum, read from synthetic Mach-O files
whose load commands are written byte by byte (struct), the way the linker lays them out."""

from __future__ import annotations

import importlib.util
import plistlib
import struct
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("minos", ROOT / "packaging" / "macos" / "minos.py")
assert _spec is not None and _spec.loader is not None
minos = importlib.util.module_from_spec(_spec)
sys.modules["minos"] = minos
_spec.loader.exec_module(minos)

CPU_ARM64, CPU_X86_64 = 0x0100000C, 0x01000007
LC_UUID = 0x1B


def build_version(platform: int, version: str, sdk: str = "15.0") -> bytes:
    return struct.pack("<IIIIII", minos.LC_BUILD_VERSION, 24, platform,
                       minos.encode_version(minos.parse_version(version)),
                       minos.encode_version(minos.parse_version(sdk)), 0)


def version_min(version: str) -> bytes:
    return struct.pack("<IIII", minos.LC_VERSION_MIN_MACOSX, 16,
                       minos.encode_version(minos.parse_version(version)), 0)


def uuid_command() -> bytes:
    return struct.pack("<II", LC_UUID, 24) + bytes(range(16))


def thin(*commands: bytes, cpu: int = CPU_ARM64, bits: int = 64) -> bytes:
    body = b"".join(commands)
    if bits == 64:
        header = struct.pack("<IiiIIIII", minos.MH_MAGIC_64, cpu, 0, 6, len(commands), len(body), 0, 0)
    else:
        header = struct.pack("<IiiIIII", minos.MH_MAGIC, cpu, 0, 6, len(commands), len(body), 0)
    return header + body + b"\0" * 64  # some "code" after the commands


def fat(*images: tuple[int, bytes]) -> bytes:
    header = struct.pack(">II", minos.FAT_MAGIC, len(images))
    offset = 4096
    entries, blobs = b"", b""
    for cpu, image in images:
        entries += struct.pack(">iiIII", cpu, 0, offset + len(blobs), len(image), 12)
        blobs += image + b"\0" * (4096 - len(image) % 4096)
    return (header + entries).ljust(offset, b"\0") + blobs


def test_build_version_is_read_after_other_commands() -> None:
    data = thin(uuid_command(), build_version(minos.PLATFORM_MACOS, "14.0"))
    assert minos._thin_minos(data, 0) == (14, 0, 0)


def test_old_version_min_command_and_32_bit_images_are_read(tmp_path: Path) -> None:
    path = tmp_path / "old.so"
    path.write_bytes(thin(version_min("10.9"), bits=32, cpu=7))
    assert [s.minos for s in minos.read_slices(path)] == [(10, 9, 0)]


def test_a_non_macos_platform_names_no_macos_minimum(tmp_path: Path) -> None:
    path = tmp_path / "ios.dylib"
    path.write_bytes(thin(build_version(2, "17.0")))  # PLATFORM_IOS
    assert [s.minos for s in minos.read_slices(path)] == [None]


def test_every_slice_of_a_fat_file_counts(tmp_path: Path) -> None:
    path = tmp_path / "universal.so"
    path.write_bytes(fat((CPU_X86_64, thin(build_version(1, "10.13"), cpu=CPU_X86_64)),
                         (CPU_ARM64, thin(build_version(1, "14.2")))))
    slices = minos.read_slices(path)
    assert [s.minos for s in slices] == [(10, 13, 0), (14, 2, 0)]
    assert all(s.offset > 0 for s in slices)


def test_other_files_are_not_mach_o(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print('hi')\n")
    (tmp_path / "empty").write_bytes(b"")
    java = struct.pack(">IHH", 0xCAFEBABE, 0, 52)  # a Java class file shares the fat magic
    (tmp_path / "A.class").write_bytes(java + b"\0" * 32)
    assert list(minos.walk([tmp_path])) == []


def make_app(root: Path, plist_min: str, *binaries: tuple[str, bytes]) -> Path:
    app = root / "Interview Copilot.app"
    (app / "Contents" / "MacOS").mkdir(parents=True)
    with open(app / "Contents" / "Info.plist", "wb") as f:
        plistlib.dump({"LSMinimumSystemVersion": plist_min}, f)
    for name, data in binaries:
        target = app / "Contents" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return app


def test_a_binary_above_the_plist_minimum_fails_the_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = make_app(tmp_path, "13.0",
                   ("MacOS/interview-copilot", thin(build_version(1, "11.0"))),
                   ("Frameworks/onnxruntime/capi/onnxruntime.so", thin(build_version(1, "14.0"))),
                   ("Frameworks/README.txt", b"text"))
    assert minos.main(["--plist", str(app / "Contents" / "Info.plist"), str(app)]) == 1
    err = capsys.readouterr().err
    assert "needs macOS 14.0" in err and "onnxruntime.so" in err
    assert "interview-copilot" not in err.split("error:")[0]  # 11.0 is fine under 13.0


def test_all_binaries_at_or_below_the_minimum_pass(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = make_app(tmp_path, "14.0",
                   ("MacOS/interview-copilot", thin(build_version(1, "11.0"))),
                   ("Frameworks/onnxruntime.so", thin(build_version(1, "14.0"))))
    assert minos.main(["--plist", str(app / "Contents" / "Info.plist"), str(app)]) == 0
    assert "highest minimum macOS 14.0" in capsys.readouterr().out


def test_a_tree_without_mach_o_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("no binaries")
    assert minos.main(["--max", "14.0", str(tmp_path)]) == 1


def test_the_shipped_plist_states_14() -> None:
    with open(ROOT / "packaging" / "macos" / "Info.plist", "rb") as f:
        assert f.read().count(b"<string>14.0</string>") == 1
    assert minos.plist_minimum(ROOT / "packaging" / "macos" / "Info.plist") == (14, 0, 0)
