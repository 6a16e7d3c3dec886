"""Words for a reader of the paper: what each selection computes, what a program does, and why a target is
out of reach (the named constraints of an unsat core, one sentence each).

A selection is named by what it computes, in the target's own notation: "the min over t of dot(x[s],
x[t]), for each s, made at every input position". The solver's tracked constraints (``initial``, ``goal``,
``budget:<layer>:<class>``, ``positional``) each become one sentence, with the numbers (heads, selections,
costs) read off the comparison tree and the architecture.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import sympy

from infoflow_smt.lang import causal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.earliest import earliest_layers
from infoflow_smt.lang.hosting import HOST
from infoflow_smt.lang.language import domain_to_text, fixed_to_text
from infoflow_smt.lang.node_text import HOST_TEXT, definitions, node_names
from infoflow_smt.lang.node_text import named_expression_text as _text
from infoflow_smt.lang.rank import score_rank
from infoflow_smt.lang.trees import comparison_tree, selection_nodes, walk
from infoflow_smt.model import cost, readout
from infoflow_smt.model.program import Mode, Offset, Program, where_text
from infoflow_smt.model.vocabulary import LAST, OUTPUT, Constraint, Family, PositionClass
from infoflow_smt.words import plural


@dataclass(frozen=True)
class Reason:
    """One reason a target is out of reach, tied to the named solver constraint it came from."""

    constraint: str   # the name of the tracked constraint in the unsat core
    sentence: str     # the same, in words a reader of the paper follows

    def __str__(self) -> str:
        return self.sentence


# ---- naming what the tree computes (node_text and expression_text: infoflow_smt/lang/node_text.py)
def describe_node(tree, node: str) -> str:
    """What a node computes and who can make it: ``the min over t of dot(x[s], x[t]), for each s`` (``over t in
    S1``, ``over t in range(1, s+1)`` when the candidates are not every position). A selection whose winner's
    token it reads is written by its name (``x[p1]``: ``names``)."""
    d = tree.nodes[node]
    if d["kind"] == "fixed":
        return f"the token x[{fixed_to_text(d['position'])}]"
    rank = {1: "", 2: "second largest", 3: "third largest"}.get(d["k"], f"{d['k']}-th largest")
    over = d["var"] if isinstance(d["domain"], ex.AllPositions) else \
        f"{d['var']} in {domain_to_text(d['domain']).replace(HOST, HOST_TEXT)}"
    what = f"the {rank or d['sense']} over {over} of {_text(tree, d['score'])}"
    if d["hosted"]:
        what += ", each input position for itself"
    elif d["bound"]:
        what += f", for each {', '.join(sorted(d['bound']))}"
    return what


def names(tree) -> list[str]:
    """The definitions of the names ``describe_node`` writes (``p1 = argmax(...)``), innermost first, each reading
    only names before it: the target's own in the target language, a hosted form's with ``self`` for the position
    that makes it (``lang.node_text.definitions``). Empty when no selection reads another's winner."""
    return [f"{name} = {text}" + (" (each input position for itself)" if hosted else "")
            for name, text, hosted in definitions(tree)]


def innermost_first(tree) -> list[str]:
    """The nodes that select or aggregate, each after every node it reads, however deep the nesting.

    A depth-first walk from the output token lists a node when everything it reads has been listed (its
    post-order): the nodes of one selection stay together, inner hop first, in the same order on every run.
    """
    walk = nx.dfs_postorder_nodes(tree)   # roots in the tree's order, the output token first
    return [n for n in walk if tree.nodes[n]["kind"] not in ("output", "fixed") and not tree.nodes[n]["hosted"]]


def where_made(tree, node: str) -> str:
    bound = tree.nodes[node]["bound"]
    if not bound:
        return "made at the output token or at any input position"
    if bound == {ex.ANSWER}:
        return f"made at every input position for its own answer (it plays {ex.ANSWER})"
    if bound == {HOST}:
        return "made by every input position for itself (its own token read where the target reads a winner's)"
    if len(bound) == 1:
        return f"made at every input position, which plays {next(iter(bound))}"
    return f"that must hold {len(bound)} positions ({', '.join(sorted(bound))}) fixed at once"


def _listing(tree, nodes) -> str:
    return "; ".join(describe_node(tree, n) for n in nodes)


def describe_action(action, tree) -> str:
    """One head's work in words."""
    op, where = action.op, where_text(action.where)
    if op.mode in (Mode.RETRIEVE, Mode.KTH):
        return (f"layer {action.layer}, head {action.head}, at {where}: retrieves the position that wins "
                f"{describe_node(tree, op.node)} ({op.mode.value})")
    if op.mode is Mode.POSITIONS:
        places = ", ".join(_position(q) for q in op.positions)
        return f"layer {action.layer}, head {action.head}, at {where}: gathers {places}"
    if op.mode is Mode.AVERAGE:
        means = [describe_node(tree, n) for n, d in tree.nodes(data=True) if d["kind"] == "aggregate" and not d["bound"]]
        return f"layer {action.layer}, head {action.head}, at {where}: averages per-token values ({'; '.join(means)})"
    if op.mode is Mode.AGGREGATE:
        return f"layer {action.layer}, head {action.head}, at {where}: aggregates every position"
    if op.mode is Mode.COLLECT:
        whole = "; ".join(describe_node(tree, n) for n in op.nodes)
        return (f"layer {action.layer}, head {action.head}, at {where}: retrieves the first position whose prefix "
                f"selections are whole, by the sum of their values, which grows along the sequence until then "
                f"({op.mode.value}: {whole})")
    return f"layer {action.layer}, head {action.head}, at {where}: stays idle"


def describe_program(program: Program, target) -> list[str]:
    """A program, one head a line, in words (``Program.__str__`` names tree nodes instead)."""
    tree = comparison_tree(target, program.order_map)
    actions = sorted(program.actions, key=lambda a: (a.layer, a.head, str(a.where)))
    return [describe_action(a, tree) for a in actions] or ["no head does anything"]


def _position(ref) -> str:
    if isinstance(ref, Offset):
        k = ref.offset
        return f"the position {abs(k)} {'before' if k < 0 else 'after'} it"
    return f"position {fixed_to_text(ref)}"


# ---- why a target is out of reach ---------------------------------------------------------------------
def explain(target, arch, core: set[Constraint], excluded_costs: dict[str, sympy.Expr]) -> tuple[Reason, ...]:
    """Reasons for an unsat core (the tracked constraints, ``model.vocabulary``). ``excluded_costs`` names the
    operations ruled out by their cost."""
    tree = comparison_tree(target)
    families = {c.family for c in core}
    if Family.POSITIONAL in families and Family.GOAL in families and target.needs_positional:
        # no program computes the target at any cost: no cost sentence may follow (it would contradict)
        return (Reason("positional", (
            "The architecture has no positional encoding, and the target tells positions apart (it reads "
            "fixed positions, offsets or a subset of the positions): without positions every input position "
            "looks alike to every head, so no program computes it at any cost.")),)
    sels = selection_nodes(tree)
    reasons = _order(tree, sels) + _depth(tree, sels, arch, families)
    last = readout.reads_at_last(target, arch)
    reasons += _budgets(tree, sels, arch, core, target.per_position, "position T" if last else "the output token",
                        LAST if last else OUTPUT)
    if Family.CAUSAL in families:
        late = causal.late_reads(target) if target.per_position else []  # named by their nodes where they are
        reasons.append(_unseen(_hidden_reads(tree) or late) if late else _masked(tree, sels))
    if getattr(arch, "causal", False) and target.per_position:  # the inputs answer, and none of them aggregates
        excluded_costs = {what: e for what, e in excluded_costs.items() if not what.startswith("global")}
    reasons += _ranks(tree, arch, core)
    if Family.GOAL in families and not any(len(tree.nodes[n]["bound"]) >= 2 for n in sels):
        needed = [describe_node(tree, n) for n in tree.successors("output")]
        who = (f"every input position must know what its own answer depends on ({ex.ANSWER} is the position "
               "itself; the output token plays no part)") if target.per_position else \
            "position T, where the answer is read, must know what the target's value depends on" \
            if readout.reads_at_last(target, arch) else "the output token must know what the target's value depends on"
        reasons.append(Reason("goal", (
            f"After layer {arch.layers} {who}: {'; '.join(needed) or 'every position'}.")))
    if excluded_costs:
        costs = ", ".join(f"{what} costs exponent {e} (paper 1, Theorem {2 if what.startswith('k-th') else 3})"
                          for what, e in sorted(excluded_costs.items()))
        reasons.append(Reason("level", f"The operations that could close the gap grow with T: {costs}, so they "
                                       "are not efficient."))
    return tuple(reasons)


def _masked(tree, sels) -> Reason:
    """The causal mask's sentence: what an input position cannot do under it (docs/model.md, "Causal mask")."""
    hidden = [describe_node(tree, n) for n in sels if len(tree.nodes[n]["bound"]) == 1
              and not any(ex.sees_candidates(tree.nodes[n]["domain"], v) for v in tree.nodes[n]["bound"])]
    which = (f": {'; '.join(hidden)} ranks candidates after the position that makes it" if hidden else "")
    return Reason("causal", "Under the causal mask an input position sees only itself and the positions before "
                            "it, so it cannot make a selection whose candidates come after it" + which + ", nor "
                            "gather the whole sequence or a later position; only the output token sees every "
                            "position.")


def _hidden_reads(tree) -> list[str]:
    """What an answer at every position reads after its own position, in words (``causal.reads_after_answer``)."""
    return sorted(describe_node(tree, n) for n in causal.reads_after_answer(tree))


def _unseen(late: list[str]) -> Reason:
    """The mask's sentence for an answer at every position that reads after its own position (``late``, in
    words; docs/model.md, "Causal mask": not computable at any cost)."""
    return Reason("causal", (
        f"Under the causal mask position {ex.ANSWER} sees only positions 1..{ex.ANSWER}, and its answer reads what "
        f"comes after {ex.ANSWER} at some {ex.ANSWER}: {'; '.join(late)}; position {ex.ANSWER} cannot see it, so no "
        "program computes that answer at any cost."))


def prefix_aggregation_note(arch, exponent) -> Reason:
    """The sentence for the prefix aggregation an answer at every position may use under the mask
    (``solver.Questions.prefix_aggregation``): it bounds the best exponent, and is never efficient."""
    return Reason("prefix", (
        f"Under the causal mask each input position o can also aggregate its prefix x[1..o] (a global aggregation "
        f"seen through the mask) and compute its answer from it: decoding up to T tokens costs exponent {exponent} "
        f"(paper 1, Theorem 3), which grows with T at the constant width the mask asks for. The best exponent is the "
        f"smaller of this and the cheapest program shown; no program is shown for this one (the checkers leave "
        f"prefix aggregation out: docs/model.md, \"Causal mask\")."))


def _order(tree, sels) -> list[Reason]:
    too_wide = [n for n in sels if len(tree.nodes[n]["bound"]) >= 2]
    if not too_wide:
        return []
    node = max(too_wide, key=lambda n: len(tree.nodes[n]["bound"]))
    beta = len(tree.nodes[node]["bound"]) + 1
    held = ", ".join(sorted(tree.nodes[node]["bound"]))
    return [Reason("goal", (
        f"The target has comparison order {beta}: {describe_node(tree, node)} compares candidates while "
        f"{beta - 1} other positions ({held}) are held fixed, but a token plays only one position, so no "
        "attention head can make that selection; only a token holding every position can."))]


def _depth(tree, sels, arch, families) -> list[Reason]:
    """The depth sentence: the selection known last (``earliest.py``) is known after more layers than the
    architecture has, through a chain of dependent selections, the gather its first link waits for (a neighbour's
    token at each candidate), and at best pointer doubling where selections hosted at winners are copied with
    them."""
    if Family.INITIAL not in families or not sels:
        return []
    first = earliest_layers(tree)
    last = max(sels, key=lambda n: first[n])
    if not arch.layers < first[last] < float("inf"):
        return []
    chain = nx.dag_longest_path(tree.subgraph([last, *(n for n in nx.descendants(tree, last) if n in sels)]))[::-1]
    doubled = any(h.winner for hs in tree.graph["hostings"].values() for h in hs)
    gather = _gather(tree, chain[0])
    lead = "Before layer 1 each input position holds only its own token and the output token nothing; the target needs"
    layers = plural(arch.layers, "layer")
    if len(chain) == 1:
        return [Reason("initial", f"{lead} {describe_node(tree, last)}, whose {gather}: it is known after layer "
                                  f"{int(first[last])} at the earliest, and the architecture has {layers}.")]
    needs = f"{lead} a chain of {len(chain)} dependent selections ({_links(tree, chain)})"
    if not doubled and not gather:
        return [Reason("initial", f"{needs}, each made from what the one before gathered, one per layer, and the "
                                  f"architecture has {layers}.")]
    owner = f"{node_names(tree)[chain[0]]}'s" if chain[0] in node_names(tree) else "the first one's"
    how = (", and even by pointer doubling (a retrieval copies the links its winner made) the last" if doubled
           else ", made one per layer: the last")
    return [Reason("initial", f"{needs}{f'; {owner} {gather}' if gather else ''}{how} is known after layer "
                              f"{int(first[last])} at the earliest, and the architecture has {layers}.")]


def _links(tree, chain: list[str]) -> str:
    """A chain of selections innermost first, each by its name where it has one (``names``), the middle of a long
    one left out."""
    named = node_names(tree)
    links = [named.get(n) or describe_node(tree, n) for n in chain]
    if len(links) > 5:
        links = [*links[:2], "...", links[-1]]
    return ", then ".join(links)


def _gather(tree, node: str) -> str:
    """What a selection's candidates read at their neighbours, which a layer gathers to each candidate before the
    selection can be made (``earliest.py``), in words, or ""."""
    d = tree.nodes[node]
    offsets = sorted({leaf.index.offset for _, term in d["terms"] for leaf in walk(term)
                      if isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.OffsetIndex)
                      and leaf.index.name == d["var"]})
    if not offsets:
        return ""
    reads = " and ".join(f"x[{d['var']}{k:+d}]" for k in offsets)
    return f"candidates {d['var']} must first gather {reads} (a layer)"


def _budgets(tree, sels, arch, core, per_position: bool = False, reader: str = "the output token",
             reader_class: PositionClass = OUTPUT) -> list[Reason]:
    """One sentence per head budget of the core that has something to say: a budget is a reason only
    through the selections that compete for its heads, so a budget with none says nothing and is left out.
    With an answer at every position the inputs answer, so every selection is theirs to make."""
    at_inputs = [n for n in sels if len(tree.nodes[n]["bound"]) == 1]
    at_output = [n for n in sels if not tree.nodes[n]["bound"]]
    if per_position:
        at_inputs, at_output = [n for n in sels if len(tree.nodes[n]["bound"]) <= 1], []
    reasons = []
    for constraint in sorted((c for c in core if c.family is Family.BUDGET), key=lambda c: (c.layer, str(c.where))):
        name, layer, where = str(constraint), constraint.layer, constraint.where
        h = plural(arch.heads[layer - 1], "head")
        if where == reader_class and at_output:  # where the answer is read
            reasons.append(Reason(name, (
                f"Layer {layer} gives {reader} {h}, while {plural(len(at_output), 'selection')} "
                f"that bind no variable must reach it, one head each ({_listing(tree, at_output)}).")))
        elif where != reader_class and not where.output and at_inputs:
            reasons.append(Reason(name, (
                f"Layer {layer} gives each input position {h}, while "
                f"{plural(len(at_inputs), 'selection')} can only be made at the input positions, one head each "
                f"({_listing(tree, at_inputs)}), and later layers need them made by then.")))
        elif where != reader_class and not where.output and at_output:  # docs/model.md, section 10: made at the inputs, handed on
            reasons.append(Reason(name, (
                f"Layer {layer} gives each input position {h}; each can make one selection that binds no variable for "
                f"a later retrieval to hand on to {reader}, and with {reader}'s own heads that is "
                f"too few for the {plural(len(at_output), 'selection')} that bind no variable the target needs.")))
    return reasons


def _ranks(tree, arch, core) -> list[Reason]:
    """One sentence per rank rule of the core (``rank:<layer>:<node>:<rank>``, only under ``rank_aware``):
    the layer's heads are narrower than the score of a selection they would have to make."""
    reasons = []
    for rule in sorted((c for c in core if c.family is Family.RANK), key=lambda c: (c.layer, str(c))):
        name, layer, node, rank = str(rule), rule.layer, rule.node, rule.rank
        h = arch.heads[layer - 1]
        what = describe_node(tree, node) if node in tree.nodes else f"selection {node}"
        held = (f"the rank-{rank} score of {what}" if rank is not None else
                f"the score of {what}, which is no bilinear form of bounded rank")
        reasons.append(Reason(name, (
            f"A head of width {arch.head_dim(layer)} (E / h = {arch.embed_dim} / {h}) in layer {layer} cannot "
            f"hold {held}: with rank_aware=True no head of that layer may make that retrieval (docs/model.md, "
            f"\"Head width and rank\").")))
    return reasons


def last_token_note(target, asked, causal: bool = False) -> Reason:
    """The sentence that says how a question read at the last position was decided (``model.readout``)."""
    if causal:
        return Reason("readout", (
            f"Read at the last position T under the causal mask without positional encoding: each position p sees "
            f"only x[1..p] and nothing tells it it is not the last, so it computes what position T computes on the "
            f"sequence cut at p, and position T computes {target.text} exactly when every position o computes it "
            f"with T read as o: decided as an answer at every position, {asked.text} (docs/model.md, \"Causal "
            f"mask\")."))
    return Reason("readout", (
        f"Read at the last position T without positional encoding: position T runs the heads every input "
        f"position runs, so it computes {target.text} exactly when every position computes it with x[T] read as "
        f"its own token: decided as an answer at every position, {asked.text} at every position o "
        f"(docs/model.md, \"Readout\")."))


def growing_costs(arch, law: cost.DecodeLaw, has_kth: bool) -> dict[str, sympy.Expr]:
    """The operations whose cost grows with ``T`` on ``arch`` (the ones an efficient program avoids)."""
    from infoflow_smt.symbols import T

    out = {}
    # each head works in n = E/h of its layer: the cheapest of these operations is in the widest heads
    fewest = min(arch.heads)
    widest = arch.width / fewest
    where = "" if len(set(arch.heads)) == 1 else f" (in a layer of {plural(fewest, 'head')}, the widest heads)"
    aggregation = cost.decode(T, arch.input_dim, widest, law)
    if not cost.is_bounded(aggregation):
        out["global aggregation" + where] = aggregation
    if has_kth:
        worst = cost.kth_retrieval(2, widest)
        if not cost.is_bounded(worst):
            out["k-th largest retrieval" + where] = worst
    return out


def clamped(program: Program, arch, law: cost.DecodeLaw, seq_len: int | None = None) -> Reason | None:
    """The sentence that says a decoding cost was clamped at 0 (Theorem 3's law gave less), if one was
    (at ``seq_len``, when the question is asked at one length)."""
    from infoflow_smt.model.program import decoded_sizes

    for action, size in decoded_sizes(program).items():
        width = arch.head_dim(action.layer)
        raw = cost.at(cost.decode_law(size, arch.input_dim, width, law), seq_len)
        if cost.clamp(raw) == 0 and raw != 0:
            tokens = "T tokens" if size is None else plural(size, "token")
            where = "" if seq_len is None or size is not None else f" at T = {seq_len}"
            heads = arch.heads[action.layer - 1]
            state = (f"a width-{width} state" if heads == 1 else
                     f"a head of width {width} (E = {arch.embed_dim} over {heads} heads)")
            return Reason("clamp", (
                f"Decoding {tokens} of dimension {arch.input_dim} from {state} gives exponent "
                f"{raw}{where} by Theorem 3's law, below 0; a cost never falls under a constant, so it counts as 0."))
    return None


def narrow_heads(program: Program, target, arch) -> Reason | None:
    """The note that a head of the witness is narrower than the rank of the score it ranks by (docs/model.md,
    "Head width and rank"): the papers' cost law, and so the verdict, abstract that rank away. Under
    ``rank_aware`` the verdict does not, and no such head is in a witness: no note."""
    if getattr(arch, "rank_aware", False):
        return None
    tree = comparison_tree(target, program.order_map)
    for action in sorted(program.actions, key=lambda a: (a.layer, a.head)):
        if action.op.mode not in (Mode.RETRIEVE, Mode.KTH):
            continue
        rank = score_rank(tree, action.op.node, arch.input_dim)
        width = arch.head_dim(action.layer)
        if rank is not None and width.is_number and rank > width:
            return Reason("rank", (
                f"Note: layer {action.layer}'s heads are {width} wide (E / h = {arch.embed_dim} / "
                f"{arch.heads[action.layer - 1]}), narrower than the rank {rank} of the score a head ranks its "
                f"candidates by for {describe_node(tree, action.op.node)} (a bilinear form in what the two sides "
                f"hold), so a real head of that width cannot compute it; paper 1's cost law abstracts the rank of "
                f"the attention weights away, and this verdict keeps that abstraction (docs/model.md, \"Head width "
                f"and rank\"). With rank_aware=True (--rank-aware) this retrieval is ruled out, and the verdict "
                f"is what the other programs reach: decide with it to know."))
    return None
