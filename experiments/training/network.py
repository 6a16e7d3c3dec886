"""The transformer of the papers' synthetic experiments, as a *batch of models* sharing one forward pass.

Read top to bottom: ``ModelConfig`` (one model), ``init_params`` (its weights at their true shapes),
``BatchedTransformer`` (M models at once). A single model is simply M = 1.

One model (shared/reference/papers.md 1.1, 2.5a, 3.5, outside this repository):
  tokens x(1..T) in R^d --token MLP (ReLU, hidden N)--> R^E (paper 2), or a linear embedding (a standard
  transformer's, ``token_embedding="linear"``), plus a learned positional code if enabled;
  a trainable output (CLS) token is appended at position T+1;
  L attention layers, h_l heads of width n_l in layer l (n_l = E // h_l unless a fixed ``head_dim``);
  optional pre-LayerNorm and residual (paper 2: neither; paper 1: residual on, LN off);
  between layers a token FFN (GELU, hidden N) so a position can combine what it gathered before the next
  layer compares it (not after the last layer: the readout MLP plays that role);
  the output is read at position T+1 by an MLP (GELU, hidden N).

Batching (why this, not ``torch.func`` vmap: vmap stacks models of one shape, and ours differ in heads
and widths, so they need padding anyway): M models with *different* head counts, widths and hidden
sizes train in one job. Every parameter is stored padded to the largest shape in the batch, with a
leading model dimension, and multiplied by a 0/1 mask (ones on the model's true shape) in every forward.
A padded head therefore has zero query, key and value, attends uniformly to zero vectors and adds
nothing; padded embedding or hidden units stay exactly zero (ReLU(0) = GELU(0) = 0, LayerNorm statistics
use the true width). The gradient of a padded entry is exactly zero, so AdamW never moves it, and each
model trains as it would alone (tested: batched == unbatched). Padding costs compute when shapes differ a
lot; callers group models by ``batch_key`` (layers, d, T, switches), which must agree inside one batch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

TOKEN_EMBEDDINGS = ("mlp", "linear")


@dataclass(frozen=True)
class ModelConfig:
    """One model. Defaults follow paper 2's synthetic experiment (Sec. 6.1), except where noted."""

    input_dim: int = 4             # d, token dimension (paper 2: 4)
    seq_len: int = 16              # T; sizes the positional table (position T+1 is the output token)
    heads: tuple[int, ...] = (4,)  # h_l heads in layer l; len(heads) = L layers
    embed_dim: int = 32            # E, the residual-stream width
    head_dim: int | None = None    # n per head; None -> E // h_l (paper 1), 8 in paper 2 (with E = 8 h)
    mlp_hidden: int = 32           # N, hidden width of token MLP and readout (paper 2 Fig. 1a: 32)
    ffn_hidden: int | None = None  # hidden width of the FFN between layers; None -> mlp_hidden. Paper 1's
                                   # two-hop targets need it wide: it must form x_s^T A x_t (profiles.py)
    output_dim: int = 1            # scalar targets; d for vector targets such as specific_positions
    positional: bool = False       # learned positional encoding (paper 2: off, the task is permutation-free)
    residual: bool = False         # paper 2: no residual; paper 1: residual on
    layernorm: bool = False        # pre-LN; both papers' synthetic runs: off
    ffn: bool = True               # token FFN between attention layers (no effect with one layer)
    ffn_gated: bool = False        # the FFN's hidden layer SiLU(W1 u) * (W3 u) instead of GELU(W1 u): it
                                   # multiplies two linear features, the product a bilinear target's second
                                   # layer compares (docs/reproduction.md, intrinsic dimension)
    cls_as_key: bool = True        # the output token is also a key; paper 2's 1-layer formula: False
    causal: bool = False           # decoder-only: input position p attends to positions q <= p only; the
                                   # output token T+1 comes last and attends to every position
    attn_beta: float = 1.0           # inverse temperature beta of every head (paper 2 eq. 4 writes it out),
                                     # on top of 1/sqrt(n); the starting value when it is learned
    learn_temperature: bool = False  # learn log beta per head: the same function class, but Adam moves
                                     # log beta by ~lr a step, so attention can sharpen in hundreds of steps
    token_embedding: str = "mlp"     # "mlp": paper 2's token MLP, ReLU between its two maps; "linear": the
                                     # same two maps without the ReLU, a linear embedding as in a standard
                                     # transformer. Bilinear targets learn far faster with it: x_s^T A x_t is
                                     # then a bilinear form of the embeddings, not of a piecewise-linear code
                                     # (docs/reproduction.md, intrinsic dimension)

    def __post_init__(self) -> None:
        if self.token_embedding not in TOKEN_EMBEDDINGS:
            raise ValueError(f"token_embedding must be one of {', '.join(TOKEN_EMBEDDINGS)}; "
                             f"got {self.token_embedding!r}")

    @property
    def layers(self) -> int:
        return len(self.heads)

    @property
    def ffn_width(self) -> int:
        return self.ffn_hidden if self.ffn_hidden is not None else self.mlp_hidden

    def head_width(self, layer: int) -> int:
        """n_l for 0-based ``layer``."""
        return self.head_dim if self.head_dim is not None else max(1, self.embed_dim // self.heads[layer])

    def batch_key(self) -> tuple:
        """Models batch together only when these agree (everything else is padded)."""
        return (self.input_dim, self.seq_len, self.layers, self.output_dim, self.residual, self.layernorm,
                self.ffn, self.ffn_gated, self.cls_as_key, self.token_embedding, self.causal)


def _param_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's true shape, in a fixed order (the order init draws them in)."""
    d, E, N, k, P = cfg.input_dim, cfg.embed_dim, cfg.mlp_hidden, cfg.output_dim, cfg.seq_len + 1
    shapes: dict[str, tuple[int, ...]] = {"enc.w1": (N, d), "enc.b1": (N,), "enc.w2": (E, N), "enc.b2": (E,),
                                          "cls": (E,), "pos": (P, E)}
    for l, h in enumerate(cfg.heads):
        n = cfg.head_width(l)
        for name in ("q", "k", "v"):
            shapes[f"l{l}.w{name}"] = (h, n, E)
            shapes[f"l{l}.b{name}"] = (h, n)
        shapes.update({f"l{l}.wo": (E, h, n), f"l{l}.bo": (E,), f"l{l}.ln1.g": (E,), f"l{l}.ln1.b": (E,),
                       f"l{l}.temp": (h,)})
        if l < cfg.layers - 1:
            Nf = cfg.ffn_width
            shapes.update({f"l{l}.ffn.w1": (Nf, E), f"l{l}.ffn.b1": (Nf,), f"l{l}.ffn.w2": (E, Nf),
                           f"l{l}.ffn.b2": (E,), f"l{l}.ln2.g": (E,), f"l{l}.ln2.b": (E,)})
            if cfg.ffn_gated:
                shapes.update({f"l{l}.ffn.w3": (Nf, E), f"l{l}.ffn.b3": (Nf,)})
    shapes.update({"lnf.g": (E,), "lnf.b": (E,), "out.w1": (N, E), "out.b1": (N,), "out.w2": (k, N),
                   "out.b2": (k,)})
    return shapes


def _fan_in(cfg: ModelConfig, name: str) -> int:
    """Fan-in of the linear map a weight or bias belongs to (``nn.Linear`` uses it for both)."""
    part = name.rsplit(".", 1)[-1]        # w1, b2, wq, bo, ...
    if name.startswith("enc."):
        return cfg.input_dim if part.endswith("1") else cfg.mlp_hidden
    if name.startswith("out.") or ".ffn." in name:
        hidden = cfg.ffn_width if ".ffn." in name else cfg.mlp_hidden
        return hidden if part.endswith("2") else cfg.embed_dim
    layer = int(name[1:name.index(".")])
    if part in ("wo", "bo"):
        return cfg.heads[layer] * cfg.head_width(layer)
    return cfg.embed_dim                  # query, key, value projections read the width-E stream


def init_params(cfg: ModelConfig, seed: int) -> dict[str, torch.Tensor]:
    """Weights at their true shapes, drawn on the CPU in float64 from ``seed`` alone.

    Independent of the batch a model lands in and of the device, which is what makes batched training
    reproduce unbatched training. Linear maps: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as ``nn.Linear``;
    CLS and positional codes N(0, 0.02^2) as BERT; LayerNorm gain 1, bias 0.
    """
    gen = torch.Generator().manual_seed(int(seed))
    shapes = _param_shapes(cfg)
    params: dict[str, torch.Tensor] = {}
    for name, shape in shapes.items():
        if name.endswith(".temp"):         # log beta (no random draw: the other inits stay as they were)
            params[name] = torch.full(shape, math.log(cfg.attn_beta) if cfg.learn_temperature else 0.0,
                                      dtype=torch.float64)
        elif ".ln" in name or name.startswith("lnf"):
            params[name] = torch.ones(shape, dtype=torch.float64) if name.endswith(".g") else \
                torch.zeros(shape, dtype=torch.float64)
        elif name in ("cls", "pos"):
            params[name] = 0.02 * torch.randn(shape, generator=gen, dtype=torch.float64)
        else:
            bound = 1.0 / math.sqrt(_fan_in(cfg, name))
            params[name] = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound
    if not cfg.positional:
        params["pos"].zero_()  # kept (masked) so positional and non-positional models can share a batch
    return params


def _pad(t: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    out = torch.zeros(shape, dtype=t.dtype)
    out[tuple(slice(0, s) for s in t.shape)] = t
    return out


class BatchedTransformer(nn.Module):
    """M models in one module: parameter ``name`` has shape (M, *max true shape over the batch)."""

    def __init__(self, configs: list[ModelConfig], seeds: list[int], dtype: torch.dtype = torch.float32):
        super().__init__()
        if not configs or len(configs) != len(seeds):
            raise ValueError("need one seed per config and at least one config")
        if len({c.batch_key() for c in configs}) != 1:
            raise ValueError("models in one batch must agree on batch_key(); group them first")
        self.configs, self.seeds = list(configs), list(seeds)
        first = configs[0]
        self.layers, self.residual, self.layernorm = first.layers, first.residual, first.layernorm
        self.ffn, self.cls_as_key, self.causal = first.ffn, first.cls_as_key, first.causal
        self.ffn_gated = first.ffn_gated
        self.token_mlp = first.token_embedding == "mlp"
        self.learned_temperature = any(c.learn_temperature for c in configs)
        true = [init_params(c, s) for c, s in zip(configs, seeds)]
        shapes = [_param_shapes(c) for c in configs]
        # Per layer, one of two layouts for the heads (same function, different cost):
        #  * slots: head j of every model sits in slot j of width n_max (H_max slots). No waste when all
        #    models share the head width (paper 2: n = 8), but n = E // h makes n_max large (h = 1).
        #  * flat:  each model's heads are consecutive blocks of its own width in one row space of size
        #    D = max h*n (= E for n = E // h); scores use a per-head 0/1 mask of those rows, which costs
        #    H_max times the score work but no wasted projection width. Used when slots would be wider
        #    than D (mixed head widths, as in paper 1's tables), where the slots' padding costs more.
        self.flat: set[int] = set()
        for l in range(self.layers):
            H = max(c.heads[l] for c in configs)
            if H * max(c.head_width(l) for c in configs) > max(c.heads[l] * c.head_width(l) for c in configs):
                self.flat.add(l)
                for p, sh, c in zip(true, shapes, configs):
                    for name in [f"l{l}.{w}" for w in ("wq", "bq", "wk", "bk", "wv", "bv")]:
                        p[name] = p[name].reshape(-1, *p[name].shape[2:])
                        sh[name] = tuple(p[name].shape)
                    p[f"l{l}.wo"] = p[f"l{l}.wo"].reshape(p[f"l{l}.wo"].shape[0], -1)
                    sh[f"l{l}.wo"] = tuple(p[f"l{l}.wo"].shape)
                D = max(c.heads[l] * c.head_width(l) for c in configs)
                member = torch.zeros(len(configs), H, D, dtype=torch.float64)   # row e belongs to head j
                for m, c in enumerate(configs):
                    n = c.head_width(l)
                    for j in range(c.heads[l]):
                        member[m, j, j * n:(j + 1) * n] = 1.0
                self.register_buffer(f"member{l}", member.to(dtype))
        self.params = nn.ParameterDict()
        for name in shapes[0]:
            padded = tuple(max(sh[name][i] for sh in shapes) for i in range(len(shapes[0][name])))
            stacked = torch.stack([_pad(p[name], padded) for p in true])
            mask = torch.stack([_pad(torch.ones(sh[name], dtype=torch.float64), padded) for sh in shapes])
            if name == "pos":  # a model without positional encoding must never learn one
                mask = mask * torch.tensor([float(c.positional) for c in configs],
                                           dtype=torch.float64)[:, None, None]
            if name.endswith(".temp"):  # fixed temperature: log beta held at 0 like a padded entry
                mask = mask * torch.tensor([float(c.learn_temperature) for c in configs],
                                           dtype=torch.float64)[:, None]
            self.params[name.replace(".", "_")] = nn.Parameter(stacked.to(dtype))
            self.register_buffer("mask_" + name.replace(".", "_"), mask.to(dtype))
        # LayerNorm statistics over each model's true width; attention logits scaled by 1/sqrt(n_l)
        self.register_buffer("width", torch.tensor([float(c.embed_dim) for c in configs], dtype=dtype))
        for l in range(self.layers):
            scale = [(1.0 if c.learn_temperature else c.attn_beta) / math.sqrt(c.head_width(l)) for c in configs]
            self.register_buffer(f"scale{l}", torch.tensor(scale, dtype=dtype))

        # Parameters with padded (masked-out) entries; the others need no mask at all.
        self._padded = tuple(name for name in self.params if not bool(self._buffer("mask_" + name).all()))
        self._padded_set = frozenset(self._padded)
        self.masked_forward = True   # False: padded entries are kept at zero by ``enforce_masks`` instead
        self.trace: dict[str, torch.Tensor] | None = None   # a dict: forward records attention and states

    def _p(self, name: str) -> torch.Tensor:
        key = name.replace(".", "_")
        if not self.masked_forward or key not in self._padded_set:
            return self.params[key]
        return self.params[key] * self._buffer("mask_" + key)  # padded entries: exactly zero, zero grad

    @torch.no_grad()
    def enforce_masks(self) -> None:
        """Zero every padded entry in place (one fused multiply over the padded parameters).

        The fast training step (step.py) runs the forward without masks (``masked_forward = False``) and
        calls this after each optimizer step instead. The forward then sees exactly the values the masked
        forward sees (padded entries are zero either way), so every true entry gets the same gradient and
        the same AdamW update: the two ways train identically (tested), but this one launches one kernel
        per step instead of two per parameter per forward and backward.
        """
        if self._padded:
            torch._foreach_mul_([self.params[n] for n in self._padded],
                                [self._buffer("mask_" + n) for n in self._padded])

    def _buffer(self, name: str) -> torch.Tensor:
        buffer = getattr(self, name)
        assert isinstance(buffer, torch.Tensor)
        return buffer

    def _layernorm(self, z: torch.Tensor, prefix: str) -> torch.Tensor:
        """LayerNorm over each model's true width (padded units are zero and stay zero)."""
        width = self._buffer("width").view(-1, *([1] * (z.dim() - 1)))
        emask = self._buffer("mask_enc_b2").view(z.shape[0], *([1] * (z.dim() - 2)), -1)
        mean = z.sum(-1, keepdim=True) / width
        var = (((z - mean) * emask) ** 2).sum(-1, keepdim=True) / width
        g, b = self._p(prefix + ".g"), self._p(prefix + ".b")
        shape = (z.shape[0], *([1] * (z.dim() - 2)), -1)
        return (z - mean) / torch.sqrt(var + 1e-5) * g.view(shape) + b.view(shape)

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        """x (M, ..., in) -> (M, ..., out) with weight ``name.w*`` (M, out, in...) and bias ``name.b*``.

        One ``baddbmm`` per call: for these shapes ``torch.einsum`` picks a far slower path on CPU.
        """
        w, b = self._p(name), self._p(name.replace(".w", ".b"))
        # query/key/value weights are (M, H, n, E) (slots) or (M, D, E) (flat); the output map (M, E, H, n)
        M = w.shape[0]
        w = w.reshape(M, w.shape[1], -1) if name.endswith(".wo") else w.reshape(M, -1, w.shape[-1])
        out = torch.baddbmm(b.reshape(M, 1, -1), x.reshape(M, -1, x.shape[-1]), w.transpose(1, 2))
        return out.reshape(*x.shape[:-1], -1)

    def _attention(self, l: int, z: torch.Tensor, cls_only: bool) -> torch.Tensor:
        """Layer ``l``. Every position queries, except in the last layer: only the output token is read."""
        u = self._layernorm(z, f"l{l}.ln1") if self.layernorm else z
        q = self._linear(u[:, :, -1:] if cls_only else u, f"l{l}.wq")
        k, v = self._linear(u, f"l{l}.wk"), self._linear(u, f"l{l}.wv")
        scale = self._buffer(f"scale{l}").view(-1, 1, 1, 1, 1)                  # 1/sqrt(n_l)
        if self.learned_temperature:   # times beta per head (1 where it is not learned): (M,1,H,1,1)
            scale = scale * torch.exp(self._p(f"l{l}.temp"))[:, None, :, None, None]
        if l in self.flat:                       # rows (M,B,P,D); head j owns the rows member[:, j]
            member = self._buffer(f"member{l}")[:, None, :, None, :]            # (M,1,H,1,D)
            M, B, P, D = q.shape
            H = member.shape[2]
            # (heads x queries) as one matrix: one bmm per sequence, k is never copied per head
            qh = (q.unsqueeze(2) * member).reshape(M, B, H * P, D)
            scores = (qh @ k.transpose(-1, -2)).reshape(M, B, H, P, -1) * scale
        else:                                    # slots (M,B,P,H*n) -> (M,B,H,P,n)
            H, n = self.params[f"l{l}_wq"].shape[1:3]
            q, k, v = (x.reshape(*x.shape[:3], H, n).transpose(2, 3) for x in (q, k, v))
            scores = (q @ k.transpose(-1, -2)) * scale                          # (M,B,H,P,P)
        if not self.cls_as_key:  # paper 2's single layer: the softmax runs over t = 1..T only
            scores[..., -1] = float("-inf")
        if self.causal and not cls_only:  # a later key is hidden from each query (the output token is last)
            later = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).triu(1)
            scores = scores.masked_fill(later, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        if self.trace is not None:
            self.trace[f"attn{l}"] = attn.detach()                                # (M,B,H,queries,P)
        if l in self.flat:
            o = ((attn.reshape(M, B, H * P, -1) @ v).reshape(M, B, H, P, D) * member).sum(2)  # (M,B,P,D)
        else:
            o = attn @ v                                                          # (M,B,H,P,n)
            o = o.transpose(2, 3).reshape(*o.shape[:2], o.shape[3], -1)
        out = self._linear(o, f"l{l}.wo")
        base = z[:, :, -1:] if cls_only else z
        return base + out if self.residual else out

    def _ffn(self, l: int, z: torch.Tensor) -> torch.Tensor:
        u = self._layernorm(z, f"l{l}.ln2") if self.layernorm else z
        first = self._linear(u, f"l{l}.ffn.w1")
        hidden = (torch.nn.functional.silu(first) * self._linear(u, f"l{l}.ffn.w3") if self.ffn_gated
                  else torch.nn.functional.gelu(first))
        out = self._linear(hidden, f"l{l}.ffn.w2")
        return z + out if self.residual else out

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Tokens (M, B, T, d) -> (M, B, T, E): the token MLP, or its two maps without the ReLU (linear)."""
        hidden = self._linear(x, "enc.w1")
        return self._linear(torch.relu(hidden) if self.token_mlp else hidden, "enc.w2")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (M, B, T, d), one batch per model -> predictions (M, B, output_dim)."""
        M, B = x.shape[:2]
        z = self.embed(x)
        cls = self._p("cls")[:, None, None, :].expand(M, B, 1, -1)
        z = torch.cat([z, cls], dim=2) + self._p("pos")[:, None]   # position T+1: the output token
        for l in range(self.layers):
            last = l == self.layers - 1
            z = self._attention(l, z, cls_only=last)
            if self.trace is not None:
                self.trace[f"attn_out{l}"] = z.detach()
            if self.ffn and not last:
                z = self._ffn(l, z)
                if self.trace is not None:
                    self.trace[f"ffn_out{l}"] = z.detach()
        out = z[:, :, -1]
        if self.layernorm:
            out = self._layernorm(out, "lnf")
        return self._linear(torch.nn.functional.gelu(self._linear(out, "out.w1")), "out.w2")
