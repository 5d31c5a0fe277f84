"""How the cores are shared between the recogniser and llama.cpp (numbers only: the
speed behind them is measured by ``python -m devtools.bench.cores``)."""

from __future__ import annotations

from app.platform.cores import WORDS_THREADS, pass_threads, server_threads


def test_llama_cpp_gets_only_the_cores_the_recogniser_leaves() -> None:
    assert [server_threads(n) for n in (1, 2, 3, 4, 5, 6, 8, 16)] == [1, 1, 1, 1, 1, 1, 3, 4]
    assert WORDS_THREADS == 1
    for n in (6, 8, 16, 64):  # enough cores: the three engines never ask for more than there are
        assert pass_threads(n) + WORDS_THREADS + server_threads(n) <= n
