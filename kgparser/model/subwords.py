"""A model folder's fast tokenizer read with the ``tokenizers`` library
directly, without importing Hugging Face ``transformers`` (seconds of a
parse's start-up: docs/history/start-up.md, "Start-up (issue 49)").

:func:`folder_tokenizer` reads it where transformers itself would run the
folder's ``tokenizer.json`` as it is: ``tokenizer_config.json`` names the
generic class (``PreTrainedTokenizerFast``; ``TokenizersBackend`` in
transformers 5), sets nothing that changes the pipeline, and every special
token it names is in the vocabulary already (transformers adds a missing
one).  The class of a particular model, such as ``XLMRobertaTokenizer``,
is left to transformers, which in version 5 builds its own pipeline from the
vocabulary rather than reading the file's.  So the subword ids are those
transformers' fast tokenizer gives: the same pipeline, called as
transformers calls it on words (``is_split_into_words``: pre-tokenized
input, no truncation, no padding).

:class:`FolderTokenizer` answers the few questions the encoder asks, under
the names transformers' tokenizers use for them.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

#: the tokenizer classes whose transformers tokenizer is the tokenizer.json pipeline as it is
GENERIC_CLASSES = ("PreTrainedTokenizerFast", "TokenizersBackend")
#: the special tokens transformers' tokenizers name
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
#: tokenizer_config.json keys that leave the pipeline as the file has it (with the special tokens)
NEUTRAL_KEYS = {"tokenizer_class", "model_max_length", "clean_up_tokenization_spaces", "added_tokens_decoder",
                "backend", "is_local", "local_files_only", "name_or_path", "model_input_names", "padding_side",
                "truncation_side", "additional_special_tokens", "extra_special_tokens", *SPECIAL_TOKENS}
#: transformers' model_max_length where a tokenizer has none
VERY_LARGE_INTEGER = int(1e30)


class FolderTokenizer:
    """A ``tokenizers.Tokenizer`` and the special tokens of its configuration."""

    is_fast = True

    def __init__(self, tokenizer: Any, special: dict[str, str], model_max_length: int):
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.backend = tokenizer
        self.special = special
        self.model_max_length = model_max_length

    @property
    def unk_token(self) -> str | None:
        return self.special.get("unk_token")

    @property
    def pad_token_id(self) -> int | None:
        pad = self.special.get("pad_token")
        return None if pad is None else self.backend.token_to_id(pad)

    def split(self, words: Sequence[str], add_special_tokens: bool) -> tuple[list[int], list[int | None]]:
        """The subword ids of pre-tokenized ``words`` and the word of each (None: a special token)."""
        encoding = self.backend.encode(list(words), is_pretokenized=True, add_special_tokens=add_special_tokens)
        return encoding.ids, encoding.word_ids

    def piece_id(self, piece: str) -> int | None:
        """The id of ``piece``, None where it is not in the vocabulary."""
        return self.backend.token_to_id(piece)

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.backend.id_to_token(i) for i in ids]

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> int | None | list[int | None]:
        """As transformers': the unknown token's id for a piece not in the vocabulary."""
        if not isinstance(tokens, str):
            return [self._token_id(token) for token in tokens]
        return self._token_id(tokens)

    def _token_id(self, token: str) -> int | None:
        found = self.backend.token_to_id(token)
        if found is None and self.unk_token is not None:
            return self.backend.token_to_id(self.unk_token)
        return found

    def get_vocab(self) -> dict[str, int]:
        return self.backend.get_vocab(with_added_tokens=True)


def folder_tokenizer(folder: Path) -> FolderTokenizer | None:
    """The tokenizer of ``folder`` read directly, where it gives what
    transformers gives (see the module docstring); else None (the caller then
    loads it with transformers, which also reports what is wrong with it)."""
    settings = _settings(folder)
    if settings is None or not (folder / "tokenizer.json").is_file():
        return None
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception:  # unreadable: transformers' own error says why
        return None
    special = {key: _content(settings[key]) for key in SPECIAL_TOKENS if settings.get(key) is not None}
    if any(not isinstance(token, str) or tokenizer.token_to_id(token) is None for token in special.values()):
        return None
    length = settings.get("model_max_length")
    return FolderTokenizer(tokenizer, special, length if isinstance(length, int) else VERY_LARGE_INTEGER)


def _settings(folder: Path) -> dict[str, Any] | None:
    """tokenizer_config.json with special_tokens_map.json merged in as
    transformers merges it, where both are readable and name a generic class
    and nothing else that matters; else None."""
    try:
        settings = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        mapped = folder / "special_tokens_map.json"
        extra = json.loads(mapped.read_text(encoding="utf-8")) if mapped.is_file() else {}
    except (OSError, ValueError):
        return None
    if not isinstance(settings, dict) or not isinstance(extra, dict):
        return None
    if settings.get("tokenizer_class") not in GENERIC_CLASSES or set(settings) - NEUTRAL_KEYS:
        return None
    if "added_tokens_decoder" not in settings:  # transformers' legacy path: the map's tokens win
        if set(extra) - set(SPECIAL_TOKENS) - {"additional_special_tokens", "extra_special_tokens"}:
            return None
        settings.update(extra)
    if settings.get("additional_special_tokens") or settings.get("extra_special_tokens"):
        return None
    return settings


def _content(token: Any) -> Any:
    """A special token's text: itself, or the ``content`` of a serialized ``AddedToken``."""
    return token.get("content") if isinstance(token, dict) else token
