"""Infinite decoding over page groups, the batch scheduler and the KV admission."""

from __future__ import annotations

import threading

import pytest
import torch
from hypothesis import given, settings, strategies as st

from longdoc.config import InferenceSettings, NativeSettings
from longdoc.engines.native import weights
from longdoc.engines.native.engine import NativeEngine
from longdoc.engines.native.kv_manager import KVWorkspaceManager, capacity_for
from longdoc.engines.native.ngram import choose
from longdoc.engines.native.runtime import NativeModel
from longdoc.engines.native.scheduler import Scheduler
from longdoc.engines.native.sequence import DocumentSequence
from longdoc.engines.native.srswa import SrswaSettings
from longdoc.errors import KvBudgetExceeded

from .test_exactness import transformers_rswa

WINDOW = 6


def native(model, mode="rswa"):
    return native_model(model, mode, SrswaSettings(top_pages=2, top_blocks=4, block_size=4))


def native_model(model, mode="srswa", srswa=None):
    tok = weights.byte_tokenizer(model.config.text_config.vocab_size, model.config.image_token_id)
    return NativeModel.build(model, tok, "tiny-test", mode, srswa or SrswaSettings())


def page_embeds(hidden, pages, length=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {p: torch.randn(length, hidden, generator=g, dtype=torch.float64) for p in pages}


def decode(seq, nm, steps=None):
    """Step one sequence to the end of its group (or ``steps`` steps)."""
    tokens = []
    n = 0
    while not seq.done and (steps is None or n < steps):
        token, pos = seq.next_input()
        logits = nm.decoder.step([seq.kv], [token], [pos], [seq.focus()])[0]
        tokens.append(token)
        seq.accept(choose(logits, seq.history))
        n += 1
    return tokens


def test_one_group_equals_one_shot_decoding(tiny_model):
    nm = native(tiny_model)
    hidden = tiny_model.config.text_config.hidden_size
    embeds = page_embeds(hidden, [1, 2, 3])
    seq = DocumentSequence(nm, WINDOW, max_group_pages=4, max_tokens_per_page=40)
    seq.start_group([], list(embeds.items()), [1, 2, 3])
    fed = decode(seq, nm, steps=25)
    # one shot: transformers' own R-SWA decode of the same reference, fed the same tokens
    reference = torch.cat([nm.embed_ids(seq.prefix), *embeds.values(), nm.embed_ids(seq.prompt)])
    theirs = transformers_rswa(tiny_model.model.language_model, tiny_model.lm_head, reference, fed)
    greedy_theirs = [int(x.argmax()) for x in theirs]
    assert fed == greedy_theirs[:len(fed)]


def test_groups_carry_the_overlap_and_free_the_rest(tiny_model):
    nm = native(tiny_model, mode="srswa")
    hidden = tiny_model.config.text_config.hidden_size
    embeds = page_embeds(hidden, range(1, 9), seed=1)
    seq = DocumentSequence(nm, WINDOW, max_group_pages=3, max_tokens_per_page=10)
    peak = seq.peak_bytes()
    groups = [([], [1, 2, 3]), ([3], [4, 5]), ([5], [6, 7]), ([7], [8])]  # C=3, O=1
    for context, owned in groups:
        seq.start_group(context, [(p, embeds[p]) for p in owned], owned)
        assert seq.resident_pages == [*context, *owned]
        assert seq.kv.pinned_spans[0].position == 0 and seq.kv.spans[1].position == 1  # re-based to 0
        decode(seq, nm)
        assert [t.page for t in seq.pages] == owned and all(t.closed for t in seq.pages)
        assert seq.kv.nbytes == peak
    assert seq.encoded == list(range(1, 9)), "every page is encoded exactly once"
    assert seq.kv.generated > WINDOW
    seq.close()
    assert seq.kv is None


def test_a_batched_step_equals_stepping_each_sequence_alone(tiny_model):
    nm = native(tiny_model, mode="srswa")
    hidden = tiny_model.config.text_config.hidden_size

    def fresh(seed):
        seq = DocumentSequence(nm, WINDOW, max_group_pages=3, max_tokens_per_page=12)
        seq.start_group([], list(page_embeds(hidden, [1, 2, 3], seed=seed).items()), [1, 2, 3])
        return seq

    alone = []
    for seed in (1, 2, 3):
        seq = fresh(seed)
        decode(seq, nm)
        alone.append([t.ids for t in seq.pages])
    scheduler = Scheduler(nm, max_batch=8)
    seqs = [fresh(seed) for seed in (1, 2, 3)]
    threads = [threading.Thread(target=scheduler.run, args=(s, threading.Event())) for s in seqs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    scheduler.close()
    assert [[t.ids for t in s.pages] for s in seqs] == alone
    assert scheduler.largest_batch > 1


def test_a_cancelled_sequence_leaves_the_batch(tiny_model):
    nm = native(tiny_model)
    seq = DocumentSequence(nm, WINDOW, max_group_pages=2, max_tokens_per_page=10_000)
    seq.start_group([], list(page_embeds(tiny_model.config.text_config.hidden_size, [1, 2]).items()), [1, 2])
    scheduler = Scheduler(nm, max_batch=4)
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    from longdoc.errors import JobCancelled
    with pytest.raises(JobCancelled):
        scheduler.run(seq, cancel)
    scheduler.close()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 400)), max_size=40), st.floats(0.1, 1.0))
def test_admission_never_passes_the_watermark(ops, watermark):
    manager = KVWorkspaceManager(1000, watermark)
    held = []
    for admit, amount in ops:
        if admit:
            if amount > manager.limit:
                with pytest.raises(KvBudgetExceeded):
                    manager.try_admit(amount)
                continue
            ticket = manager.try_admit(amount)
            if ticket is not None:
                held.append(ticket)
        elif held:
            manager.release(held.pop(0))
        assert manager.reserved <= manager.limit
        assert manager.figures().sequences == len(held)
    for ticket in held:
        manager.release(ticket)
    assert manager.reserved == 0


def test_a_waiting_sequence_is_admitted_when_another_finishes():
    manager = KVWorkspaceManager(100, 0.8)
    first = manager.admit(60)
    got = []
    waiter = threading.Thread(target=lambda: got.append(manager.admit(50)))
    waiter.start()
    waiter.join(timeout=0.5)
    assert not got and manager.figures().waiting == 1, "no room: it waits, nothing is preempted"
    manager.release(first)
    waiter.join(timeout=5)
    assert got and manager.reserved == 50


def test_the_no_repeat_ngram_guard_pushes_a_loop_off_its_track():
    from longdoc.engines.native.ngram import banned, choose

    loop = [7, 8, 9] * 5                      # 7 8 9 7 8 9 …: the next 7 would repeat "8 9 7"
    assert banned(loop, n=3) == {7}
    logits = torch.zeros(12)
    logits[7], logits[4] = 5.0, 1.0
    assert choose(logits, loop, n=3) == 4, "the loop's token is banned, the next best is taken"
    assert choose(logits, loop, n=3, window=2) == 7, "outside the window nothing is banned"
    assert banned([1, 2, 3, 4], n=3) == set()


def test_a_page_separator_spelt_in_several_tokens_closes_the_page_and_leaves_its_text(tiny_model):
    nm = native(tiny_model)
    nm.__dict__["page_id"] = None  # a tokenizer with no <PAGE> token of its own
    seq = DocumentSequence(nm, WINDOW, max_group_pages=2, max_tokens_per_page=100)
    seq.start_group([], list(page_embeds(tiny_model.config.text_config.hidden_size, [1, 2]).items()), [1, 2])
    first = nm.decode(seq.generated)  # the token the prefill chose: page 1's first
    assert "<" not in first
    for token in nm.tokenizer.encode("a<b <PAGE>cd< PAGE >", add_special_tokens=False):
        assert not seq.done
        seq.accept(token)
    assert seq.done
    assert [seq.text(p) for p in seq.pages] == [first + "a<b ", "cd"]


def _engine(model, caplog, **native):
    settings = InferenceSettings(engine="native", native=NativeSettings(fallback_engine=None, **native))
    engine = NativeEngine(settings, native_model(model))
    with caplog.at_level("INFO", logger="longdoc.engines.native.engine"):
        engine.load()
    return engine


def _admit_all(engine):
    """Admit sequences of the engine's own peak until one must wait; how many got in."""
    session = engine.open_session()
    peak = session.sequence.peak_bytes()
    session.close()
    assert peak == engine.sequence_peak
    tickets = []
    while (ticket := engine.kv.try_admit(peak)) is not None:
        tickets.append(ticket)
    for ticket in tickets:
        engine.kv.release(ticket)
    return len(tickets)


def test_by_default_the_kv_budget_admits_max_sequences_documents(tiny_model, caplog):
    engine = _engine(tiny_model, caplog)
    try:
        assert engine.config.kv_budget_mb is None and engine.config.max_sequences == 16
        assert _admit_all(engine) == 16, "the budget is sized for max_sequences, no more, no fewer"
        details = engine.ready_details()
        assert details["kv_sequences_fit"] == 16 and details["max_sequences"] == 16
        assert details["window"] == WINDOW
        assert any("16 of max_sequences 16 sequences fit" in r.getMessage() for r in caplog.records)
    finally:
        engine.close()


def test_a_configured_small_kv_budget_says_how_few_documents_it_admits(tiny_model, caplog):
    probe = _engine(tiny_model, caplog)
    peak = probe.sequence_peak
    probe.close()
    budget_mb = -(-3 * peak // int(0.8 * 2**20))  # room for 3 peaks under the 0.8 watermark, not 4
    engine = _engine(tiny_model, caplog, kv_budget_mb=budget_mb)
    try:
        fit = int(budget_mb * 2**20 * 0.8) // peak
        assert fit == 3 and _admit_all(engine) == 3
        assert engine.ready_details()["kv_sequences_fit"] == 3
        assert engine.ready_details()["kv_budget_bytes"] == budget_mb * 2**20
        assert engine.ready_details()["kv_sequence_bytes"] == peak
        warned = [r for r in caplog.records if r.levelname == "WARNING" and "3 of max_sequences 16" in r.getMessage()]
        assert warned, "a budget that admits fewer than max_sequences is a warning at start"
    finally:
        engine.close()


def test_the_kv_capacity_holds_its_sequences_whatever_the_watermark_rounding():
    for peak in (1, 7, 12_345, 601_282_560):
        for sequences in (1, 3, 16):
            for watermark in (0.1, 0.3, 0.7, 0.8, 0.9, 1.0):
                manager = KVWorkspaceManager(capacity_for(peak, sequences, watermark), watermark)
                assert manager.sequences_fit(peak) == sequences, (peak, sequences, watermark)
