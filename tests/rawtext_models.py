"""A tiny untrained model that tags (UD UPOS, XPOS, FEATS) and parses, with
``data.lang: en``, for the raw-text, spaCy-component and picture tests."""
from test_model import tiny_config, tiny_conllu
from test_parse_safety import save

from kgparser.io.conllu import parse_conllu
from kgparser.model import Model

#: the tiny treebank's tags A, B, C as UD UPOS (spaCy accepts only those as token.pos_)
UD_TAGS = {"\tA\t_\t_\t": "\tNOUN\tNN\tNumber=Sing\t", "\tB\t_\t_\t": "\tVERB\tVB\t_\t",
           "\tC\t_\t_\t": "\tDET\tDT\t_\t"}


def tagged_sentences(count: int = 8):
    text = tiny_conllu(count, seed=1)
    for tiny, ud in UD_TAGS.items():
        text = text.replace(tiny, ud)
    return list(parse_conllu(text, "tiny.conllu"))


def save_tiny_model(path):
    """Save the model at ``path`` and return it."""
    config = tiny_config("arc-hybrid")
    config.data.lang = "en"
    config.model.tag_input, config.model.pos_dim = "none", 0
    config.model.tagger.upos = config.model.tagger.xpos = config.model.tagger.feats = True
    return save(Model.build(config, tagged_sentences()), path)
