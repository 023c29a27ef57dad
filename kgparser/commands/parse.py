"""Parse a CoNLL-U, pre-tokenized or raw text file with a trained model (keeps every other column and line)."""
from __future__ import annotations

import argparse
import contextlib
import sys
import warnings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``kgparser parse``, in the order ``--help`` lists them."""
    _add_input_arguments(parser)
    _add_output_arguments(parser)
    _add_model_arguments(parser)
    _add_run_arguments(parser)
    _add_unreadable_arguments(parser)
    _add_constraint_arguments(parser)


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """What is parsed: the input file, its format and language."""
    parser.add_argument("input", help="file to parse: CoNLL-U (HEAD/DEPREL are replaced), or see --input-format; "
                                          "'-' for stdin")
    parser.add_argument("--input-format", choices=("conllu", "text", "raw"), default="conllu",
                        help="conllu (default); text: one pre-tokenized sentence per line, tokens separated "
                             "by spaces (written out as CoNLL-U with # sent_id and # text); raw: running text, "
                             "split into paragraphs (blank lines), sentences, tokens and words by the model's "
                             "tokenizer (see --tokenizer)")
    parser.add_argument("--tokenizer", choices=("auto", "model", "rules"), default="auto",
                        help="--input-format raw: auto (default): the model's learned tokenizer where it has one "
                             "(tokenizer.enabled in training), else spaCy's rules, with a note; model: only the "
                             "model's; rules: spaCy's rule tokenizer and sentencizer (kgparser[spacy])")
    parser.add_argument("--lang", default=None,
                        help="--tokenizer rules (or a model without a tokenizer): spaCy's language (a code such "
                             "as en, hu; default: the language the model was trained on)")


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """What is written: the output's format, its tags and the choice of root."""
    parser.add_argument("--format", choices=("conllu", "html", "svg"), default="conllu",
                        help="output: conllu (default), or pictures of the trees: html (a page, one picture per "
                             "sentence) or svg (one picture)")
    parser.add_argument("--tags", choices=("auto", "input", "predict"), default="auto",
                        help="auto (default): use the input's UPOS/XPOS/FEATS/LEMMA where given, the model's tagger "
                             "where they are '_'; input: only the input's; predict: the parser reads the tagger's "
                             "tags everywhere. Predicted tags are written only where the input has '_'")
    parser.add_argument("--root-choice", choices=("scored", "first", "last", "multi"), default=None,
                        help="which of the words a final parser state leaves loose becomes the root and where "
                             "the others go: scored (by the model), first, last, or multi (all on the root, as the "
                             "papers' CoNLL-X evaluations); default: the model's decoding.root_choice")


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model parsing: its checkpoint and where its encoder is now."""
    parser.add_argument("--model", "-m", required=True,
                        help="checkpoint (best.pt or last.pt of a run), or the name of an installed model package "
                             "(kgparser package)")
    parser.add_argument("--encoder", default=None, metavar="PATH",
                        help="a model trained with a pretrained encoder (model.encoder): where that encoder is now, "
                             "if it has moved (a folder or hub name; it must be the same encoder)")
    parser.add_argument("--quantize", action=argparse.BooleanOptionalAction, default=None,
                        help="a model with a pretrained encoder: run the encoder's linear layers in int8 "
                             "(--quantize: about 1.5x as fast on a CPU, slightly different states) or float32 "
                             "(--no-quantize); default: as the model was trained (model.encoder.quantize)")


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the output goes and how the parse runs: batches, processes, device, threads."""
    parser.add_argument("--output", "-o", default=None, help="output file (default: standard output)")
    parser.add_argument("--batch-size", type=_positive, default=64, help="sentences per batch (default 64)")
    parser.add_argument("--processes", "-p", type=_positive, default=1, metavar="N",
                        help="parse with N worker processes of one thread each (--engine ray: N Ray actors), "
                             "output in input order (default 1: in this process)")
    parser.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="what parses the chunks: local (default): this process or the --processes worker "
                             "processes; ray: --processes Ray actors, one CPU each (one GPU each with --device cuda), "
                             "on the cluster of --ray-address or RAY_ADDRESS, else on a local Ray instance started "
                             "for the run (kgparser[ray]); the output is the same")
    parser.add_argument("--ray-address", default=None, metavar="ADDRESS",
                        help="--engine ray: the Ray cluster to connect to (default: RAY_ADDRESS; neither: a local "
                             "instance)")
    parser.add_argument("--chunk-size", type=_positive, default=None, metavar="SENTENCES",
                        help="sentences read, parsed and written at a time, so memory stays flat whatever the "
                             "input's size (default 2000)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress line (shown only when standard error is a terminal)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where the model parses (default cpu); --engine ray: on the actors, one GPU each for cuda")
    parser.add_argument("--threads", type=_thread_count, default=1,
                        help="torch threads (default 1: on a machine busy with other jobs, several threads stall each "
                             "other at every LSTM step; 0: torch's choice, one per core)")


def _add_unreadable_arguments(parser: argparse.ArgumentParser) -> None:
    """What becomes of sentences that cannot be read."""
    parser.add_argument("--lenient", action="store_true",
                        help="skip sentences that cannot be read (counted on stderr; they are missing from the "
                             "output unless --keep-skipped). A file that cannot be read to its end, such as a "
                             "truncated .gz, is still an error")
    parser.add_argument("--keep-skipped", action="store_true",
                        help="implies --lenient; write each sentence that cannot be read back unchanged in its "
                             "place, so that the output has as many sentences as the input")


def _add_constraint_arguments(parser: argparse.ArgumentParser) -> None:
    """Hard constraints on the trees, and what to do when no tree satisfies them."""
    parser.add_argument("--constraints", default=None, metavar="FILE.jsonl|misc",
                        help="hard span/arc constraints: a JSON-lines file (one object per sentence, "
                             "by sent_id or index) or 'misc' to read Head=/HeadLabel=/Span= from the MISC column")
    parser.add_argument("--on-bad-constraints", choices=("error", "skip"), default="error",
                        help="a sentence whose constraints no tree satisfies: stop with an error (default) "
                             "or parse it without them, with a warning")


def _thread_count(text: str) -> int:
    """``--threads``: a whole number >= 0, refused by argparse in one line otherwise."""
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return count


def _positive(text: str) -> int:
    """A whole number >= 1, refused by argparse in one line otherwise."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return count


def run(args: argparse.Namespace) -> int:
    import time

    from ..io.collector import collector_paused

    with collector_paused():
        from ..inference.corpus import bound_kernel_cache
        from ..inference.parser import Parser

        bound_kernel_cache()
        _check_output(args)
        with _one_line_warnings():
            parser = Parser.load(args.model, device=_here(args), batch_size=args.batch_size, threads=args.threads,
                                 encoder=args.encoder, quantize=args.quantize)
    with _one_line_warnings():
        started = time.perf_counter()
        summary = parser.parse_file(args.input, args.output if args.output else sys.stdout,
                                    lenient=args.lenient, keep_skipped=args.keep_skipped,
                                    constraints=args.constraints, on_bad_constraints=args.on_bad_constraints,
                                    tags=args.tags, input_format=args.input_format,
                                    root_choice=args.root_choice, lang=args.lang, tokenizer=args.tokenizer,
                                    output_format=args.format,
                                    processes=args.processes, chunk_size=args.chunk_size, engine=_engine(args),
                                    progress=not args.quiet and sys.stderr.isatty())
        seconds = time.perf_counter() - started
    words = summary.words
    print(f"parsed {summary.sentences} sentences, {words} words in {seconds:.1f}s "
          f"({words / seconds if seconds else 0:.0f} words/s)", file=sys.stderr)
    _report_skipped(summary.skipped, args.keep_skipped)
    if any(parser.tag_report.missing.values()):
        print(parser.tag_report.summary(), file=sys.stderr)
    if args.constraints is not None:
        report = parser.constraint_report
        print(f"constraints: {report.constrained} sentences constrained, {len(report.skipped)} dropped, "
              f"{len(report.violated)} outputs missing a constraint", file=sys.stderr)
    return 0


def _engine(args: argparse.Namespace):
    """What parses the chunks (:class:`~kgparser.inference.corpus.Engine`)."""
    from ..inference.corpus import Engine

    return Engine(args.engine, address=args.ray_address, device=args.device)


def _here(args: argparse.Namespace) -> str:
    """Where this process holds the model: on ``--device``, but on the CPU when
    Ray's actors parse (they hold it on ``--device`` themselves, on machines of
    their own), which they do unless the input is parsed in one piece, here
    (constraints, pictures)."""
    ray_parses = args.engine == "ray" and args.constraints is None and args.format == "conllu"
    return "cpu" if ray_parses else args.device


def _check_output(args: argparse.Namespace) -> None:
    """Refuse an output that is the model or the constraints file: it would be
    replaced by CoNLL-U.  The input itself may be the output (a file output is
    a temporary file until the input is read and parsed to its end)."""
    from ..errors import KgparserError
    from ..io.atomic import same_file

    for option, path in (("--model", args.model), ("--constraints", args.constraints)):
        if args.output and path and same_file(args.output, path):
            raise KgparserError(f"--output: {args.output}: is the file given to {option}, which the output "
                                f"would replace; choose another output file")


@contextlib.contextmanager
def _one_line_warnings():
    """Show warnings as ``kgparser parse: warning: MESSAGE``, one line on stderr,
    instead of Python's two lines naming the source line that warned.  Only
    the format changes: whoever records warnings (``warnings.catch_warnings``,
    pytest) still gets them."""
    original = warnings.formatwarning
    warnings.formatwarning = lambda message, *rest, **options: f"kgparser parse: warning: {message}\n"
    try:
        yield
    finally:
        warnings.formatwarning = original


def _report_skipped(skipped: list, kept: bool) -> None:
    """Say how many sentences a lenient read skipped, the first one's place
    and cause, and where they went."""
    if not skipped:
        return
    where = ("written back unchanged in their place" if kept
             else "missing from the output (--keep-skipped writes them back unchanged)")
    print(f"kgparser parse: warning: skipped {len(skipped)} sentence(s) that cannot be read, {where}; "
          f"the first: {skipped[0]}", file=sys.stderr)
