"""The matmul-only replay of speed.py --matmul-ceiling: it records every matmul form a training
update uses, forward and backward, with the operands' layouts, and replays them."""

import torch
from repo_scripts import load_script

ceiling = load_script("benchmarks/matmul_ceiling.py")


def test_records_every_matmul_form_with_its_layout_and_nothing_else():
    w = torch.randn(6, 4, requires_grad=True)
    x = torch.randn(3, 4)
    keys = torch.randn(2, 5, 4)
    out = torch.empty(3, 6)
    with ceiling.MatmulRecorder() as recorder:
        y = torch.addmm(torch.zeros(6), x, w.t())  # a transposed operand
        torch.mm(x, w.detach().t(), out=out)  # out=
        scores = torch.bmm(keys, x[:2].unsqueeze(-1))  # a view
        torch.zeros(2, 5, 1).baddbmm_(keys, x[:2].unsqueeze(-1))  # in place
        (
            y.tanh().sum() + scores.sum()
        ).backward()  # the backward's matmul (d w), not tanh's arithmetic
    names = [func.overloadpacket.__name__ for func, _, _ in recorder.calls]
    assert names[:4] == ["addmm", "mm", "bmm", "baddbmm_"]
    assert len(names) == 5 and names[4] == "mm"  # d w = (d y)^T x
    _, args, kwargs = recorder.calls[1]
    assert args[1] == ((4, 6), (1, 4), torch.float32, torch.device("cpu"))  # w.t()
    assert kwargs["out"][0] == (3, 6)


def test_replay_runs_the_recorded_calls_on_tensors_of_their_layouts():
    base = torch.randn(4, 1)
    with ceiling.MatmulRecorder() as recorder:
        torch.mm(torch.randn(3, 4), base.expand(4, 7))  # an expanded operand (stride 0)
        torch.bmm(
            torch.randn(2, 3, 4), torch.randn(2, 4, 5).transpose(1, 2).contiguous().transpose(1, 2)
        )
    seconds = ceiling.replay_seconds(recorder.calls, repeats=2, sync=lambda: None)
    assert 0 < seconds < 1
    made = ceiling._materialise(recorder.calls[0][1][1])
    assert made.shape == (4, 7) and made.stride() == (1, 0)


def test_ceiling_reports_real_and_matmul_only_rates():
    layer = torch.nn.Linear(32, 32)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)

    def update(batch):
        optimizer.zero_grad()
        layer(batch).tanh().sum().backward()
        optimizer.step()
        return batch.size(0)

    result = ceiling.matmul_ceiling(
        [torch.randn(16, 32) for _ in range(3)], update, sync=lambda: None, repeats=1
    )
    assert (
        result["batches"] == 3 and result["matmul_calls_per_update"] == 2
    )  # forward addmm, d weight mm
    assert result["real_tokens_per_s"] > 0 and result["matmul_only_tokens_per_s"] > 0
    assert (
        0 < result["matmul_share_of_real_time"] < 50
    )  # (tiny matmuls: the share is noisy, not the point)
