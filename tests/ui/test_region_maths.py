"""Logical region → device pixels: 2x, fractional scales, two monitors, drags either way."""

from __future__ import annotations

from app.ui.region import Crop, Rect, ScreenGeometry, device_crop

RETINA = ScreenGeometry(Rect(0, 0, 1440, 900), 2.0)
SIDE = ScreenGeometry(Rect(1440, 0, 1920, 1080), 1.0)


def test_a_region_on_a_2x_screen_is_twice_its_logical_size_in_pixels() -> None:
    assert device_crop(Rect(100, 50, 400, 300), [RETINA]) == Crop(0, 200, 100, 800, 600)


def test_a_drag_up_and_left_spans_the_same_region() -> None:
    assert Rect.spanning(500, 350, 100, 50) == Rect(100, 50, 400, 300)


def test_the_second_monitor_is_cut_in_its_own_pixels() -> None:
    # 1x monitor right of a 2x one: its own origin, its own scale (not always the first monitor)
    assert device_crop(Rect(1540, 100, 600, 400), [RETINA, SIDE]) == Crop(1, 100, 100, 600, 400)


def test_a_monitor_left_of_the_primary_has_negative_logical_coordinates() -> None:
    left = ScreenGeometry(Rect(-1280, 0, 1280, 800), 2.0)
    assert device_crop(Rect(-1000, 10, 200, 100), [SIDE, left]) == Crop(1, 560, 20, 400, 200)


def test_a_region_across_two_screens_is_cut_from_the_larger_part() -> None:
    crop = device_crop(Rect(1240, 100, 400, 200), [RETINA, SIDE])  # 200 px on each: the first wins ties
    assert crop == Crop(0, 2480, 200, 400, 400)
    crop = device_crop(Rect(1340, 100, 400, 200), [RETINA, SIDE])  # 100 on the Retina, 300 beside it
    assert crop == Crop(1, 0, 100, 300, 200)


def test_fractional_scales_round_and_stay_inside_the_grab() -> None:
    windows = ScreenGeometry(Rect(0, 0, 1536, 864), 1.25, pixels=(1920, 1080))
    assert device_crop(Rect(1000, 600, 600, 400), [windows]) == Crop(0, 1250, 750, 670, 330)


def test_a_click_or_a_region_off_every_screen_is_none() -> None:
    assert device_crop(Rect(10, 10, 3, 3), [RETINA]) is None
    assert device_crop(Rect(5000, 5000, 100, 100), [RETINA, SIDE]) is None
