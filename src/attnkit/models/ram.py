"""Recurrent Attention Model (Mnih, Heess, Graves, Kavukcuoglu 2014), hard attention.

The model never sees the whole image. For ``G`` steps it

1. picks a location ``l_t ~ N(mu_t, std^2)``, ``mu_t = tanh(f(h_t))`` (the
   location policy, :class:`~attnkit.attention.hard.LocationPolicy`; ``h_0 = 0``
   so the first location is learned too);
2. reads a glimpse there: ``k`` patches of growing scale, pooled to
   ``base x base`` (:class:`~attnkit.attention.hard.GlimpseSensor`);
3. embeds it with the glimpse network
   ``g_t = relu(W_g relu(W_p patches) + W_l relu(W_e l_t))``;
4. updates the core RNN ``h_{t+1} = core(g_t, h_t)``;

and after the last glimpse classifies from ``h_G``. Training uses the hybrid
loss (:func:`hybrid_loss`): cross entropy for the classifier, glimpse and
core networks; REINFORCE with the reward ``R = 1[correct]`` for the location
policy; MSE to ``R`` for the learned baseline ``b_t = w^T h_t + c`` (fed
``h_t`` detached, so it only learns to predict the reward). At test time
:func:`predict` averages the class probabilities of ``M`` sampled glimpse
paths (Monte Carlo).

Shapes: B batch, C channels, G glimpses, k scales, D hidden width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.hard import GlimpseSensor, LocationPolicy, baseline_loss, reinforce_loss
from attnkit.errors import ConfigError
from attnkit.models.backend_scope import BackendScoped, in_backend_scope


@dataclass
class RAMConfig:
    """``model:`` with ``type: ram`` -- the Recurrent Attention Model (hard attention)."""

    glimpses: int = 6
    """Glimpses per image (G)."""
    patch: int = 8
    """Side of the finest glimpse patch in pixels; every scale is pooled to this size."""
    scales: int = 1
    """Patches per glimpse, each scale_factor times wider than the previous."""
    scale_factor: int = 2
    """Width ratio of successive patches (an integer, for exact average pooling)."""
    glimpse_hidden: int = 128
    """Width of the patch ("what") embedding."""
    location_hidden: int = 128
    """Width of the location ("where") embedding."""
    hidden: int = 256
    """Width of the glimpse feature and of the core RNN state."""
    core: str = "rnn"
    """Core network: rnn (the paper's ReLU RNN), lstm or gru."""
    std: float = 0.15
    """Standard deviation of the Gaussian location policy (locations span [-1, 1])."""
    reinforce_weight: float = 1.0
    """Weight of the REINFORCE term in the hybrid loss."""
    detach_policy_state: bool = True
    """Feed the location policy the core state detached, so REINFORCE trains the policy layers
    only."""
    mc_samples: int = 10
    """Test time: glimpse paths sampled per image, class probabilities averaged."""
    dev_mc_samples: int = 1
    """Dev error during training: glimpse paths per image."""

    CHOICES = {"core": ("rnn", "lstm", "gru")}

    def validate(self, where: str) -> None:
        for name in (
            "glimpses",
            "patch",
            "scales",
            "scale_factor",
            "glimpse_hidden",
            "location_hidden",
            "hidden",
            "mc_samples",
            "dev_mc_samples",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")
        if self.std <= 0:
            raise ConfigError(f"{where}.std: must be > 0, got {self.std}")


@dataclass
class RAMOutput:
    """What one forward pass returns (all batch-first)."""

    log_probs: Tensor  # (B, 10) class log-probabilities from h_G
    locations: Tensor  # (B, G, 2) the glimpse locations used, in [-1, 1]
    means: Tensor  # (B, G, 2) the policy means mu_t
    location_log_probs: Tensor  # (B, G) log pi(l_t | h_t)
    baselines: Tensor  # (B, G) b_t, the predicted reward before glimpse t


class GlimpseNetwork(nn.Module):
    """``(patches (B, k, C, p, p), locations (B, 2)) -> g (B, D)``."""

    def __init__(self, patch_features: int, glimpse_hidden: int, location_hidden: int, out: int):
        super().__init__()
        self.what = nn.Linear(patch_features, glimpse_hidden)
        self.where = nn.Linear(2, location_hidden)
        self.what_out = nn.Linear(glimpse_hidden, out)
        self.where_out = nn.Linear(location_hidden, out)

    def forward(self, patches: Tensor, locations: Tensor) -> Tensor:
        what = F.relu(self.what(patches.flatten(1)))  # (B, Hg)
        where = F.relu(self.where(locations))  # (B, Hl)
        return F.relu(self.what_out(what) + self.where_out(where))  # (B, D)


class CoreNetwork(nn.Module):
    """The recurrent core: ``rnn`` (the paper's ReLU RNN), ``lstm`` or ``gru``.

    ``forward(g (B, D), state) -> state``; ``hidden(state) -> h (B, D)``.
    The LSTM state is the pair ``(h, c)``.
    """

    KINDS = ("rnn", "lstm", "gru")

    def __init__(self, kind: str, size: int):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"unknown core {kind!r}; valid: {', '.join(self.KINDS)}")
        self.kind = kind
        self.size = size
        if kind == "rnn":
            self.input = nn.Linear(size, size)
            self.recurrent = nn.Linear(size, size)
        elif kind == "lstm":
            self.cell = nn.LSTMCell(size, size)
        else:
            self.cell = nn.GRUCell(size, size)

    def initial(self, batch: int, device: torch.device):
        h = torch.zeros(batch, self.size, device=device)
        return (h, torch.zeros_like(h)) if self.kind == "lstm" else h

    def hidden(self, state) -> Tensor:
        return state[0] if self.kind == "lstm" else state

    def forward(self, g: Tensor, state):
        if self.kind == "rnn":
            return F.relu(self.input(g) + self.recurrent(state))
        return self.cell(g, state)


class RecurrentAttentionModel(BackendScoped, nn.Module):
    """RAM: ``forward(images (B, C, H, W), sample=True) -> RAMOutput``.

    ``sample=False`` follows the policy means (a deterministic path, for
    pictures); ``sample=True`` draws every location (training, and the Monte
    Carlo estimate of :func:`predict`).
    """

    def __init__(
        self,
        glimpses: int = 6,
        patch: int = 8,
        scales: int = 1,
        scale_factor: int = 2,
        channels: int = 1,
        glimpse_hidden: int = 128,
        location_hidden: int = 128,
        hidden: int = 256,
        core: str = "rnn",
        std: float = 0.15,
        classes: int = 10,
        detach_policy_state: bool = True,
    ):
        super().__init__()
        self.glimpses = glimpses
        self.sensor = GlimpseSensor(patch, scales, scale_factor)
        self.glimpse_net = GlimpseNetwork(
            channels * self.sensor.out_features, glimpse_hidden, location_hidden, hidden
        )
        self.core = CoreNetwork(core, hidden)
        self.policy = LocationPolicy(hidden, std, detach_state=detach_policy_state)
        self.baseline = nn.Linear(hidden, 1)
        self.classifier = nn.Linear(hidden, classes)

    @in_backend_scope
    def forward(self, images: Tensor, sample: bool = True) -> RAMOutput:
        b, _, height, width = images.shape
        padded, pad = self.sensor.pad(images)  # once for all G glimpses
        state = self.core.initial(b, images.device)
        locations, means, log_pis, baselines = [], [], [], []
        for _ in range(self.glimpses):
            h = self.core.hidden(state)  # (B, D)
            loc, log_pi, mean = self.policy(
                h, sample
            )  # loc is detached: an action, not a function of mu
            baselines.append(self.baseline(h.detach()).squeeze(-1))  # (B,)
            patches = self.sensor.extract(padded, pad, height, width, loc)  # (B, k, C, p, p)
            state = self.core(self.glimpse_net(patches, loc), state)
            locations.append(loc)
            means.append(mean)
            log_pis.append(log_pi)
        log_probs = F.log_softmax(self.classifier(self.core.hidden(state)), dim=-1)  # (B, 10)
        return RAMOutput(
            log_probs=log_probs,
            locations=torch.stack(locations, dim=1),  # (B, G, 2)
            means=torch.stack(means, dim=1),  # (B, G, 2)
            location_log_probs=torch.stack(log_pis, dim=1),  # (B, G)
            baselines=torch.stack(baselines, dim=1),  # (B, G)
        )


@dataclass
class HybridLoss:
    """The three terms of the hybrid loss (scalars) and the reward (B,)."""

    total: Tensor
    classification: Tensor
    reinforce: Tensor
    baseline: Tensor
    reward: Tensor


def hybrid_loss(output: RAMOutput, targets: Tensor, reinforce_weight: float = 1.0) -> HybridLoss:
    """Cross entropy + ``reinforce_weight`` * REINFORCE + baseline MSE, reward
    ``R = 1[argmax = y]``."""
    classification = F.nll_loss(output.log_probs, targets)
    reward = (output.log_probs.argmax(dim=-1) == targets).float().detach()  # (B,)
    reinforce = reinforce_loss(output.location_log_probs, reward, output.baselines)
    base = baseline_loss(output.baselines, reward)
    total = classification + reinforce_weight * reinforce + base
    return HybridLoss(total, classification, reinforce, base, reward)


@torch.no_grad()
def predict(model: RecurrentAttentionModel, images: Tensor, samples: int = 1) -> Tensor:
    """Class probabilities ``(B, 10)`` averaged over ``samples`` sampled glimpse paths per image."""
    b = images.shape[0]
    repeated = images.repeat(samples, 1, 1, 1)  # (M*B, C, H, W): path m of image i is row m*B + i
    probs = model(repeated, sample=True).log_probs.exp()  # (M*B, 10)
    return probs.view(samples, b, -1).mean(dim=0)  # (B, 10)
