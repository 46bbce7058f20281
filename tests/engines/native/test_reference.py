"""What "exact" means for the native engine: the reference's own ``generate()``.

A tiny random checkpoint of the real architecture (the real layer types: a
dense then a MoE decoder layer; a sliding window of 8 that wraps many times;
tiny SAM and CLIP towers at the real 1024-px geometry, so a page is 273
visual tokens) is saved with its SHA256SUMS, loaded through the engine's
public loader, and decoded through the real session path (session →
scheduler thread) on 1, 3 and 6 page images. transformers'
``UnlimitedOcrForConditionalGeneration.generate()`` decodes the same
checkpoint from the same ``pixel_values`` and the engine's reference ids,
with the same no-repeat-n-gram guard (set through a ``GenerationConfig``;
its ``pad_token_id`` is not BOS, which would mask BOS). Nothing is patched:
the reference runs as shipped. The engine's defaults are used (attention
included): the default must be exact.

Two checkpoints: ``plain`` (its pages run on and are cut at the token
limit: the comparison ends at the first token the engine feeds of its own,
a ``<PAGE>`` after a cut) and ``paging`` (its ``<PAGE>`` row of the output
head doubled, so that the random model closes pages by itself: the
separators it emits, and the engine's reading of them, are compared too).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from transformers import GenerationConfig, UnlimitedOcrForConditionalGeneration

from longdoc.config import InferenceSettings, NativeSettings
from longdoc.engines.base import GroupPlan, PageGroup, PageImage
from longdoc.engines.native import weights
from longdoc.engines.native.engine import NativeEngine
from longdoc.engines.native.runtime import base_mode

TOL = 1e-5
NGRAM = 3  # small enough that the guard bans tokens within a few dozen steps
WINDOW = 8


def _checkpoint(tmp_path_factory, name, seed, page_row=1.0):
    model = weights.random_model("tiny", seed=seed, window=WINDOW)
    page = weights.byte_tokenizer(model.config.text_config.vocab_size,
                                  model.config.image_token_id).convert_tokens_to_ids(weights.PAGE)
    with torch.no_grad():
        model.lm_head.weight[page] *= page_row
    folder = tmp_path_factory.mktemp("reference") / name
    weights.write_checkpoint(model, folder)
    return folder


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _checkpoint(tmp_path_factory, "unlimited-ocr-tiny", seed=3)


@pytest.fixture(scope="module")
def paging(tmp_path_factory):
    return _checkpoint(tmp_path_factory, "unlimited-ocr-tiny-paging", seed=7, page_row=1.5)


def pages(count, seed=1):
    """Page images of paper-like shapes (portrait and landscape), noise."""
    rng = np.random.default_rng(seed)
    shapes = [(792, 612), (842, 595), (612, 792), (1008, 612), (700, 700), (595, 842)]
    return [PageImage(page=i + 1, image=rng.integers(0, 256, (*shapes[i % len(shapes)], 3), dtype=np.uint8),
                      dpi=72, width_pt=shapes[i % len(shapes)][1], height_pt=shapes[i % len(shapes)][0])
            for i in range(count)]


def engine_for(folder, max_tokens_per_page=48, **native):
    native = {"model_path": str(folder), "device": "cpu", "dtype": "float32", "fallback_engine": None,
              "max_tokens_per_page": max_tokens_per_page, "no_repeat_ngram_size": NGRAM, **native}
    engine = NativeEngine(InferenceSettings(engine="native", page_chunk_size=8, native=NativeSettings(**native)))
    engine.load()
    return engine


def engine_decode(engine, images):
    """(every token the model chose, the logits each was chosen from, the
    pages' texts as ids) through a session: the first token's logits are
    the prefill's last (after the prompt), the others a decode step's."""
    logits = []
    decoder = engine.model.decoder
    prefill, step = decoder.prefill, decoder.step

    def recording_prefill(*args, **kwargs):
        out = prefill(*args, **kwargs)
        logits[:] = [out.clone()]  # the last prefill (the prompt) is the one the first token is read from
        return out

    def recording_step(*args, **kwargs):
        out = step(*args, **kwargs)
        logits.append(out[0].clone())
        return out

    decoder.prefill, decoder.step = recording_prefill, recording_step
    session = engine.open_session()
    try:
        plan = GroupPlan(index=0, owned=tuple(i.page for i in images), dpi=72)
        result = list(session.recognize(PageGroup(plan, images)))
        assert [p.number for p in result] == [i.page for i in images]
        seq = session.sequence
        own = seq.forced[0] if seq.forced else len(seq.generated)  # the model's own choices, before any forced
        return seq.generated[:own], logits[:own], [t.ids for t in seq.pages]
    finally:
        session.close()
        del decoder.prefill, decoder.step


def reference_decode(folder, images, reference_ids, new_tokens, eos, bos):
    model = UnlimitedOcrForConditionalGeneration.from_pretrained(folder, dtype=torch.float32).eval()
    config = GenerationConfig(do_sample=False, max_new_tokens=new_tokens, no_repeat_ngram_size=NGRAM,
                              eos_token_id=eos, bos_token_id=bos, pad_token_id=eos,
                              output_logits=True, return_dict_in_generate=True)
    config.no_repeat_ngram_window_size = 1024  # generate() refuses it as a keyword
    assert config.pad_token_id != bos, "a pad_token_id equal to BOS masks BOS"
    pixel_values = torch.stack([torch.from_numpy(base_mode(i.image)) for i in images])
    ids = torch.tensor([reference_ids])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pixel_values,
                             generation_config=config)
    return out.sequences[0, ids.shape[1]:].tolist(), [row[0] for row in out.logits]


def compare(folder, engine, count):
    """The engine's and the reference's decodes of ``count`` pages: (tokens, the reference's tokens, max |Δlogit|)."""
    images = pages(count)
    tokens, logits, texts = engine_decode(engine, images)
    nm = engine.model
    theirs, their_logits = reference_decode(folder, images, nm.reference_ids(count), len(tokens), nm.eos_id,
                                            nm.bos_id)
    assert len(logits) == len(their_logits) == len(tokens)
    delta = max(float((a - b).abs().max()) for a, b in zip(logits, their_logits))
    return tokens, theirs, delta, texts


@pytest.mark.parametrize("count", [1, 3, 6])
def test_the_engine_decodes_page_images_exactly_as_the_reference_generate(plain, count):
    engine = engine_for(plain)
    try:
        assert engine.config.attention == "rswa", "the default attention is the exact one"
        tokens, theirs, delta, texts = compare(plain, engine, count)
    finally:
        engine.close()
    assert len(tokens) >= 5 * WINDOW, "the window wrapped several times"
    assert tokens == theirs, "identical greedy tokens"
    assert delta <= TOL, f"max |Δlogit| {delta:.2e}"
    assert texts[0][:len(tokens)] == [t for t in tokens if t != engine.model.page_id][:len(texts[0])], \
        "page 1's text starts with the model's first token"


def test_pages_the_model_closes_itself_are_read_as_the_reference_writes_them(paging):
    engine = engine_for(paging, max_tokens_per_page=400)
    try:
        tokens, theirs, delta, texts = compare(paging, engine, 6)
        page, eos = engine.model.page_id, engine.model.eos_id
    finally:
        engine.close()
    assert tokens == theirs and delta <= TOL, f"max |Δlogit| {delta:.2e}"
    assert tokens.count(page) >= 5, "the model closed pages by itself"
    # every token the model wrote is in a page's text, the first one included; separators are not
    assert [t for ids in texts for t in ids] == [t for t in theirs if t not in (page, eos)]
    assert all(texts), "no page left empty"


def test_the_guard_searches_the_prompt_and_every_generated_token(plain):
    """No generated token completes an n-gram already in the last 1024 ids
    before it (prompt, image placeholders and output, the first token
    included), and the guard did have to ban: without it the greedy decode
    repeats one."""
    engine = engine_for(plain)
    try:
        tokens, _, _ = engine_decode(engine, pages(3))
        reference = engine.model.reference_ids(3)
    finally:
        engine.close()
    history = reference + tokens
    for i in range(len(reference), len(history)):
        before = history[max(0, i - 1024):i]
        seen = {tuple(before[k:k + NGRAM]) for k in range(len(before) - NGRAM + 1)}
        assert tuple(history[i - NGRAM + 1:i + 1]) not in seen, f"token {i - len(reference)} repeats an n-gram"
    unguarded = engine_for(plain, no_repeat_ngram_size=0)
    try:
        free, _, _ = engine_decode(unguarded, pages(3))
    finally:
        unguarded.close()
    trigrams = [tuple(free[k:k + NGRAM]) for k in range(len(free) - NGRAM + 1)]
    assert len(set(trigrams)) < len(trigrams), "the unguarded greedy decode loops: the guard is tested"


def test_a_checkpoint_in_baidus_original_layout_decodes_the_same(plain, tmp_path):
    """Baidu's config.json keeps the decoder's settings under
    ``language_config`` and ``sliding_window`` at the top; the tensor names
    are the original ones either way (transformers saves them so)."""
    original = tmp_path / "original-layout"
    shutil.copytree(plain, original)
    config = json.loads((original / "config.json").read_text())
    text = config.pop("text_config")
    config["sliding_window"] = text.pop("sliding_window")
    config["language_config"] = text
    (original / "config.json").write_text(json.dumps(config, indent=2))
    runs = []
    for folder in (plain, original):
        engine = engine_for(folder)
        try:
            assert engine.model.sliding_window == 8
            runs.append(engine_decode(engine, pages(2)))
        finally:
            engine.close()
    (tokens_a, logits_a, _), (tokens_b, logits_b, _) = runs
    assert tokens_a == tokens_b
    assert max(float((a - b).abs().max()) for a, b in zip(logits_a, logits_b)) == 0.0
