"""Install WordNet 3.0 for NLTK from Debian's packages, without NLTK's downloader.

``apt-get install wordnet-base wordnet-sense-index`` puts the WordNet database in
/usr/share/wordnet; NLTK's reader also needs the ``lexnames`` table, which Debian ships only in
a man page, so it is written here. The default destination is ``<sys.prefix>/share/nltk_data``,
a directory NLTK searches on its own when it runs from that environment.

    python -m evaluation.metrics.wordnet_setup [--source DIR] [--dest NLTK_DATA_DIR]
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

DEBIAN_WORDNET = Path("/usr/share/wordnet")
# From wordnet-base (the database) and wordnet-sense-index (index.sense, cntlist).
REQUIRED_FILES = (
    "data.adj", "data.adv", "data.noun", "data.verb", "index.adj", "index.adv", "index.noun", "index.verb",
    "adj.exc", "adv.exc", "noun.exc", "verb.exc", "index.sense",
)
# WordNet 3.0 lexicographer files: number, name, syntactic category (lexnames(5WN)).
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
    "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
    "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
    "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition",
    "verb.communication", "verb.competition", "verb.consumption", "verb.contact", "verb.creation",
    "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative",
    "verb.weather", "adj.ppl",
)
CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


def lexnames_table() -> str:
    return "".join(
        f"{number:02d}\t{name}\t{CATEGORY[name.split('.')[0]]}\n" for number, name in enumerate(LEXNAMES)
    )


def default_destination() -> Path:
    return Path(sys.prefix) / "share" / "nltk_data"


def install_wordnet(*, source: Path = DEBIAN_WORDNET, dest: Path | None = None) -> Path:
    """Copy WordNet into ``dest/corpora/wordnet`` and add ``lexnames``; returns that folder."""
    missing = [name for name in REQUIRED_FILES if not (source / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{source}: missing {', '.join(missing)}; install the Debian packages first: "
            "apt-get install wordnet-base wordnet-sense-index"
        )
    target = (dest or default_destination()) / "corpora" / "wordnet"
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.iterdir()):
        if path.is_file():
            shutil.copy2(path, target / path.name)
    (target / "lexnames").write_text(lexnames_table(), encoding="ascii")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEBIAN_WORDNET, help="WordNet database folder")
    parser.add_argument("--dest", type=Path, default=None, help="NLTK data folder (default <prefix>/share/nltk_data)")
    args = parser.parse_args(argv)
    try:
        target = install_wordnet(source=args.source, dest=args.dest)
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"WordNet installed in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
