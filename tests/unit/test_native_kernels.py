"""The compiled GRU-step, attention-backward and dropout-mask kernels: torch's numbers
(to float rounding), on strided row stacks as the loops pass them, declining where they do not
apply, and masks that depend on the seed alone."""

import pytest
import torch

from attnkit.accel import cell_math, native
from attnkit.accel.cell_math import cell_backward, cell_forward, native_gru_applies, tanh_grad
from attnkit.accel.dropout import keep_mask

needs_kernel = pytest.mark.skipif(
    native.library() is None,
    reason="the native kernels cannot be built here (need x86-64 with AVX2 and a C "
    "compiler, and ATTNKIT_NATIVE not 0)",
)


@pytest.fixture(autouse=True)
def _kernels_allowed():
    """The kernels are opt-in: these tests call them as a backend scope allowing them would."""
    with native.allowed():
        yield


def _gru_inputs(dirs, batch, hidden, seed=0):
    """Row stacks laid out as the loops keep them: the input gates a time slice of (D, S, B, 3H),
    the previous state rows with a stride wider than H (a column block of a wider buffer)."""
    g = torch.Generator().manual_seed(seed)
    gates_x = (torch.randn(dirs, 5, batch, 3 * hidden, generator=g) * 3)[:, 2]
    gates_h = torch.randn(dirs, batch, 3 * hidden, generator=g) * 3
    h_prev = torch.randn(dirs, batch, hidden + 7, generator=g)[..., 7:]
    d_h = torch.randn(dirs, batch, hidden, generator=g)
    if dirs == 1:  # the decoder's (B, X) rows
        gates_x, gates_h, h_prev, d_h = (x[0] for x in (gates_x, gates_h, h_prev, d_h))
    return gates_x, gates_h, h_prev, d_h


@needs_kernel
@pytest.mark.parametrize("dirs,batch,hidden", [(2, 9, 256), (1, 7, 256), (2, 3, 13), (1, 1, 5)])
def test_gru_kernels_equal_the_torch_arithmetic(dirs, batch, hidden):
    """Forward (gates and new state) and backward (both gate gradients and the direct part of d
    h_prev) of one GRU step equal cell_math's torch expressions, for widths with and without a
    remainder after the 8-wide vectors, on strided rows."""
    gates_x, gates_h, h_prev, d_h = _gru_inputs(dirs, batch, hidden)
    assert batch == 1 or not h_prev.is_contiguous()
    assert native_gru_applies(False, gates_x, gates_h, h_prev)
    out = {}
    for use_kernel in (True, False):
        gates = torch.full(gates_h.shape, float("nan"))
        h_out = torch.full(d_h.shape, float("nan"))
        cell_forward(
            False, gates_x, gates_h, h_prev, None, gates, None, h_out, None, native_gru=use_kernel
        )
        d_gx, d_gh = torch.full_like(gates, float("nan")), torch.full_like(gates, float("nan"))
        direct, _ = cell_backward(
            False, d_h, None, gates, gates_h, h_prev, None, d_gx, d_gh, native_gru=use_kernel
        )
        out[use_kernel] = (gates, h_out, d_gx, d_gh, direct)
    for name, got, want in zip(
        ("gates", "h", "d_gates_x", "d_gates_h", "direct"), out[True], out[False]
    ):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5, msg=name)


@needs_kernel
@pytest.mark.parametrize("dirs", [1, 2])
def test_gru_kernel_adds_the_hidden_bias_into_the_hidden_gates(dirs):
    """Given h W_hh^T without b_hh and the bias ((3H,) or, per direction, (D, 3H)), the kernel
    leaves in the hidden gates what torch's addmm would have written (the backward reads them) and
    steps as with them."""
    gates_x, gates_h, h_prev, _ = _gru_inputs(dirs, 4, 12)
    bias = torch.randn(dirs, 36) if dirs == 2 else torch.randn(36)
    unbiased = gates_h - (bias.unsqueeze(1) if dirs == 2 else bias)
    want_gates, want_h = torch.empty_like(gates_h), torch.empty(h_prev.shape)
    cell_forward(False, gates_x, gates_h, h_prev, None, want_gates, None, want_h, None)
    gates, h_out = torch.empty_like(gates_h), torch.empty(h_prev.shape)
    cell_forward(
        False,
        gates_x,
        unbiased,
        h_prev,
        None,
        gates,
        None,
        h_out,
        None,
        native_gru=True,
        hidden_bias=bias,
    )
    torch.testing.assert_close(unbiased, gates_h, atol=1e-6, rtol=0)
    torch.testing.assert_close(gates, want_gates, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(h_out, want_h, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="hidden_bias"):  # torch's path takes b_hh inside gates_h
        cell_forward(
            False, gates_x, unbiased, h_prev, None, gates, None, h_out, None, hidden_bias=bias
        )


@needs_kernel
def test_gru_kernel_propagates_nan():
    """A NaN gate gives a NaN state, as torch's sigmoid and tanh do: a diverging model must not look
    healthy."""
    gates_x, gates_h, h_prev, _ = _gru_inputs(1, 2, 11)
    gates_x[0, 3] = float("nan")  # r of unit 3 (vector part)
    gates_x[1, 2 * 11 + 10] = float("nan")  # n of unit 10 (scalar remainder)
    gates, h_out = torch.empty_like(gates_h), torch.empty_like(h_prev.contiguous())
    native.run_gru_forward(gates_x, gates_h, h_prev, gates, h_out)
    assert torch.isnan(h_out[0, 3]) and torch.isnan(h_out[1, 10])
    assert torch.isfinite(h_out[0, :3]).all() and torch.isfinite(h_out[1, :10]).all()


@needs_kernel
def test_row_kernels_decline_what_they_do_not_cover():
    gates_x, gates_h, h_prev, _ = _gru_inputs(1, 4, 8)
    assert native.fits_rows(gates_x, gates_h, h_prev)
    assert not native.fits_rows(
        gates_x.double(), gates_h, h_prev
    )  # float64: torch keeps its precision
    assert not native.fits_rows(gates_x.t(), gates_h, h_prev)  # rows not contiguous
    assert not native.fits_rows(gates_x.unsqueeze(0).unsqueeze(0))  # 4 dims
    assert not native_gru_applies(True, gates_x, gates_h, h_prev)  # an LSTM
    with native.disabled():
        assert not native.fits_rows(gates_x, gates_h, h_prev)
        assert native.keep_mask((3, 4), 0.5) is None


@needs_kernel
@pytest.mark.parametrize("rows,source,width", [(6, 5, 256), (3, 7, 13), (1, 1, 8)])
def test_additive_backward_kernel_equals_torch(rows, source, width):
    """d keys accumulates d e and d query is its sum over the source, as the torch expressions
    give."""
    g = torch.Generator().manual_seed(1)
    hidden = torch.rand(rows, source, width, generator=g) * 2 - 1
    d_scores, v = torch.randn(rows, source, generator=g), torch.randn(width, generator=g)
    d_keys = torch.randn(rows, source, width, generator=g)
    d_e = tanh_grad(d_scores.unsqueeze(-1) * v, hidden, torch.empty_like(hidden))
    want_keys, want_query = d_keys + d_e, d_e.sum(1)
    d_query = torch.full((rows, width), float("nan"))
    native.run_additive_backward(d_scores, hidden, v, d_keys, d_query)
    torch.testing.assert_close(d_keys, want_keys, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(d_query, want_query, atol=2e-6, rtol=1e-5)


@needs_kernel
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_kernel_masks_have_the_rate_and_no_pattern(p):
    """Values 0 and 1/(1-p); the keep rate of 1e6 draws within 5 standard deviations; neighbours (in
    the same row, in the next row, at the chunk boundary of the kernel's work split) independent."""
    torch.manual_seed(0)
    mask = native.keep_mask((1000, 1000), p)
    values = mask.unique()
    assert (
        values.numel() == 2 and values[0] == 0 and values[1] == pytest.approx(1 / (1 - p), rel=1e-6)
    )
    kept = (mask > 0).float()
    assert kept.mean().item() == pytest.approx(1 - p, abs=5 * (p * (1 - p) / 1e6) ** 0.5)
    flat = kept.view(-1)
    for lag in (1, 1000, 4096):
        both = (flat[:-lag] * flat[lag:]).mean().item()
        assert both == pytest.approx((1 - p) ** 2, abs=3e-3), lag


@needs_kernel
def test_kernel_masks_follow_the_seed_not_the_threads():
    """torch.manual_seed fixes the mask, whatever the number of threads; the next draw differs."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        torch.manual_seed(5)
        one = native.keep_mask((3, 5000), 0.3)
        torch.set_num_threads(2)
        torch.manual_seed(5)
        two = native.keep_mask((3, 5000), 0.3)
        after = native.keep_mask((3, 5000), 0.3)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)
    assert not torch.equal(two, after)


def test_float32_masks_come_from_the_kernel_where_it_is_built(monkeypatch):
    """keep_mask takes the kernel's mask for float32 (torch's random bits without it), float64 from
    torch."""
    calls = []
    real = native.keep_mask
    monkeypatch.setattr(native, "keep_mask", lambda *a: calls.append(a) or real(*a))
    torch.manual_seed(0)
    mask = keep_mask((40, 50), 0.25, torch.empty(0))
    assert mask.dtype == torch.float32 and len(calls) == 1
    with native.disabled():
        torch_mask = keep_mask((40, 50), 0.25, torch.empty(0))
    for m in (mask, torch_mask):
        assert m.dtype == torch.float32 and m.unique().tolist() == [0.0, pytest.approx(4 / 3)]
    assert keep_mask((4, 5), 0.25, torch.empty(0, dtype=torch.float64)).dtype == torch.float64
    assert (
        len(calls) == 2
    )  # the float64 mask did not ask the kernel (the disabled call did, and declined)


def test_cell_math_uses_the_kernel_only_when_asked(monkeypatch):
    """native_gru=False (the default) never calls the kernel, so float64 and LSTM steps stay
    torch's."""
    monkeypatch.setattr(native, "run_gru_forward", lambda *a: pytest.fail("kernel called"))
    gates_x, gates_h, h_prev, _ = _gru_inputs(1, 3, 8)
    cell_math.cell_forward(
        False,
        gates_x,
        gates_h,
        h_prev,
        None,
        torch.empty_like(gates_h),
        None,
        torch.empty(3, 8),
        None,
    )
