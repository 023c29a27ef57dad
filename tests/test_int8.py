"""The int8 encoder (:mod:`kgparser.model.int8`): each layer's arithmetic
against a reference computed by hand, the per-token scales that keep one
token's large values from coarsening another's, and ``--quantize`` /
``Parser.load(..., quantize=...)`` turning a trained model's encoder to int8
or back at parse time, in one process and in workers."""
import pytest
import torch
from torch import nn

from kgparser.model.int8 import INT8_MAX, Int8Linear, quantized

transformers = pytest.importorskip("transformers")

from test_cli_train_parse import write_config  # noqa: E402
from test_encoder import tiny_bert  # noqa: E402
from test_model import IGNORE_TINY_MODEL_WARNINGS  # noqa: E402

from kgparser.cli import main  # noqa: E402
from kgparser.inference.parser import Parser  # noqa: E402
from kgparser.model.encoder import EncoderError  # noqa: E402

pytestmark = IGNORE_TINY_MODEL_WARNINGS


def linear(inputs: int = 24, outputs: int = 10, seed: int = 0) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(inputs, outputs)


def by_hand(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """Vector-wise int8 in float64: each weight row and each input row scaled by its absmax / 127."""
    w, x = layer.weight.double(), x.double()
    w_scale = w.abs().amax(1, keepdim=True) / INT8_MAX
    x_scale = x.abs().amax(1, keepdim=True) / INT8_MAX
    products = torch.round(x / x_scale) @ torch.round(w / w_scale).T
    return products * x_scale * w_scale.T + layer.bias.double()


def test_an_int8_layer_computes_what_the_scales_say():
    layer = linear()
    x = torch.randn(7, 24)
    assert torch.allclose(Int8Linear(layer)(x).double(), by_hand(layer, x), rtol=1e-5, atol=1e-5)


def test_an_int8_layer_is_close_to_the_float_layer():
    layer = linear(384, 384)
    x = torch.randn(64, 384)
    exact, approximate = layer(x).detach(), Int8Linear(layer)(x)
    assert not torch.equal(exact, approximate)
    assert ((approximate - exact).norm() / exact.norm()).item() < 0.01


def test_a_tokens_scale_is_its_own():
    """One token with a value 1,000 times the others' leaves the other token's
    result as it is alone (one scale for the whole input would round the other
    token's values to nothing)."""
    layer = Int8Linear(linear())
    quiet = torch.randn(1, 24)
    loud = torch.randn(1, 24)
    loud[0, 3] = 1000.0
    assert torch.equal(layer(torch.cat([loud, quiet]))[1], layer(quiet)[0])


def test_a_row_of_zeros_gives_the_bias_and_shapes_are_kept():
    layer = linear()
    out = Int8Linear(layer)(torch.zeros(2, 3, 24))
    assert out.shape == (2, 3, 10)
    assert torch.equal(out, layer.bias.detach().expand(2, 3, 10))


def test_quantized_replaces_every_linear_layer_and_nothing_else():
    model = nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 2)), nn.Tanh())
    x = torch.randn(5, 4)
    expected = model(x).detach()
    quantized(model)
    kinds = [type(module).__name__ for module in model.modules()]
    assert kinds.count("Int8Linear") == 2 and "Linear" not in kinds and "LayerNorm" in kinds
    assert torch.allclose(model(x), expected, atol=0.05)


# -- at parse time -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A float32 run with an encoder, and one trained with ``quantize: true``."""
    folder = tmp_path_factory.mktemp("int8")
    tiny_bert(folder / "bert")
    for name, extra in (("float", ""), ("int8", ", quantize: true")):
        run = folder / name
        run.mkdir()
        config = write_config(run, model_extra=f"  encoder: {{path: {folder / 'bert'}, dim: 8{extra}}}\n",
                              sentences=(12, 4))
        assert main(["train", config, "--quiet"]) == 0
    return folder


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """A run whose encoder's layers trained with the parser, with ``quantize: true``:
    they train in float32 and are quantized once trained."""
    folder = tmp_path_factory.mktemp("int8-finetuned")
    tiny_bert(folder / "bert")
    config = write_config(folder, model_extra=f"  encoder: {{path: {folder / 'bert'}, dim: 8, finetune: true, "
                                              f"lr: 0.01, quantize: true}}\n", sentences=(12, 4))
    assert main(["train", config, "--quiet"]) == 0
    return folder


def int8_layers(parser: Parser) -> int:
    return sum(isinstance(module, Int8Linear) for module in parser.model.encoder.model.modules())


def test_quantize_turns_a_float_models_encoder_to_int8_and_back(trained):
    dev = str(trained / "float" / "dev.conllu")
    plain = Parser.load(trained / "float" / "run" / "best.pt")
    fast = Parser.load(trained / "float" / "run" / "best.pt", quantize=True)
    assert int8_layers(plain) == 0 and int8_layers(fast) == 2 * 6  # 2 layers of 6 linear layers
    assert [s.n for s in fast.parse(dev)] == [s.n for s in plain.parse(dev)]
    assert int8_layers(Parser.load(trained / "int8" / "run" / "best.pt")) == 12
    assert int8_layers(Parser.load(trained / "int8" / "run" / "best.pt", quantize=False)) == 0


def test_the_command_line_quantizes_in_one_process_and_in_workers(trained, tmp_path, capsys):
    model, dev = str(trained / "float" / "run" / "best.pt"), str(trained / "float" / "dev.conllu")
    expected = "".join(s.to_conllu() for s in Parser.load(model, quantize=True).parse(dev))
    assert main(["parse", "--model", model, dev, "--quantize", "--quiet"]) == 0
    assert capsys.readouterr().out == expected
    out = tmp_path / "out.conllu"
    assert main(["parse", "--model", model, dev, "--quantize", "--processes", "2", "--chunk-size", "2",
                 "--quiet", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == expected


def test_a_finetuned_encoder_is_quantized_once_its_trained_weights_are_in(finetuned, tmp_path, capsys):
    """Its layers trained in float32 (the checkpoint holds them), and the parse
    quantizes them after loading; the network's state stays that of float
    layers, so workers rebuild the same model and parse the same."""
    checkpoint, dev = finetuned / "run" / "best.pt", str(finetuned / "dev.conllu")
    saved = torch.load(checkpoint, weights_only=True)["model"]["weights"]
    assert any(name.startswith("finetuned_encoder.") and name.endswith("query.weight") for name in saved)
    parser = Parser.load(checkpoint)
    float_layers = Parser.load(checkpoint, quantize=False).model.encoder.model.modules()
    assert int8_layers(parser) == sum(isinstance(module, nn.Linear) for module in float_layers) >= 12
    state = parser.model.network.state_dict()
    assert {name: value.dtype for name, value in state.items() if name in saved} == \
        {name: value.dtype for name, value in saved.items() if name in state}
    assert all(torch.equal(state[name], saved[name]) for name in saved if name.startswith("finetuned_encoder."))
    expected = "".join(s.to_conllu() for s in parser.parse(dev))
    out = tmp_path / "out.conllu"
    assert main(["parse", "--model", str(checkpoint), dev, "--processes", "2", "--chunk-size", "2", "--quiet",
                 "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == expected
    assert int8_layers(Parser.load(checkpoint, quantize=False)) == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_a_gpu_the_int8_layers_multiply_in_float32(trained):
    checkpoint, dev = trained / "float" / "run" / "best.pt", str(trained / "float" / "dev.conllu")
    on_gpu = Parser.load(checkpoint, device="cuda", quantize=True)
    assert int8_layers(on_gpu) == 12
    assert [s.n for s in on_gpu.parse(dev)] == [s.n for s in Parser.load(checkpoint).parse(dev)]


def test_quantize_without_a_frozen_encoder_is_one_line(trained, tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    config = write_config(plain)
    assert main(["train", config, "--quiet"]) == 0
    with pytest.raises(EncoderError, match="trained without a pretrained encoder.*--quantize"):
        Parser.load(plain / "run" / "best.pt", quantize=True)
    assert main(["parse", "--model", str(plain / "run" / "best.pt"), str(plain / "dev.conllu"), "--quantize"]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--quantize" in error[0]
    Parser.load(plain / "run" / "best.pt", quantize=False)  # float32 is what it is: nothing to refuse


def test_the_spacy_component_quantizes_as_told(trained):
    spacy = pytest.importorskip("spacy")
    import kgparser.inference.spacy_component  # noqa: F401  (registers the factory)

    nlp = spacy.blank("en")
    nlp.add_pipe("kgparser", config={"model": str(trained / "float" / "run" / "best.pt"), "quantize": True,
                                         "tags": "input"})
    doc = nlp("the dog runs .")
    assert int8_layers(nlp.get_pipe("kgparser").parser) == 12
    assert all(token.head is not None for token in doc)
