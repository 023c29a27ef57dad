"""Non-projectivity and per-system coverage of CoNLL-U treebanks."""
from __future__ import annotations

import json
from pathlib import Path


def add_arguments(parser) -> None:
    parser.add_argument("treebanks", nargs="+", type=Path, metavar="TREEBANK.conllu")
    parser.add_argument("--systems", nargs="+", metavar="NAME", help="systems to report (default: all registered)")
    parser.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    parser.add_argument("--lenient", action="store_true", help="skip malformed sentences (each one reported)")


def run(args) -> int:
    from ..errors import KgparserError
    from ..evaluation.coverage import format_markdown, format_text, treebank_statistics
    from ..io.conllu import read_conllu
    from ..transitions import system_class

    for name in args.systems or []:
        system_class(name)  # fail early on unknown names
    results = []
    for path in args.treebanks:
        sentences = read_conllu(path, lenient=args.lenient)
        if not sentences:  # a share of nothing would read as 100% coverage
            raise KgparserError(f"{path}: no sentences{' that could be read' if args.lenient else ''}")
        results.append(treebank_statistics(path.name, (s.heads for s in sentences), args.systems))
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in results], indent=2))
    elif args.format == "markdown":
        print(format_markdown(results))
    else:
        print(format_text(results))
    return 0
