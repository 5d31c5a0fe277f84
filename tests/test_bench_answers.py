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
