"""R-SWA and SR-SWA against exact references, in float64 (tiny random model)."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from longdoc.config import InferenceSettings, NativeSettings
from longdoc.engines.native import weights
from longdoc.engines.native.attention import attend, merge
from longdoc.engines.native.decoder import Decoder
from longdoc.engines.native.engine import NativeEngine
from longdoc.engines.native.kv_cache import SequenceKV
from longdoc.engines.native.rope import Rotary, rotate
from longdoc.engines.native.runtime import NativeModel
from longdoc.engines.native.srswa import SrswaSettings, select, srswa_step

TOL = 1e-10
WINDOW = 6  # the tiny model's sliding_window


def text_parts(model):
    return model.model.language_model, model.lm_head


def reference_layout(hidden, pages=3, page_len=11, seed=0):
    """(prefix, [page embeds], prompt) embeddings of a made-up reference."""
    g = torch.Generator().manual_seed(seed)
    prefix = torch.randn(1, hidden, generator=g, dtype=torch.float64)
    page_embeds = [torch.randn(page_len + i, hidden, generator=g, dtype=torch.float64) for i in range(pages)]
    prompt = torch.randn(4, hidden, generator=g, dtype=torch.float64)
    return prefix, page_embeds, prompt


def prefill_all(decoder, kv, prefix, pages, prompt):
    pos = 0
    decoder.prefill(kv, prefix, pos, kind="prefix")
    pos += prefix.shape[0]
    for n, e in enumerate(pages, start=1):
        decoder.prefill(kv, e, pos, n)
        pos += e.shape[0]
    logits = decoder.prefill(kv, prompt, pos)
    return logits, pos + prompt.shape[0]


def greedy(decoder, kv, logits, pos, steps, focus=frozenset()):
    out = [logits]
    token = int(logits.argmax())
    for i in range(steps):
        logits = decoder.step([kv], [token], [pos + i], [focus])[0]
        out.append(logits)
        token = int(logits.argmax())
    return out


def transformers_rswa(text, head, embeds, tokens):
    """transformers' own R-SWA decode (its reference-sliding-window cache layers and mask)."""
    cache = DynamicCache(config=text.config)
    n = embeds.shape[0]
    for layer in cache.layers:
        layer.set_prefill_length(n)
    with torch.no_grad():
        out = text(inputs_embeds=embeds[None], cache=cache, use_cache=True)
        logits = [head(out.last_hidden_state[0, -1])]
        for i, t in enumerate(tokens):
            out = text(input_ids=torch.tensor([[t]]), cache=cache, use_cache=True,
                       position_ids=torch.tensor([[n + i]]))
            logits.append(head(out.last_hidden_state[0, -1]))
    return logits


def test_ring_buffer_rswa_equals_transformers_rswa_attention(tiny_model):
    text, head = text_parts(tiny_model)
    prefix, pages, prompt = reference_layout(text.config.hidden_size)
    decoder = Decoder(text, head, mode="rswa")
    kv = decoder.new_cache(reference=64, window=WINDOW)
    logits, pos = prefill_all(decoder, kv, prefix, pages, prompt)
    steps = 4 * WINDOW  # the ring wraps several times
    mine = greedy(decoder, kv, logits, pos, steps)
    tokens = [int(x.argmax()) for x in mine[:-1]]
    theirs = transformers_rswa(text, head, torch.cat([prefix, *pages, prompt]), tokens)
    assert max(float((a - b).abs().max()) for a, b in zip(mine, theirs)) < TOL
    # and the window matters: a wider ring gives other logits once it has wrapped
    wide = Decoder(text, head, mode="rswa")
    kv2 = wide.new_cache(reference=64, window=WINDOW + 3)
    logits2, _ = prefill_all(wide, kv2, prefix, pages, prompt)
    other = [logits2] + [wide.step([kv2], [t], [pos + i])[0] for i, t in enumerate(tokens)]
    assert float((other[-1] - theirs[-1]).abs().max()) > 1e-4


def test_srswa_with_everything_selected_equals_rswa(tiny_model):
    text, head = text_parts(tiny_model)
    prefix, pages, prompt = reference_layout(text.config.hidden_size, pages=5)
    everything = SrswaSettings(top_pages=99, top_blocks=999, block_size=4)
    runs = []
    for mode in ("rswa", "srswa"):
        decoder = Decoder(text, head, mode=mode, srswa=everything)
        kv = decoder.new_cache(reference=96, window=WINDOW)
        logits, pos = prefill_all(decoder, kv, prefix, pages, prompt)
        runs.append(greedy(decoder, kv, logits, pos, 3 * WINDOW, focus=frozenset({1, 2})))
    assert max(float((a - b).abs().max()) for a, b in zip(*runs)) < TOL


def _random_cache(rotary, pages=6, page_len=37, heads=4, dim=16, block=8, window=5, seed=1):
    g = torch.Generator().manual_seed(seed)
    kv = SequenceKV(1, heads, dim, reference=pages * page_len + 8, window=window, rotary=rotary, block_size=block,
                    dtype=torch.float64)
    pinned = kv.reserve_span(3, 0, kind="prefix")
    kv.write(0, pinned, torch.randn(heads, 3, dim, generator=g, dtype=torch.float64),
             torch.randn(heads, 3, dim, generator=g, dtype=torch.float64))
    for p in range(1, pages + 1):
        span = kv.reserve_span(page_len, 3 + (p - 1) * page_len, p)
        kv.write(0, span, torch.randn(heads, page_len, dim, generator=g, dtype=torch.float64) * (1 + p % 3),
                 torch.randn(heads, page_len, dim, generator=g, dtype=torch.float64))
        kv.summarize(span)
    for t in range(window + 2):
        kv.begin_step(1000 + t)
        kv.write_generated(0, torch.randn(heads, dim, generator=g, dtype=torch.float64),
                           torch.randn(heads, dim, generator=g, dtype=torch.float64))
    return kv, g


def test_partial_selection_equals_attention_restricted_to_it(tiny_model):
    kv, g = _random_cache(Rotary(tiny_model.model.language_model.rotary_emb, torch.float64, "cpu"))
    heads, dim = kv.heads, kv.head_dim
    settings = SrswaSettings(top_pages=3, top_blocks=5, block_size=8)
    q = torch.randn(heads, 1, dim, generator=g, dtype=torch.float64)
    focus = frozenset({5, 6})
    chosen = select(q, kv, 0, settings, focus)
    assert chosen is not None
    assert focus <= set(chosen.pages) and len(chosen.pages) == 3
    got = srswa_step(q, kv, 0, 0.25, settings, focus)
    # reference: one softmax over the whole buffer, masked to prefix ∪ selection ∪ window
    size = kv.reference + kv.window
    mask = torch.zeros(heads, size, dtype=torch.bool)
    mask[:, 0:3] = True
    for h in range(heads):
        mask[h, chosen.index[h][chosen.valid[h]]] = True
    mask[:, kv.reference:kv.reference + kv.window_len] = True
    selected = int(mask[:, :kv.ref_len].sum(dim=1).max())
    assert selected < kv.ref_len / 2, "the selection must actually narrow the reference"
    keys = kv.buf[0, 0].clone()
    keys[:, kv.reference:kv.reference + kv.window_len] = kv.window_kv(0)[0]   # the ring's keys, rotated
    want = attend(q, keys, kv.buf[0, 1], 0.25, mask=mask).out
    assert float((got - want).abs().max()) < TOL


def test_log_sum_exp_merge_is_exact():
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(3, 2, 8, generator=g, dtype=torch.float64) for _ in range(3))
    k2, v2 = torch.randn(3, 9, 8, generator=g, dtype=torch.float64), torch.randn(3, 9, 8, generator=g, dtype=torch.float64)
    whole = attend(q, torch.cat([k, k2], 1), torch.cat([v, v2], 1), 0.3).out
    pieces = merge([attend(q, k, v, 0.3), attend(q, k2, v2, 0.3), attend(q, k2[:, :0], v2[:, :0], 0.3)])
    assert float((whole - pieces).abs().max()) < TOL


def _angles(positions, inv_freq):
    freqs = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def test_a_shift_is_an_exact_rotation_and_re_basing_keeps_every_logit(tiny_model):
    text, head = text_parts(tiny_model)
    decoder = Decoder(text, head, mode="rswa")
    rotary = decoder.rotary
    g = torch.Generator().manual_seed(4)
    x = torch.randn(4, 7, decoder.head_dim, generator=g, dtype=torch.float64)
    positions = torch.arange(5000, 5007)
    moved = rotary.shift(rotate(x, *_angles(positions, rotary.inv_freq)), -4990)
    assert float((moved - rotate(x, *_angles(positions - 4990, rotary.inv_freq))).abs().max()) < TOL
    # a decode step after re-basing every span and the window by -Δ equals the step without; the
    # model's own rotary angles are float32 (as in transformers), so positions carry its rounding
    prefix, pages, prompt = reference_layout(text.config.hidden_size)
    outs = []
    for delta in (0, -137):
        kv = decoder.new_cache(reference=64, window=WINDOW)
        logits, pos = prefill_all(decoder, kv, prefix, pages, prompt)
        token = int(logits.argmax())
        for i in range(WINDOW + 2):
            token = int(decoder.step([kv], [token], [pos + i])[0].argmax())
        for span in kv.spans:
            kv.shift_positions(span, delta)
        kv.shift_positions(None, delta)
        outs.append(decoder.step([kv], [token], [pos + WINDOW + 2 + delta])[0])
    assert float((outs[0] - outs[1]).abs().max()) < 1e-5


@pytest.mark.parametrize("mode", ["rswa", "srswa"])
def test_cache_stays_bounded_over_a_long_decode(tiny_model, mode):
    text, head = text_parts(tiny_model)
    decoder = Decoder(text, head, mode=mode, srswa=SrswaSettings(top_pages=2, top_blocks=3, block_size=4))
    kv = decoder.new_cache(reference=64, window=WINDOW)
    before = kv.nbytes
    assert before == decoder.cache_bytes(64, WINDOW)
    prefix, pages, prompt = reference_layout(text.config.hidden_size)
    logits, pos = prefill_all(decoder, kv, prefix, pages, prompt)
    greedy(decoder, kv, logits, pos, 30 * WINDOW)
    assert kv.nbytes == before and kv.window_len == WINDOW and kv.generated == 30 * WINDOW
    assert sorted(int(p) for p in kv.ring_positions) == list(range(pos + 30 * WINDOW - WINDOW, pos + 30 * WINDOW))


def _engine(model, window):
    tok = weights.byte_tokenizer(model.config.text_config.vocab_size, model.config.image_token_id)
    settings = InferenceSettings(engine="native", page_chunk_size=4, chunk_overlap=1,
                                 native=NativeSettings(attention="rswa", window=window, fallback_engine=None))
    engine = NativeEngine(settings, NativeModel.build(model, tok, "tiny@test", "rswa", SrswaSettings()))
    engine.load()
    return engine


@pytest.mark.parametrize("configured", [None, WINDOW + 3], ids=["checkpoint-window", "another-window"])
def test_the_engine_attends_over_the_checkpoints_window_unless_configured_otherwise(tiny_model, configured, caplog):
    """Through a real session: by default the window is the checkpoint's
    ``sliding_window`` and the decode equals transformers' own R-SWA on
    that checkpoint; a configured other window is warned of, recorded in
    the version, and equals transformers' R-SWA at that window."""
    with caplog.at_level("WARNING", logger="longdoc.engines.native.engine"):
        engine = _engine(tiny_model, configured)
    session = engine.open_session()
    try:
        window = configured or WINDOW
        assert engine.window == window and session.sequence.window == window
        if configured is None:
            assert engine.version == "tiny@test/rswa-w6" and not caplog.records
            model = tiny_model
        else:
            assert engine.version == f"tiny@test/rswa-w{window}-ckpt6"
            assert any("sliding_window is 6" in r.getMessage() for r in caplog.records)
            # the same weights (same seed) in a checkpoint whose own window is the configured one
            model = weights.random_model("tiny", seed=3, dtype=torch.float64, window=window)
        seq = session.sequence
        nm = engine.model
        _, pages, _ = reference_layout(tiny_model.config.text_config.hidden_size)
        seq.start_group([], list(enumerate(pages, start=1)), [1, 2, 3])
        assert seq.kv.window == window
        token, pos = seq.next_input()
        fed, mine = [token], []
        for i in range(4 * window):  # the ring wraps several times
            logits = nm.decoder.step([seq.kv], [fed[-1]], [pos + i])[0]
            mine.append(logits)
            fed.append(int(logits.argmax()))
        reference = torch.cat([nm.embed_ids(seq.prefix), *pages, nm.embed_ids(seq.prompt)])
        theirs = transformers_rswa(model.model.language_model, model.lm_head, reference, fed[:-1])
        assert max(float((a - b).abs().max()) for a, b in zip(mine, theirs[1:])) < TOL
    finally:
        session.close()
        engine.close()


def test_in_bfloat16_re_basing_moves_the_window_exactly_and_a_page_by_one_rounding(tiny_model):
    """bfloat16 is the CUDA dtype. The window is re-based by its positions
    alone: its keys afterwards are bit for bit those of keys written at the
    new positions. A carried page's stored keys are rotated once more in
    float32 and rounded once: bit for bit the exact rotation of the stored
    keys rounded to bfloat16, but for rare double roundings one step off (a
    shift in bfloat16 arithmetic, as before, missed a quarter of them)."""
    rotary = Rotary(tiny_model.model.language_model.rotary_emb, torch.bfloat16, "cpu")
    g = torch.Generator().manual_seed(6)
    raw = torch.randn(1, 4, 9, 16, generator=g).to(torch.bfloat16)      # [L, H, t, D] before rotation
    values = torch.randn(1, 4, 9, 16, generator=g).to(torch.bfloat16)
    caches = []
    for start in (3000, 20):
        kv = SequenceKV(1, 4, 16, reference=8, window=9, rotary=rotary, dtype=torch.bfloat16)
        kv.load_window(raw, values, torch.arange(start, start + 9))
        caches.append(kv)
    caches[0].shift_positions(None, 20 - 3000)
    assert torch.equal(caches[0].window_kv(0)[0], caches[1].window_kv(0)[0])

    keys = torch.randn(4, 500, 16, generator=g, dtype=torch.float64)
    stored = rotate(keys, *_angles(torch.arange(3000, 3500), rotary.inv_freq)).to(torch.bfloat16)
    moved = rotary.shift(stored, -2980)
    exact = rotate(stored.double(), *_angles(torch.tensor([-2980]), rotary.inv_freq)).to(torch.bfloat16)
    same = float((moved.view(torch.int16) == exact.view(torch.int16)).float().mean())
    off = (moved.double() - exact.double()).abs()
    assert same >= 0.999, f"{same:.5f} bit for bit"
    assert bool((off <= 2.0 ** -8 * exact.double().abs() + 2.0 ** -20).all()), "the rest within one rounding"
