"""Checking and preparing a capture: files that are not images, one colour, scale, ink."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.screen.errors import NotAnImage, OneColour
from app.screen.picture import check_not_one_colour, load, one_colour_message, prepare
from devtools.screen_pages import render


def test_a_file_that_is_not_an_image_is_one_line(tmp_path: Path) -> None:
    text = tmp_path / "notes.png"
    text.write_text("not a picture")
    for path in (text, tmp_path / "missing.png", tmp_path):
        with pytest.raises(NotAnImage) as caught:
            load(path)
        assert "\n" not in str(caught.value)


def test_a_saved_screenshot_loads_as_rgb(tmp_path: Path) -> None:
    page = render("chat")
    loaded = load(page.save(tmp_path / "shot.png"))
    assert loaded.shape == page.image.shape and loaded.dtype == np.uint8


def test_one_colour_is_refused_and_a_faint_line_is_not() -> None:
    frame = np.full((200, 300, 3), 250, np.uint8)
    with pytest.raises(OneColour):
        check_not_one_colour(frame)
    frame[100, 10:200] = 160  # one grey line of text-like pixels
    check_not_one_colour(frame)


def test_the_macos_message_names_the_permission() -> None:
    message = one_colour_message(np.zeros((2, 2, 3), np.uint8), platform="darwin")
    assert "all black" in message
    assert "System Settings → Privacy & Security → Screen & System Audio Recording" in message


def test_a_2x_page_is_halved_and_a_1x_page_is_kept() -> None:
    assert prepare(render("problem").image).scale == 1.0
    assert 0.4 <= prepare(render("problem", scale=2).image).scale <= 0.7


def test_dark_and_light_pages_give_the_same_ink() -> None:
    light = prepare(render("chat").image).image.astype(int)
    dark = prepare(render("chat", theme="dark").image).image.astype(int)
    assert np.median(light) >= 240 and np.median(dark) >= 240  # white paper either way
    light_ink, dark_ink = (light < 128).mean(), (dark < 128).mean()
    assert light_ink > 0.01 and abs(light_ink - dark_ink) < 0.15 * light_ink  # the same dark glyphs on it


def test_only_the_part_with_text_is_given_to_the_detector() -> None:
    from devtools.screen_pages import full_screen

    prepared = prepare(full_screen().image).image
    assert prepared.shape[0] < 600 and prepared.shape[1] < 1500  # the page's text, not 1920x1080


def test_text_with_blank_around_it_is_scaled_alone_and_stays_where_it_was() -> None:
    """Only the part with ink is prepared: scaled by the same factor both ways (not stretched
    back over the blank around it), at the place ``to_prepared`` says."""
    page = render("problem", scale=2).image
    screen = np.full((page.shape[0] + 900, page.shape[1] + 1200, 3), 255, np.uint8)
    screen[300:300 + page.shape[0], 500:500 + page.shape[1]] = page
    prepared = prepare(screen)
    assert prepared.scale != 1.0
    ink = np.argwhere(prepared.image[..., 0] < 128)
    (top, left), (bottom, right) = ink.min(axis=0), ink.max(axis=0)
    page_ink = np.argwhere(page[..., 0] < 128)
    (page_top, page_left), (page_bottom, page_right) = page_ink.min(axis=0), page_ink.max(axis=0)
    for (x, y), (px, py) in (((500 + page_left, 300 + page_top), (left, top)),
                             ((500 + page_right, 300 + page_bottom), (right, bottom))):
        expected_x, expected_y = prepared.to_prepared(x, y)
        assert abs(expected_x - px) <= 3 and abs(expected_y - py) <= 3
