"""The moving average of the weights (training.ema_decay)."""
import pytest
import torch

from kgparser.training.averaging import WeightAverage


def test_the_average_follows_the_decay_schedule():
    weight = torch.nn.Parameter(torch.zeros(3))
    average = WeightAverage([weight], decay=0.5)
    expected = torch.zeros(3)
    for step in range(1, 6):
        with torch.no_grad():
            weight.fill_(float(step))
        average.update()
        decay = min(0.5, (1 + step - 1) / (10 + step - 1))
        expected = decay * expected + (1 - decay) * step
        assert torch.allclose(average.averages[0], expected)
    assert average.updates == 5


def test_swapped_in_evaluates_the_average_and_puts_the_weights_back():
    weight = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    average = WeightAverage([weight], decay=0.9)
    with torch.no_grad():
        weight.add_(10.0)
    average.update()  # decay 0.1 at the first update
    with average.swapped_in() as current:
        assert torch.allclose(weight, torch.tensor([10.0, 11.0]))
        assert torch.allclose(current[0], torch.tensor([11.0, 12.0]))
        state = average.state(current)
    assert torch.allclose(weight, torch.tensor([11.0, 12.0]))

    again = torch.nn.Parameter(torch.tensor([10.0, 11.0]))  # a model loaded from the saved averages
    resumed = WeightAverage([again], decay=0.9)
    resumed.restore(state)
    assert torch.allclose(again, torch.tensor([11.0, 12.0]))
    assert torch.allclose(resumed.averages[0], torch.tensor([10.0, 11.0]))
    assert resumed.updates == 1


def test_swapped_in_restores_the_weights_after_an_error():
    weight = torch.nn.Parameter(torch.tensor([1.0]))
    average = WeightAverage([weight], decay=0.9)
    with torch.no_grad():
        weight.fill_(5.0)
    with pytest.raises(RuntimeError):
        with average.swapped_in():
            raise RuntimeError("evaluation failed")
    assert weight.item() == 5.0
