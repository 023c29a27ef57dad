"""The CUDA path: training on the GPU, checkpoints that load on either device,
and GPU parses that agree with CPU parses of the same weights.  Skipped where
torch sees no CUDA device (CI); run on a GPU machine with
``python -m pytest tests/test_cuda.py``."""
import pytest
import torch
from test_training import tiny_run

from kgparser.inference.parser import Parser
from kgparser.training import train

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_training_on_cuda_writes_checkpoints_that_load_on_cpu(tmp_path):
    summary = train(tiny_run(tmp_path, epochs=2, device="cuda"), log=lambda line: None)
    assert summary.test is not None
    data = torch.load(tmp_path / "run" / "best.pt", weights_only=True, map_location="cpu")
    assert all(tensor.device.type == "cpu" for tensor in data["model"]["weights"].values())
    parsed = Parser.load(tmp_path / "run" / "best.pt").parse(tmp_path / "dev.conllu")
    assert parsed and all(head >= 0 for sentence in parsed for head in sentence.heads[1:])


def test_gpu_and_cpu_parses_of_the_same_weights_agree(tmp_path):
    train(tiny_run(tmp_path, epochs=2), log=lambda line: None)
    checkpoint = tmp_path / "run" / "best.pt"
    on_cpu = Parser.load(checkpoint).parse(tmp_path / "dev.conllu")
    on_gpu = Parser.load(checkpoint, device="cuda").parse(tmp_path / "dev.conllu")
    assert [s.to_conllu() for s in on_gpu] == [s.to_conllu() for s in on_cpu]


def test_cuda_training_is_reproducible_with_a_fixed_seed(tmp_path):
    first = train(tiny_run(tmp_path, "first", epochs=2, device="cuda"), log=lambda line: None)
    second = train(tiny_run(tmp_path, "second", epochs=2, device="cuda"), log=lambda line: None)
    assert abs(first.best_las - second.best_las) < 0.01
