"""Hard visual attention: the glimpse sensor, the Gaussian location policy, REINFORCE.

The Recurrent Attention Model (Mnih et al. 2014) looks at an image through a
*retina*: at location ``l`` it cuts ``k`` square patches centred on ``l``, the
first ``base`` pixels wide and each next one ``factor`` times wider, and
shrinks every patch to ``base x base`` by average pooling. Fine detail at the
centre, a blurry wide view around it.

Coordinates: a location is ``(x, y)`` in ``[-1, 1]^2``; ``x`` runs left to
right over the columns, ``y`` top to bottom over the rows, ``(-1, -1)`` is the
top-left corner and ``(0, 0)`` the centre. On an image of ``H x W`` pixels the
centre pixel of a glimpse is column ``floor((x + 1) / 2 * W)`` and row
``floor((y + 1) / 2 * H)`` (clamped into the image), and a patch of ``p``
pixels covers columns ``cx - p // 2 .. cx - p // 2 + p - 1`` (rows alike).
Pixels outside the image read as 0 (zero padding).

Where to detach, the recurring bugs of REINFORCE implementations:

* the sampled location is an *action*: it enters the glimpse sensor and the
  glimpse network detached (:meth:`LocationPolicy.forward` returns it so), so
  the classification loss never reaches the policy through the sample;
* the policy's only gradient is REINFORCE: ``-log pi(l_t) * (R - b_t)``;
* the baseline inside that term is detached (it must not be trained to make
  the REINFORCE loss small); the baseline learns from its own MSE to ``R``;
* the REINFORCE term is summed over the ``G`` glimpses (each action is
  credited with the whole episode's reward) and averaged over the batch,
  like the cross entropy, so the two losses have comparable scale.

Shape legend: B batch, C channels, G glimpses, k scales, p patch width.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def patch_sizes(base: int, scales: int, factor: int) -> list[int]:
    """Widths of the ``scales`` patches: ``base, base*factor, base*factor**2, ...``."""
    if base < 1 or scales < 1 or factor < 1:
        raise ValueError(
            f"patch base, scales and factor must be >= 1, got {base}, {scales}, {factor}"
        )
    return [base * factor**i for i in range(scales)]


def location_to_pixel(locations: Tensor, height: int, width: int) -> Tensor:
    """Glimpse centres in pixels: ``(..., 2)`` locations ``(x, y)`` -> ``(..., 2)`` long
    ``(col, row)``."""
    x = torch.floor((locations[..., 0].clamp(-1, 1) + 1) * (width / 2)).long().clamp(0, width - 1)
    y = torch.floor((locations[..., 1].clamp(-1, 1) + 1) * (height / 2)).long().clamp(0, height - 1)
    return torch.stack([x, y], dim=-1)


def glimpse_boxes(locations: Tensor, height: int, width: int, sizes: list[int]) -> Tensor:
    """Patch squares in pixels, for pictures: ``(..., 2)`` -> ``(..., k, 3)`` rows
    ``(x0, y0, size)``.

    ``x0, y0`` is the top-left pixel of the patch (may be negative or beyond
    the image at the border; those pixels read as zeros).
    """
    centre = location_to_pixel(locations, height, width)  # (..., 2)
    boxes = []
    for p in sizes:
        corner = centre - p // 2
        size = torch.full_like(corner[..., :1], p)
        boxes.append(torch.cat([corner, size], dim=-1))
    return torch.stack(boxes, dim=-2)  # (..., k, 3)


class GlimpseSensor(nn.Module):
    """Retina-like sensor: ``k`` patches of growing scale, each pooled to ``base x base``.

    ``forward(images (B, C, H, W), locations (B, 2)) -> (B, k, C, base, base)``.
    For a recurrent model that glimpses the same batch ``G`` times, pad once
    with :meth:`pad` and call :meth:`extract` per step. Extraction is a single
    batched gather per scale (no Python loop over the batch) and runs on any
    device. It has no parameters: gradients reach the images, never the
    locations (they are integer pixel indices).
    """

    def __init__(self, base: int = 8, scales: int = 1, factor: int = 2):
        super().__init__()
        self.base = base
        self.sizes = patch_sizes(base, scales, factor)
        self.factor = factor

    @property
    def scales(self) -> int:
        return len(self.sizes)

    @property
    def out_features(self) -> int:
        """Length of one flattened glimpse per channel: ``k * base * base``."""
        return self.scales * self.base * self.base

    def pad(self, images: Tensor) -> tuple[Tensor, int]:
        """Zero-pad ``(B, C, H, W)`` so the largest patch around any pixel fits; returns
        (padded, left pad).

        ``P // 2`` before and ``P - P // 2`` after each axis (``P`` the largest
        patch): ``(B, C, H + P, W + P)``.
        """
        big = self.sizes[-1]
        before, after = big // 2, big - big // 2
        return F.pad(images, (before, after, before, after)), before

    def extract(
        self, padded: Tensor, pad: int, height: int, width: int, locations: Tensor
    ) -> Tensor:
        """Glimpses from a padded batch: ``(B, C, H+P, W+P)``, ``(B, 2)`` ->
        ``(B, k, C, base, base)``."""
        b, c = padded.shape[:2]
        centre = (
            location_to_pixel(locations.detach(), height, width) + pad
        )  # (B, 2) in padded pixels
        batch_index = torch.arange(b, device=padded.device)[:, None, None]  # (B, 1, 1)
        channels_last = padded.permute(0, 2, 3, 1)  # (B, H+P, W+P, C)
        out = []
        for p in self.sizes:
            offsets = torch.arange(p, device=padded.device) - p // 2  # (p,)
            cols = centre[:, 0:1] + offsets  # (B, p)
            rows = centre[:, 1:2] + offsets  # (B, p)
            patch = channels_last[batch_index, rows[:, :, None], cols[:, None, :]]  # (B, p, p, C)
            patch = patch.permute(0, 3, 1, 2)  # (B, C, p, p)
            if p != self.base:
                patch = F.avg_pool2d(patch, kernel_size=p // self.base)  # (B, C, base, base)
            out.append(patch)
        return torch.stack(out, dim=1)  # (B, k, C, base, base)

    def forward(self, images: Tensor, locations: Tensor) -> Tensor:
        height, width = images.shape[-2:]
        padded, pad = self.pad(images)
        return self.extract(padded, pad, height, width, locations)


def gaussian_log_prob(sample: Tensor, mean: Tensor, std: float) -> Tensor:
    """Log density of an isotropic Gaussian, summed over the last dim: ``(B, 2) -> (B,)``."""
    z = (sample - mean) / std
    return (-0.5 * z * z - math.log(std) - _LOG_SQRT_2PI).sum(dim=-1)


class LocationPolicy(nn.Module):
    """Gaussian location policy ``pi(l | h) = N(tanh(f(h)), std^2 I)`` with a fixed ``std``.

    ``forward(state (B, D), sample=True) -> (location, log_prob, mean)``:

    * ``location`` (B, 2): the action, clamped to ``[-1, 1]`` and **detached**;
    * ``log_prob`` (B,): ``log pi(location)``, differentiable w.r.t. the policy
      (and the state, unless ``detach_state``) -- the only path to the policy;
    * ``mean`` (B, 2): ``tanh(f(h))``; with ``sample=False`` the location is the mean.

    ``detach_state=True`` feeds ``h.detach()`` to ``f``, so REINFORCE trains only
    the policy's own layers and the core is shaped by classification alone (the
    stabler choice on MNIST); ``False`` lets REINFORCE reach the core as in the paper.
    """

    def __init__(
        self, state_dim: int, std: float, hidden: int | None = None, detach_state: bool = True
    ):
        super().__init__()
        if std <= 0:
            raise ValueError(f"location std must be > 0, got {std}")
        self.std = std
        self.detach_state = detach_state
        hidden = hidden or state_dim // 2
        self.net = nn.Sequential(nn.Linear(state_dim, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, state: Tensor, sample: bool = True) -> tuple[Tensor, Tensor, Tensor]:
        if self.detach_state:
            state = state.detach()
        mean = torch.tanh(self.net(state))  # (B, 2)
        if sample:
            raw = (
                mean + self.std * torch.randn_like(mean)
            ).detach()  # the action: no reparameterisation path
        else:
            raw = mean.detach()
        log_prob = gaussian_log_prob(raw, mean, self.std)  # (B,)
        return raw.clamp(-1.0, 1.0), log_prob, mean


def reinforce_loss(log_probs: Tensor, rewards: Tensor, baselines: Tensor) -> Tensor:
    """REINFORCE with a baseline: ``mean_B sum_G -log pi(l_t) * (R - b_t)``.

    ``log_probs`` (B, G), ``rewards`` (B,) (e.g. 1 for a correct class, 0
    otherwise; no gradient), ``baselines`` (B, G). The baseline is detached
    here: it only lowers the variance of the estimate, it is trained by
    :func:`baseline_loss`.
    """
    advantage = rewards.detach()[:, None] - baselines.detach()  # (B, G)
    return -(log_probs * advantage).sum(dim=1).mean()


def baseline_loss(baselines: Tensor, rewards: Tensor) -> Tensor:
    """MSE of the per-glimpse baselines ``(B, G)`` to the episode reward ``(B,)``."""
    return F.mse_loss(baselines, rewards.detach()[:, None].expand_as(baselines))
