"""Experiment profiles: named lists of tables (a target, its sequence lengths, architectures, settings).

* ``smoke``: seconds on a CPU; the tests run it end to end. Its numbers check the plumbing only.
* ``cpu``:   the papers' transitions at sizes a CPU trains (paper 2 Table 2 at T = 8 and 16, intrinsic
             dimension D = 2 at T = 16 and E = 16, triangle center at T = 8 and 32, the D = 3
             depth-versus-heads experiment at T = 8), with the criteria they must meet; < 20 min on 2 CPU
             cores.
* ``depth``: the D = 3 depth-versus-heads experiment at T = 8 and 16, two seeds.
* ``causal``: intrinsic dimension D = 2 under a causal mask, symmetric and non-symmetric A_i, T = 16.
* ``workers``: positions as workers: the D = 4 sum of maxima on 2 layers of 1 head with and without positional
             encoding, beside 1 layer of 4 and of 3 heads, T = 16 and 32, two seeds.
* ``paper``: paper 1 Exp. 1 and 2 and paper 2 Table 2 at the papers' T, d, heads and widths, with step
             counts sized to finish within 8 minutes on one H200 (experiments/tables/gpu_run.sh runs it).

Every recipe (learning rate, steps, batch, warm-up, data size, early stopping) was chosen by measurements
recorded in docs/reproduction.md, section "Measurements behind the profiles"; each setting here says why
in one line.

>>> [t.name for t in get_profile("smoke").tables]
['lms_D2', 'intrinsic_D2']
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from experiments.training.network import ModelConfig
from experiments.training.trainer import TrainConfig


@dataclass(frozen=True)
class Table:
    """One experiment table: every (architecture, seed) at every T, on one target."""

    name: str                                   # short id, unique within a profile
    target: str                                 # catalogue spec ("linear_max_sum:D=2") or target text
    input_dim: int                              # d
    seq_lens: tuple[int, ...]                   # T values: one dataset and one batched job per T
    archs: tuple[tuple[tuple[int, ...], int], ...]   # ((h_1, ..., h_L), E) pairs
    seeds: tuple[int, ...] = (0, 1)             # training seeds (init + minibatch order)
    train: TrainConfig = field(default_factory=TrainConfig)
    head_dim: int | None = None                 # None: n = E // h (paper 1); 8 for paper 2 tables
    mlp_hidden: int = 32                        # N (paper 2 Fig. 1a): token MLP and readout
    ffn_hidden: int | None = None               # FFN between layers; None: mlp_hidden
    attn_beta: float = 1.0                      # inverse temperature (start value when learned)
    learn_temperature: bool = False             # learn log beta per head (network.py)
    token_embedding: str = "mlp"                # paper 2's token MLP, or "linear" (a standard transformer's)
    positional: bool = False                    # both papers' synthetic tasks: no positional encoding
    residual: bool = False                      # paper 2: off; paper 1: on
    layernorm: bool = False                     # off in both papers' synthetic runs
    cls_as_key: bool = True                     # paper 2 one-layer tables: False (softmax over t = 1..T)
    causal: bool = False                        # decoder-only: each input position attends to itself and earlier
    target_seed: int = 0                        # fixes the target's random matrices A_i / vectors a_i
    data_seed: int = 0                          # fixes the inputs
    split: str = "T"                            # one job per T (all architectures and seeds batched), or
                                                # per (T, seed) "seed", or per (T, architecture) "arch":
                                                # parallel workers can then share a table that dominates

    def model_config(self, heads: tuple[int, ...], embed_dim: int, seq_len: int,
                     output_dim: int = 1) -> ModelConfig:
        return ModelConfig(input_dim=self.input_dim, seq_len=seq_len, heads=tuple(heads), embed_dim=embed_dim,
                           head_dim=self.head_dim, mlp_hidden=self.mlp_hidden, ffn_hidden=self.ffn_hidden,
                           output_dim=output_dim, positional=self.positional, residual=self.residual,
                           layernorm=self.layernorm, cls_as_key=self.cls_as_key, attn_beta=self.attn_beta,
                           learn_temperature=self.learn_temperature, token_embedding=self.token_embedding,
                           causal=self.causal)


@dataclass(frozen=True)
class Criterion:
    """A check a profile's results must pass (summary.py evaluates it; a failure makes ``report`` exit 1).

    ``transition``: at every T in ``seq_lens``, ``better`` has NMSE at most ``max_nmse`` (if given) and at
    least ``ratio`` times below each of ``worse``. ``range``: every configuration of the table at each T
    in ``seq_lens`` has NMSE within [``min_nmse``, ``max_nmse``].
    """

    kind: str                                   # transition | range
    table: str
    seq_lens: tuple[int, ...]
    better: tuple[int, ...] = ()
    worse: tuple[tuple[int, ...], ...] = ()
    ratio: float = 10.0
    min_nmse: float | None = None
    max_nmse: float | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    nmse_threshold: float      # "efficient": NMSE below this; fixed before any training (see validation.py)
    tables: tuple[Table, ...]
    default_train: TrainConfig = field(default_factory=TrainConfig)   # for validate() on ad-hoc architectures
    criteria: tuple[Criterion, ...] = ()        # what the results must show (the acceptance figures)


def _paper2(D: int, heads: tuple[int, ...], seq_lens: tuple[int, ...], train: TrainConfig, d: int = 4,
            seeds: tuple[int, ...] = (0, 1)) -> Table:
    """Paper 2 Sec. 6.1: one layer, per-head dim 8 (E = 8h), no PE / residual / LN, CLS only a query."""
    return Table(name=f"lms_D{D}", target=f"linear_max_sum:D={D}", input_dim=d, seq_lens=seq_lens,
                 archs=tuple(((h,), 8 * h) for h in heads), seeds=seeds, train=train, head_dim=8,
                 cls_as_key=False)


def _intrinsic(D: int, seq_lens: tuple[int, ...], train: TrainConfig, embed_dim: int, d: int = 4,
               seeds: tuple[int, ...] = (0, 1)) -> Table:
    """Paper 1 Exp. 1: two layers, (D,D), (D-1,D), (D,D-1); paper 1's standard transformer as read here: a
    linear token embedding, residual on, no PE, no LayerNorm; a 128-wide FFN between the layers to form x_s^T A x_t, and
    a learned inverse temperature (chosen by the measurements in docs/reproduction.md)."""
    heads = [(D, D), (D - 1, D), (D, D - 1)]
    return Table(name=f"intrinsic_D{D}", target=f"intrinsic_dimension:D={D}", input_dim=d, seq_lens=seq_lens,
                 archs=tuple((h, embed_dim) for h in heads), seeds=seeds, train=train, residual=True,
                 token_embedding="linear", ffn_hidden=128, learn_temperature=True)


def _triangle(seq_lens: tuple[int, ...], archs: tuple[tuple[tuple[int, ...], int], ...], train: TrainConfig,
              seeds: tuple[int, ...] = (0, 1)) -> Table:
    """Paper 1 Exp. 2: d = 2, N(0, 2I) clamped to norm [0.2, 4] (data.py), two layers, residual on."""
    return Table(name="triangle", target="triangle_center", input_dim=2, seq_lens=seq_lens, archs=archs,
                 seeds=seeds, train=train, residual=True)


def _depth_vs_heads(seq_lens: tuple[int, ...], train: TrainConfig, embed_dim: int = 24,
                    seeds: tuple[int, ...] = (0,)) -> Table:
    """The experiment no paper ran (does depth replace heads?): D = 3 retrieval on 2 layers of 1 head, beside
    1 layer of 2 heads and 1 layer of 3 heads, at one fixed width E (so n = E / h). The solver says (1, 1)
    is efficient ((2L - 1) h = 3 selections); paper 2's Conjecture 1 (L h >= D) says it is not."""
    return Table(name="d3_depth", target="linear_max_sum:D=3", input_dim=4, seq_lens=seq_lens,
                 archs=(((1, 1), embed_dim), ((2,), embed_dim), ((3,), embed_dim)), seeds=seeds, train=train,
                 residual=True)


_SMOKE_TRAIN = TrainConfig(steps=12, batch_size=16, eval_every=6, n_train=64, n_val=32)
SMOKE = Profile(
    name="smoke", description="tiny sizes, seconds on a CPU; exercised by the tests; its numbers check the "
                              "plumbing only",
    nmse_threshold=0.5,  # 12 steps learn nothing: smoke checks the plumbing, not the agreement
    tables=(_paper2(2, (1, 2), (4, 6), _SMOKE_TRAIN, d=2),
            replace(_intrinsic(2, (4,), _SMOKE_TRAIN, embed_dim=8, d=2), archs=(((1, 2), 8), ((2, 2), 8)))),
    default_train=_SMOKE_TRAIN)

# cpu: the papers' transitions at CPU sizes, on the 2-core project machine (2 single-threaded workers),
# < 20 minutes. Why each setting (figures: docs/reproduction.md, "Measurements behind the profiles"):
#  * 100k training sequences: labels are cheap, and 8k overfit; 2000 validation sequences.
#  * lr 1e-2 (AdamW, wd 1e-2, 5% warm-up, cosine to zero): the best of the lr sweep on linear_max_sum:D=4.
#  * linear_max_sum:D=4, 8000 steps at T=8 and 10000 at T=16: with fewer, h=4 ends too close to the 1e-4
#    criterion; h=1..3 and h=4,5 are two jobs so that the first (it plateaus) frees its worker.
#  * intrinsic_dimension:D=2, 14000 steps, batch 128: with fewer the (2, 2) row falls short of the 10x
#    criterion.
#  * triangle_center, lr 3e-3: lr 1e-2 diverges; T=32 gets 10k sequences (labels cost O(T^3)) and
#    stops after 5 flat evaluations (its curve is flat from the first).
#  * no early stopping elsewhere: at lr 1e-2 the curves are noisy and a plateau rule stopped runs early.
_CPU_BASE = TrainConfig(batch_size=256, lr=1e-2, weight_decay=1e-2, n_train=100_000, n_val=2000)
_CPU_LMS = replace(_CPU_BASE, steps=8000, warmup_steps=400, eval_every=200)
_CPU_ID = replace(_CPU_BASE, steps=14000, warmup_steps=500, eval_every=500, batch_size=128)
_CPU_TRI = replace(_CPU_BASE, lr=3e-3, steps=4000, warmup_steps=200, eval_every=200)
_CPU_D3 = replace(_CPU_BASE, steps=4000, warmup_steps=200, eval_every=200)


def _cpu_lms(seq_len: int, steps: int) -> tuple[Table, Table]:
    """Paper 2 Table 2 at one T, as two jobs of one table (same name): h = 1..3 and h = 4, 5."""
    train = replace(_CPU_LMS, steps=steps, warmup_steps=steps // 20)
    return (_paper2(4, (1, 2, 3), (seq_len,), train, seeds=(0,)), _paper2(4, (4, 5), (seq_len,), train, seeds=(0,)))


CPU = Profile(
    name="cpu", description="the papers' transitions at CPU sizes: paper 2 Table 2 at T = 8 and 16, "
                            "intrinsic dimension D = 2 at T = 16 with E = 16, triangle center at T = 8 and 32, "
                            "and the D = 3 depth-versus-heads experiment at T = 8 (profile depth: T = 8 and 16, "
                            "two seeds); under 20 minutes on 2 CPU cores",
    nmse_threshold=1e-2,  # see validate.NMSE_THRESHOLD_REASONS
    tables=(_intrinsic(2, (16,), _CPU_ID, embed_dim=16, seeds=(0,)),
            *_cpu_lms(8, 8000), *_cpu_lms(16, 10000),
            replace(_triangle((8,), (((2, 2), 24), ((4, 4), 24)), _CPU_TRI, seeds=(0,)), mlp_hidden=128),
            replace(_triangle((32,), (((2, 2), 24), ((4, 4), 24)),
                              replace(_CPU_TRI, n_train=10_000, patience=5, min_delta=0.05), seeds=(0,)),
                    mlp_hidden=128),
            _depth_vs_heads((8,), _CPU_D3)),
    default_train=replace(_CPU_BASE, steps=4000, warmup_steps=200, eval_every=200),
    criteria=(Criterion("transition", "lms_D4", (8, 16), better=(4,), worse=((3,),), ratio=10, max_nmse=1e-4),
              Criterion("transition", "intrinsic_D2", (16,), better=(2, 2), worse=((1, 2), (2, 1)), ratio=10),
              Criterion("range", "triangle", (8,), max_nmse=0.15),
              Criterion("range", "triangle", (32,), min_nmse=0.8)))

# depth: does depth replace heads? The D = 3 experiment at T = 8 and 16 with two seeds (the cpu profile runs
# it at T = 8 with one).
DEPTH = Profile(
    name="depth", description="D = 3 retrieval (linear_max_sum:D=3): 2 layers of 1 head beside 1 layer of 2 "
                              "and of 3 heads, E = 24, T = 8 and 16, seeds 0 and 1",
    nmse_threshold=1e-2,  # as cpu
    tables=(_depth_vs_heads((8, 16), _CPU_D3, seeds=(0, 1)),),
    default_train=_CPU_D3)

# paper: the papers' T, d, heads and widths (paper 1's E is not reported: 32), with the cpu profile's recipe.
#  * 2500 steps: sized to gpu_run.sh's 330 s on one H200; the intrinsic tables separate at T = 64 only with a
#    longer schedule, which needs a GPU measurement.
#  * 8000 training sequences for the triangle table only: its labels at T = 64 cost O(T^3).
# Figures: docs/reproduction.md, "Measurements behind the profiles".
_GPU_TRAIN = replace(_CPU_BASE, steps=2500, warmup_steps=125, eval_every=250)
PAPER = Profile(
    name="paper", description="paper 1 Exp. 1-2 and paper 2 Table 2 settings, sized for 8 min on one H200",
    nmse_threshold=3e-3,  # see validate.NMSE_THRESHOLD_REASONS
    tables=(_triangle((8, 16, 32, 64), (((2, 2), 24), ((4, 4), 24), ((4, 4), 48)),
                      replace(_GPU_TRAIN, n_train=8000), seeds=(0, 1, 2)),
            *(_intrinsic(D, (64,), replace(_GPU_TRAIN, batch_size=128), embed_dim=32, seeds=(0, 1, 2))
              for D in range(2, 7)),
            _paper2(4, (1, 2, 3, 4, 5), (8, 16, 32, 64, 128), _GPU_TRAIN, seeds=(0, 1, 2))),
    default_train=_GPU_TRAIN,
    criteria=(Criterion("transition", "lms_D4", (8, 16, 32, 64, 128), better=(4,), worse=((3,),), ratio=10),
              *(Criterion("transition", f"intrinsic_D{D}", (64,), better=(D, D), worse=((D - 1, D), (D, D - 1)),
                          ratio=10) for D in range(2, 5)),
              Criterion("range", "triangle", (64,), min_nmse=0.8)))

# workers: can positions replace heads? With positional encoding fixed positions may run different
# selections (docs/model.md, "Anchors"), so the solver decides paper 2's sum of D = 4 maxima efficient on 2
# layers of 1 head (positions 1..4 each retrieve one maximum, the output gathers them), and inefficient
# without it ((2L - 1) h = 3 < 4), against paper 2's Conjecture 1 (L h >= D). Beside it, 1 layer of 4 heads
# (efficient) and of 3 (not), one width E = 32 (n = E / h), the depth table's recipe (residual on, 4000
# steps), T = 16 and 32, seeds 0 and 1.
def _workers(positional: bool, archs: tuple[tuple[int, ...], ...]) -> Table:
    return Table(name="workers_pe" if positional else "workers_nope", target="linear_max_sum:D=4", input_dim=4,
                 seq_lens=(16, 32), archs=tuple((h, 32) for h in archs), seeds=(0, 1), train=_CPU_D3,
                 residual=True, positional=positional)


WORKERS = Profile(
    name="workers", description="positions as workers: linear_max_sum:D=4 on 2 layers of 1 head with and without "
                                "positional encoding, beside 1 layer of 4 and of 3 heads (with it), E = 32, "
                                "T = 16 and 32, seeds 0 and 1",
    nmse_threshold=1e-2,  # as cpu
    tables=(_workers(True, ((1, 1), (4,), (3,))), _workers(False, ((1, 1),))),
    default_train=_CPU_D3,
    # what the solver predicts, fixed before training: (1, 1) with PE and (4,) separate from (3,)
    criteria=(Criterion("transition", "workers_pe", (16, 32), better=(4,), worse=((3,),), ratio=10),
              Criterion("transition", "workers_pe", (16, 32), better=(1, 1), worse=((3,),), ratio=10)))

# causal: the model's prediction for intrinsic_dimension:D=2 under a causal mask (docs/model.md, "Causal mask"):
# with symmetric A_i (written B_i(s, t) + B_i(t, s)) each group is one ordered half, so (2, 2) is efficient and
# (1, 2) is not, as without the mask; with non-symmetric A_i each group needs both sides of its pairs at the
# inputs, so (2, 2) is not efficient and (4, 2) is. The intrinsic table's recipe (linear embedding, residual,
# 128-wide FFN, learned temperature, 14000 steps), T = 16, E = 16, seeds 0 and 1.
_SYMMETRIC_D2 = " + ".join(f"max(bilinear(A{i}, x[s], x[t]) + bilinear(A{i}, x[t], x[s]) for s in T for t in T)"
                           for i in (1, 2))
CAUSAL = Profile(
    name="causal", description="intrinsic_dimension:D=2 under a causal mask, with symmetric A_i on (2, 2) and "
                               "(1, 2) and with non-symmetric A_i on (2, 2) and (4, 2), T = 16, E = 16, seeds 0 and 1",
    nmse_threshold=1e-2,  # as cpu
    tables=(replace(_intrinsic(2, (16,), _CPU_ID, embed_dim=16), name="causal_symmetric", target=_SYMMETRIC_D2,
                    archs=(((2, 2), 16), ((1, 2), 16)), causal=True),
            replace(_intrinsic(2, (16,), _CPU_ID, embed_dim=16), name="causal_asymmetric",
                    archs=(((2, 2), 16), ((4, 2), 16)), causal=True)),
    default_train=_CPU_ID,
    # what the solver predicts under the mask, fixed before training
    criteria=(Criterion("transition", "causal_symmetric", (16,), better=(2, 2), worse=((1, 2),), ratio=10),
              Criterion("transition", "causal_asymmetric", (16,), better=(4, 2), worse=((2, 2),), ratio=10)))

PROFILES: dict[str, Profile] = {p.name: p for p in (SMOKE, CPU, DEPTH, WORKERS, CAUSAL, PAPER)}


def get_profile(name: str | Profile) -> Profile:
    """A profile by name; ``KeyError`` naming the known ones otherwise."""
    if isinstance(name, Profile):
        return name
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}") from None


# confirm(): the model family and recipe for one decided case and its neighbours (its schedule,
# experiments/confirmation/schedule.py, scales the step count, warm-up and data size to the budget). Paper 1's switches (residual on, no PE unless
# the architecture has it, no LayerNorm); the lr is the one the sweeps chose for the cpu tables.
CONFIRM_MODEL = ModelConfig(mlp_hidden=32, ffn_hidden=128, residual=True)
CONFIRM_RECIPE = TrainConfig(batch_size=256, lr=1e-2, weight_decay=1e-2)

# Per target, what measurements showed to work: bilinear scores (intrinsic dimension, and min_pairwise_dot's
# <x_s, x_t>, the same form with A = I) learn with a linear token embedding, no LayerNorm, a learned
# temperature and batch 128 (the intrinsic measurements above), and a gated FFN between the layers: the
# second layer compares x_s^T A x_t* over s, a product of what the first gathered, which SiLU(W1 u) * (W3 u)
# forms directly, where a GELU FFN must approximate it and learns it too slowly for confirm's budget
# (docs/reproduction.md, intrinsic dimension). Triangle center with a 128-wide token MLP and lr 3e-3 (it
# diverges at 1e-2).
_CONFIRM_BILINEAR = (replace(CONFIRM_MODEL, token_embedding="linear", learn_temperature=True, ffn_gated=True),
                     replace(CONFIRM_RECIPE, batch_size=128))
CONFIRM_SETUPS: dict[str, tuple[ModelConfig, TrainConfig]] = {
    "intrinsic_dimension": _CONFIRM_BILINEAR,
    "min_pairwise_dot": _CONFIRM_BILINEAR,
    "triangle_center": (replace(CONFIRM_MODEL, mlp_hidden=128), replace(CONFIRM_RECIPE, lr=3e-3)),
}


def confirm_setup(target_name: str | None) -> tuple[ModelConfig, TrainConfig]:
    """(model family, recipe) for ``confirm`` on a catalogue target by name; the general one otherwise.

    >>> bilinear, general = confirm_setup("intrinsic_dimension")[0], confirm_setup(None)[0]
    >>> bilinear.token_embedding, bilinear.ffn_gated, general.token_embedding, general.ffn_gated
    ('linear', True, 'mlp', False)
    """
    return CONFIRM_SETUPS.get(target_name or "", (CONFIRM_MODEL, CONFIRM_RECIPE))
