"""How often `longdoc.layout.spacing` splits a word it should not, and how
often it puts back a space that was dropped.

- False splits: every English ground-truth text of the dev set
  (``../shared/eval/dev/MANIFEST.tsv``, language ``en``, gold or silver) goes
  through :func:`restore_spaces` line by line; every token it changes is
  counted and printed (these texts are right as they are).
- Recall: ``--pairs`` random pairs of neighbouring lowercase words from the
  same texts are glued ("the" + "original" → "theoriginal") and split back
  with :func:`split_word`; exact recoveries are counted.

    python bench/spacing.py [--pairs 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import sys

from _common import EVAL

from longdoc.layout.spacing import MIN_ENGLISH_SHARE, english_share, restore_spaces, split_word

WORD = re.compile(r"^[a-z]+$")


def english_texts() -> dict[str, list[str]]:
    """Ground-truth lines of the dev set's English documents, by file."""
    texts: dict[str, list[str]] = {}
    with open(EVAL / "MANIFEST.tsv", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            tier = row["notes"].split("]")[0].lstrip("[")
            if row["language"] != "en" or tier not in ("gold", "silver") or not row["gt_path"]:
                continue
            path = EVAL / row["gt_path"]
            if path.suffix in (".txt", ".md") and path.exists():
                texts[row["gt_path"]] = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return texts


def false_splits(texts: dict[str, list[str]]) -> tuple[int, list[tuple[str, str]]]:
    """Words seen, and the tokens :func:`restore_spaces` would change."""
    words, changed = 0, []
    for lines in texts.values():
        words += sum(len(line.split()) for line in lines)
        if restore_spaces(lines) == lines:
            continue
        changed += [(t, split_word(t)) for line in lines for t in line.split(" ") if split_word(t) != t]
    return words, changed


def recall(texts: dict[str, list[str]], pairs: int, seed: int) -> tuple[int, int, list[str]]:
    candidates = []
    for lines in texts.values():
        if english_share(lines) < MIN_ENGLISH_SHARE:
            continue
        for line in lines:
            tokens = line.split()
            candidates += [(a, b) for a, b in zip(tokens, tokens[1:]) if WORD.match(a) and WORD.match(b)]
    rng = random.Random(seed)
    sample = rng.sample(candidates, min(pairs, len(candidates)))
    missed = [a + b for a, b in sample if split_word(a + b) != f"{a} {b}"]
    return len(sample) - len(missed), len(sample), missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    texts = english_texts()
    if not texts:
        print(f"no English ground truth under {EVAL}", file=sys.stderr)
        return 1
    words, changed = false_splits(texts)
    print(f"false splits: {len(changed)} tokens changed in {words} words of English ground truth "
          f"({len(texts)} files)")
    for before, after in changed[:20]:
        print(f"  {before!r} -> {after!r}")
    found, total, missed = recall(texts, args.pairs, args.seed)
    print(f"recall: {found}/{total} glued pairs split back exactly ({found / max(total, 1):.0%})")
    print("  missed, e.g.: " + ", ".join(missed[:15]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
