"""How the cores are shared between the recogniser and llama.cpp (numbers only: the
speed behind them is measured by ``python -m devtools.bench.cores``)."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from app import audio
from app.frontends import cli
from app.platform import cores
from app.platform.cores import (
    WORDS_THREADS,
    limit_numpy_threads,
    pass_threads,
    server_threads,
    spare_words_threads,
)


def test_llama_cpp_gets_only_the_cores_the_recogniser_leaves() -> None:
    assert [server_threads(n) for n in (1, 2, 3, 4, 5, 6, 8, 16)] == [1, 1, 1, 1, 1, 1, 3, 4]
    assert WORDS_THREADS == 1
    for n in (6, 8, 16, 64):  # enough cores: the three engines never ask for more than there are
        assert pass_threads(n) + WORDS_THREADS + server_threads(n) <= n


def test_a_verdict_the_recogniser_waits_for_borrows_one_core_where_there_is_one() -> None:
    assert [spare_words_threads(n) for n in (1, 2, 4, 16)] == [1, 2, 2, 2]


def test_numpy_blas_is_held_to_one_thread() -> None:
    """OpenBLAS's idle worker spins for tens of milliseconds after each product: one
    thread, so it never takes a core beside a recognition pass (decision 0028)."""
    with threadpool_limits(limits=2, user_api="blas"):
        limit_numpy_threads()
        blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
        if not blas:
            pytest.skip("numpy's BLAS here is one threadpoolctl cannot see (Accelerate)")
        assert [pool["num_threads"] for pool in blas] == [1] * len(blas)


def test_the_app_holds_numpy_to_one_thread_as_it_starts(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[str] = []
    monkeypatch.setattr(cores, "limit_numpy_threads", lambda: calls.append("limited"))
    monkeypatch.setattr(audio, "format_device_list", lambda: "")  # whatever this machine's audio
    assert cli.main(["--list-devices"]) == 0
    assert calls == ["limited"]
