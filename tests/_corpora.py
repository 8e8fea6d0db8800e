"""Small folder corpora (one sub-folder per class, one .txt file per document), written at
test time."""

import random

# Each class draws its words from its own vocabulary, so a clustering can be exact.
VOCABULARIES = {
    "cooking": "recipe oven flour butter sugar bake garlic onion simmer skillet sauce pastry",
    "space": "rocket orbit planet astronaut telescope galaxy satellite launch comet nebula lunar",
    "sports": "football goal striker referee match league coach stadium penalty keeper season",
}
# A few shared stop words, so tokenization and stop-word removal are exercised too.
FILLER = ["the", "and", "of", "with", "a"]


def write_folder_corpus(root, n_per_class=15, words_per_doc=12, seed=0, flat=False):
    """Write ``root/<class>/<class>NN.txt`` (or ``root/<class>NN.txt`` when ``flat``) and
    return ``root``."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for label, vocabulary in VOCABULARIES.items():
        folder = root if flat else root / label
        folder.mkdir(exist_ok=True)
        words = vocabulary.split()
        for i in range(n_per_class):
            doc = rng.choices(words, k=words_per_doc) + rng.choices(FILLER, k=3)
            rng.shuffle(doc)
            (folder / f"{label}{i:02d}.txt").write_text(" ".join(doc).capitalize() + ".\n",
                                                        encoding="utf-8")
    return root
