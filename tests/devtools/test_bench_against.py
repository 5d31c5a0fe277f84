"""``bench turns --against REV``: the same clips with another tree's code, ABBA, with ratios."""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from devtools.bench.against import HERE, child_runner, interleave, one_clip_corpora, summarise, tree_of

ROOT = Path(__file__).resolve().parents[2]


def _corpus(folder: Path, clips: int) -> Path:
    folder.mkdir()
    entries = []
    for i in range(clips):
        (folder / f"q{i}.wav").write_bytes(b"RIFF")
        entries.append({"file": f"q{i}.wav", "text": f"Question {i}?", "speech_end_s": 1.0 + i})
    (folder / "manifest.json").write_text(json.dumps(entries), encoding="utf-8")
    return folder


def test_each_clip_is_a_corpus_of_its_own(tmp_path: Path) -> None:
    corpora = one_clip_corpora(_corpus(tmp_path / "set", 3), tmp_path / "clips", limit=2)
    assert len(corpora) == 2
    for i, one in enumerate(corpora):
        [entry] = json.loads((one / "manifest.json").read_text())
        assert entry["text"] == f"Question {i}?"
        assert (one / entry["file"]).resolve() == tmp_path / "set" / f"q{i}.wav"


def test_the_trees_take_turns_in_abba_order_and_the_ratios_compare_them(tmp_path: Path) -> None:
    """Clip by clip: here then there, there then here, here then there...; each tree's
    turns under its own label, and the other tree's median and p95 over this one's."""
    order: list[tuple[str, str]] = []
    latency = {HERE: [0.40, 0.50, 0.60, 1.00], "abc123": [0.60, 0.75, 0.90, 1.50]}

    def stub(side: str) -> Any:
        def run(corpus: Path, out: Path) -> dict[str, list[dict[str, Any]]]:
            clip = int(corpus.name[-1])
            order.append((corpus.name, side))
            row = {"clip": corpus.name, "response_latency": latency[side][clip], "stale": 0}
            return {"product": [row]}
        return run

    corpora = [tmp_path / f"clip{i}" for i in range(4)]
    results = interleave(corpora, {HERE: stub(HERE), "abc123": stub("abc123")}, tmp_path / "out")
    assert [side for _, side in order] == [HERE, "abc123", "abc123", HERE, HERE, "abc123", "abc123", HERE]
    assert [name for name, _ in order] == [f"clip{i // 2}" for i in range(8)]
    assert [r["clip"] for r in results["product"]] == ["clip0", "clip1", "clip2", "clip3"]
    summary = summarise(results)
    assert summary["product"]["response_latency_median_s"] == pytest.approx(0.55)
    assert summary["product^abc123"]["response_latency_median_s"] == pytest.approx(0.825)
    assert summary["ratios"]["product^abc123/product median"] == 1.5
    theirs, ours = (summary[m]["response_latency_p95_s"] for m in ("product^abc123", "product"))
    assert summary["ratios"]["product^abc123/product p95"] == pytest.approx(theirs / ours, abs=0.01) == 1.5


def test_on_a_pause_set_each_tree_gets_its_false_cut_offs() -> None:
    rows = {"product": [{"response_latency": 0.5, "pauses": [0.6, 1.0], "cut_offs": [True, False]},
                        {"response_latency": None, "pauses": [0.4], "cut_offs": [False]}],
            "product^abc123": [{"response_latency": 0.9, "pauses": [0.6, 1.0], "cut_offs": [True, True]},
                               {"response_latency": 0.7, "pauses": [0.4], "cut_offs": [True]}]}
    summary = summarise(rows)
    assert (summary["product"]["eot"]["false_cutoffs"], summary["product"]["eot"]["pauses"]) == (1, 3)
    assert summary["product"]["eot"]["unanswered"] == 1
    assert summary["product^abc123"]["eot"]["false_cutoffs"] == 3
    assert "eot" not in summarise({"product": [{"response_latency": 0.5}]})["product"]


def test_the_other_tree_runs_its_own_code_in_a_child(tmp_path: Path) -> None:
    """The child runs ``python -m app bench turns`` with that tree first on its path: a
    tree whose ``app`` only writes what it was asked stands for an old commit."""
    tree = tmp_path / "old"
    (tree / "app").mkdir(parents=True)
    (tree / "app" / "__init__.py").write_text("")
    (tree / "app" / "__main__.py").write_text(
        "import json, sys, pathlib\n"
        "argv = sys.argv[1:]\n"
        "out = pathlib.Path(argv[argv.index('--out') + 1]); out.mkdir(parents=True)\n"
        "(out / 'bench-turns.json').write_text(json.dumps({'turns': {'product': [{'argv': argv}]}}))\n")
    args = argparse.Namespace(modes="rules,product", profile="relay", base_url=None, api_key=None,
                              model=None, local=False, config=None, language="zh", load="call")
    with tree_of(str(tree)) as there:
        assert there == tree.resolve()
        turns = child_runner(there, args)(tmp_path / "clip0", tmp_path / "out")
    assert turns["product"][0]["argv"] == [  # the language is global: before the subcommand
        "--language", "zh", "bench", "turns", "--corpus", str(tmp_path / "clip0"),
        "--out", str(tmp_path / "out"), "--modes", "rules,product", "--profile", "relay", "--load", "call"]


def test_a_commit_is_checked_out_into_a_worktree_that_is_removed_after() -> None:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with tree_of(head) as there:
        assert (there / "app" / "__main__.py").is_file()
        shown = subprocess.run(["git", "-C", str(there), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert shown.stdout.strip() == head
    assert not there.exists()
    listed = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"],
                            capture_output=True, text=True).stdout
    assert str(there) not in listed


def test_a_revision_that_is_neither_is_refused() -> None:
    with pytest.raises(SystemExit, match="neither a checkout nor a commit"), tree_of("no-such-rev-h52"):
        pass
