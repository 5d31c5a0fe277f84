"""The invented-specifics rule of `bench answers`: numbers and names the documents lack."""

from __future__ import annotations

from devtools.bench.answers import invented


def test_numbers_and_names_not_in_the_documents_are_invented() -> None:
    resume = "Moved the ledger from PostgreSQL to CockroachDB; 40 services on Kubernetes."
    answer = ("- I'm Alex Chen with 10 years of experience\n- Migrated 40 services to Kubernetes\n"
              "- Started with PostgreSQL. Then we used MongoDB for two weeks")
    assert invented(answer, resume, "tell me about yourself") == ["Alex", "Chen", "10", "MongoDB", "two"]


def test_sentence_starts_and_the_question_are_not_inventions() -> None:
    assert invented("- In my last role I led the team\nMostly on call.", "") == []
    assert invented("- I used Flink there", "", "how would you use flink") == []


def test_the_same_run_ratio_pairs_each_answer_with_today_on_the_same_question() -> None:
    """A machine that slows down halfway slows both answers to a question: the ratio is
    taken per question and repeat, never between medians of different moments."""
    from devtools.bench.answers import Answer, summarise

    def answer(variant: str, question: str, ttft: float | None, repeat: int = 0) -> Answer:
        return Answer(variant, "resume", question, "- ok", ttft, 1.0, 2, 1, False, repeat=repeat)

    answers = [answer("today", "a", 0.2), answer("compact", "a", 0.1),      # quiet: 0.5
               answer("today", "b", 2.0), answer("compact", "b", 1.0),      # busy: 0.5
               answer("today", "a", 1.0, 1), answer("compact", "a", 0.5, 1),
               answer("today", "c", None), answer("compact", "c", 9.0)]     # no pair: left out
    summary = summarise(answers)
    assert summary["compact"]["ttft_ratio_to_today"] == 0.5
    assert summary["today"]["ttft_ratio_to_today"] == 1.0
