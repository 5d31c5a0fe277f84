"""Draw the app icon with QPainter and write assets/icon.png, icon.ico and icon.icns.

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/make_icons.py [--out assets]

Everything is done with Qt and the standard library (no Pillow): the 512x512 PNG is
painted once and scaled for the other sizes; .ico and .icns are written by the small
container writers below, both holding PNG-compressed images, which Windows Vista+ and
macOS 10.7+ read.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QImage, QLinearGradient, QPainter, QPen

ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# icns element types holding PNG data, by pixel size (the @2x types reuse the bigger images)
ICNS_TYPES = (
    (b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128), (b"ic08", 256), (b"ic09", 512),
    (b"ic11", 32), (b"ic12", 64), (b"ic13", 256), (b"ic14", 512),
)


def draw(size: int = 512) -> QImage:
    """A rounded blue square with a white speech bubble and a green "live" waveform."""
    img = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = size / 512
    grad = QLinearGradient(QPointF(0, 0), QPointF(0, size))
    grad.setColorAt(0, QColor("#3b82f6"))
    grad.setColorAt(1, QColor("#1e3a8a"))
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(grad))
    p.drawRoundedRect(QRectF(16 * s, 16 * s, 480 * s, 480 * s), 96 * s, 96 * s)
    # speech bubble
    p.setBrush(QColor("white"))
    p.drawRoundedRect(QRectF(86 * s, 110 * s, 340 * s, 230 * s), 60 * s, 60 * s)
    tail = [QPointF(150 * s, 320 * s), QPointF(130 * s, 410 * s), QPointF(230 * s, 330 * s)]
    p.drawPolygon(tail)
    # waveform bars inside the bubble
    pen = QPen(QColor("#10b981"), 26 * s, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap)
    p.setPen(pen)
    for i, height in enumerate((40, 100, 150, 90, 130, 60)):
        x = (146 + i * 44) * s
        p.drawLine(QPointF(x, (225 - height / 2) * s), QPointF(x, (225 + height / 2) * s))
    p.end()
    return img


def png_bytes(img: QImage, size: int) -> bytes:
    scaled = img if img.width() == size else img.scaled(
        size, size, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if not scaled.save(buf, "PNG"):
        raise RuntimeError("Qt could not encode PNG")
    buf.close()
    return bytes(data.data())


def ico_bytes(images: dict[int, bytes]) -> bytes:
    """ICONDIR + ICONDIRENTRY[] + PNG payloads (width/height 0 means 256)."""
    sizes = sorted(images)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries, payload = b"", b""
    for size in sizes:
        data = images[size]
        dim = 0 if size >= 256 else size
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset + len(payload))
        payload += data
    return header + entries + payload


def icns_bytes(images: dict[int, bytes]) -> bytes:
    """'icns' + total length, then (type, 8 + len, PNG) elements, big-endian."""
    body = b"".join(kind + struct.pack(">I", 8 + len(images[size])) + images[size]
                    for kind, size in ICNS_TYPES)
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "assets"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    master = draw(1024)
    pngs = {size: png_bytes(master, size) for size in {*ICO_SIZES, *(s for _, s in ICNS_TYPES), 512}}
    (out / "icon.png").write_bytes(pngs[512])
    (out / "icon.ico").write_bytes(ico_bytes({s: pngs[s] for s in ICO_SIZES}))
    (out / "icon.icns").write_bytes(icns_bytes(pngs))
    for name in ("icon.png", "icon.ico", "icon.icns"):
        print(f"wrote {out / name} ({(out / name).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
