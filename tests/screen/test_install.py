"""What the screen reader needs is installed as the installers carry it: models inside the
rapidocr wheel, OpenCV headless only, the licences in the About box and packaging/licenses."""

from __future__ import annotations

import tomllib
from pathlib import Path

from app.screen.ocr import DETECTOR, RECOGNISER, model_folder
from app.session.about import about_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_models_come_with_the_wheel_not_from_a_hub() -> None:
    for name in (DETECTOR, RECOGNISER):
        assert (model_folder() / name).stat().st_size > 1_000_000


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
    assert "PP-OCRv6" in text and "PaddleOCR (Baidu), Apache-2.0 licence" in text
    assert "RapidOCR (screen reading)" in text
    licence = (ROOT / "packaging" / "licenses" / "RapidOCR-PP-OCR-Apache-2.0.txt").read_text(encoding="utf-8")
    assert "Apache License" in licence and "PP-OCRv6" in licence
    assert "RapidOCR-PP-OCR-Apache-2.0.txt" in (ROOT / "packaging" / "licenses" / "README.txt").read_text()
