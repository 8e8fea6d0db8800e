"""A tiny CiteULike folder in the citeulike-t or citeulike-a layout, written at test time.

With ``min_count=2`` the selection keeps articles 0–3, users 0, 1, 4 and tags 0, 1, 3 after
several rounds: user 3 has one article left once article 5 (no words) is out, which takes
article 4 below two users, which takes user 2 below two articles; article 6 loses its only tag.
"""

import gzip

TAGS = ["evolution", "genomics", "rare-tag", "networks"]
WORDS = ["gene", "protein", "graph", "network", "species"]
USERS = [[0, 1, 2, 3, 6], [0, 1, 2, 3, 6], [0, 4], [4, 5], [1, 3]]
TAG_ARTICLES = [[0, 1, 2], [0, 3], [6], [2, 3, 4, 5]]
CITATIONS = [[0, 1], [0], [5], [], [3], [], []]
MULT = ["2 0:3 1:1", "2 0:1 4:2", "2 2:1 3:2", "1 3:4", "1 1:1", "0", "1 2:1"]
N_ARTICLES = len(CITATIONS)

KEPT_ARTICLES = ["0", "1", "2", "3"]
KEPT_USERS = ["user 0", "user 1", "user 4"]
KEPT_TAGS = ["evolution", "genomics", "networks"]


def list_line(ids):
    return " ".join(map(str, [len(ids), *ids]))


def write_citeulike(root, variant="citeulike-t", compress=True, terms=True, replace=None):
    """Write ``root/citeulike/<variant>/`` and return that folder. ``replace`` maps a file
    name (without .gz) to the text to write instead."""
    folder = root / "citeulike" / variant
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "users.dat": [list_line(ids) for ids in USERS],
        "tags.dat": TAGS,
        "citations.dat": [list_line(ids) for ids in CITATIONS],
    }
    if variant == "citeulike-t":
        files["tag-item.dat"] = [list_line(ids) for ids in TAG_ARTICLES]
    else:
        tags_of = [[t for t, arts in enumerate(TAG_ARTICLES) if a in arts]
                   for a in range(N_ARTICLES)]
        files["item-tag.dat"] = [list_line(ids) for ids in tags_of]
    if terms:
        files["mult.dat"] = MULT
        files["vocabulary.dat"] = WORDS
    for name, lines in files.items():
        text = (replace or {}).get(name, "\n".join(lines))
        data = text.encode("utf-8")
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)
    return folder
