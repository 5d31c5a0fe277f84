"""Train the end-of-turn head: ``python -m devtools.turns_train OUTDIR``.

Writes ``OUTDIR/end_of_turn_head.json`` (the file :mod:`app.turns.head` loads: copy it to
``app/turns/`` and pin its SHA-256 in :mod:`app.platform.pinned`) and
``OUTDIR/report.json`` (held-out AUC and accuracy per language against the zero-shot
verdict, and the policy thresholds they suggest).  The same inputs give the same bytes:
texts from a fixed seed, one llama.cpp thread, Newton's method.  Never ships.
Design notes: decision 0053.
"""
