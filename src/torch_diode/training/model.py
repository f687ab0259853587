"""The PyTorch models: MLPs on normalised features predicting ln(time_us), alone or as an
ensemble of members of the same dims sharing the normalisation."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from .._C import FEATURE_VERSION
from ..model_file import ModelFile

# The seeds' two families. ``num_layers`` counts hidden layers.
MODEL_FAMILIES: dict[str, dict[str, int]] = {
    "base": {"hidden_dim": 64, "num_layers": 2},
    "deep": {"hidden_dim": 128, "num_layers": 4},
}


class MLP(nn.Module):
    """Linear -> ReLU -> ... -> Linear(1). The engine (csrc/src/model.cpp) computes the same."""

    def __init__(self, num_features: int, hidden_dim: int, num_layers: int):
        super().__init__()
        if hidden_dim < 1 or num_layers < 1:
            raise ValueError(f"hidden_dim and num_layers must be >= 1, got {hidden_dim}, {num_layers}")
        dims = [num_features] + [hidden_dim] * num_layers + [1]
        layers: list[nn.Module] = []
        for i in range(len(dims) - 1):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)

    def linears(self) -> list[nn.Linear]:
        return [m for m in self.net if isinstance(m, nn.Linear)]


class Regressor(nn.Module):
    """MLP with the normalisation of inputs and targets: raw features -> ln(time_us)."""

    def __init__(
        self, mlp: MLP, feature_mean: np.ndarray, feature_std: np.ndarray, target_mean: float, target_std: float
    ):
        super().__init__()
        self.mlp = mlp
        self.register_buffer("feature_mean", torch.as_tensor(feature_mean, dtype=torch.float32))
        self.register_buffer("feature_std", torch.as_tensor(feature_std, dtype=torch.float32))
        self.target_mean, self.target_std = float(target_mean), float(target_std)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        # rows of every feature; a model of an older feature version reads the first ones, as the engine does
        features = features[..., : len(self.feature_mean)]
        return self.mlp((features - self.feature_mean) / self.feature_std) * self.target_std + self.target_mean

    def to_model_file(self, metadata: dict[str, Any]) -> ModelFile:
        return ModelFile(
            _layers(self.mlp),
            self.feature_mean.cpu().numpy(),
            self.feature_std.cpu().numpy(),
            self.target_mean,
            self.target_std,
            metadata,
            feature_version=int(metadata.get("feature_version", FEATURE_VERSION)),
        )

    @classmethod
    def from_model_file(cls, model: ModelFile, member: int = 0) -> Regressor:
        return cls(
            _mlp(model.dims, model.members[member]),
            model.feature_mean,
            model.feature_std,
            model.target_mean,
            model.target_std,
        )


def _layers(mlp: MLP) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        (l.weight.detach().cpu().numpy().astype(np.float32), l.bias.detach().cpu().numpy().astype(np.float32))
        for l in mlp.linears()
    ]


def _mlp(dims: list[int], layers: list[tuple[np.ndarray, np.ndarray]]) -> MLP:
    hidden = dims[1:-1]
    if len(set(hidden)) > 1:
        raise ValueError(f"hidden layers of different widths are not supported: {dims}")
    mlp = MLP(dims[0], hidden[0] if hidden else 1, len(hidden))
    state = {}
    for i, (w, b) in enumerate(layers):
        index = 2 * i  # Linear modules sit at even positions of the Sequential
        state[f"net.{index}.weight"] = torch.from_numpy(np.array(w))
        state[f"net.{index}.bias"] = torch.from_numpy(np.array(b))
    mlp.load_state_dict(state, strict=True)
    return mlp


class Ensemble(nn.Module):
    """Regressors of the same dims and normalisation: the prediction is their mean, their spread
    the model's uncertainty (the engine computes the same, csrc/src/model.cpp)."""

    def __init__(self, members: list[Regressor]):
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.regressors = nn.ModuleList(members)

    def members(self, features: torch.Tensor) -> torch.Tensor:
        """[K, N]: every member's ln(time_us)."""
        return torch.stack([m(features) for m in self.regressors])

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.members(features).mean(dim=0)

    def to_model_file(self, metadata: dict[str, Any]) -> ModelFile:
        first = self.regressors[0].to_model_file(metadata)
        first.more_members = [_layers(m.mlp) for m in self.regressors[1:]]
        return first

    @classmethod
    def from_model_file(cls, model: ModelFile) -> Ensemble:
        return cls([Regressor.from_model_file(model, k) for k in range(len(model.members))])
