"""Hostile inputs for the Python API, as data: (id, code, expected outcome).

Each ``code`` is one Python expression or statement run with ``ifs`` (infoflow_smt), ``np``, ``sympy``, ``T``
and ``tmp`` (a scratch folder) in scope. The outcome is the class name of the error it must raise, or
``"ok"`` (it returns, within its bound). ``tests/properties/test_hostile.py`` runs them all in one subprocess under a
memory limit, each under an alarm. ``COMMAND_LINE`` (at the end) holds the command line's probes, each a shell line
and the promises the docs make of it (``support.hostile_probe``): ``benchmarks/hostile_cli.py`` runs them all.
"""
from __future__ import annotations

from infoflow_smt.limits import MAX_LAYERS
from support.hostile_probe import Probe

A = "ifs.Architecture(heads=(2, 2), embed_dim=32, input_dim=2)"
APE = "ifs.Architecture(heads=(2, 2), embed_dim=32, input_dim=2, positional=True)"
ERR = "InvalidSpecError"



def _chain(n: int, alternate: bool, reads_all: bool = False) -> str:
    """The code of a chain of ``n`` nested reductions, each ranking by its distance to the enclosing one's
    position (min and max alternating: separate selections, ``n`` deep; or all min: one joint reduction).
    ``reads_all``: the innermost score reads every enclosing position (``f1(x[v0], ..., x[v{n-1}])``), so
    evaluating it visits ``T**n`` index tuples. Its parentheses balance: each case is refused for its own reason."""
    kind = "('min', 'max')[i % 2]" if alternate else "'min'"
    body = f"'f1(' + ', '.join(f'x[v{{i}}]' for i in range({n})) + ')'" if reads_all else f"'f1(x[v{n - 1}])'"
    return (f"''.join({kind} + '(' + ('f1(x[v0])' if i == 0 else f'dot(x[v{{i-1}}], x[v{{i}}])') + ' + ' "
            f"for i in range({n})) + {body} + ''.join(f' for v{{i}} in T)' for i in reversed(range({n})))")


TEXTS = [
    ("empty", "''"), ("blank", "'   '"), ("open-call", "'min('"), ("open-index", "'x['"), ("dangling-op", "'1 +'"),
    ("parens-only", "'(((('"), ("close-paren", "')'"), ("unclosed-generator", "'min(x[t] for t in T'"),
    ("null-byte", "'max(f1(x[t]) for t in T)\\x00'"), ("unicode-name", "'mín(f1(x[t]) for t in T)'"),
    ("emoji", "'max(f1(x[😀]) for 😀 in T)'"), ("rtl-mark", "'max(f1(x[t])\\u202e for t in T)'"),
    ("deep-parens", "'(' * 500 + '1' + ')' * 500"), ("unary-flood", "'-' * 20000 + '1'"),
    ("plus-flood", "'1+' * 5000 + '1'"), ("too-long", "'x[1] + ' * 4000 + 'x[2]'"),
    ("position-60000", "'x[60000]'"), ("position-million", "'x[1000000]'"), ("position-2**63", "'x[2**63]'"),
    ("position-10**100", "'x[10**100]'"), ("position-257", "'x[257]'"), ("position-T-300", "'x[T-300]'"),
    ("offset-65", "'max(f1(x[t-65]) for t in range(70, T+1))'"), ("rank-65", "'kth_largest(65, f1(x[t]) for t in T)'"),
    ("rank-huge", "'kth_largest(10**30, f1(x[t]) for t in T)'"), ("range-300", "'max(f1(x[t]) for t in range(1, 300))'"),
    ("joint-9", ("'min(f1(x[a],x[b],x[c],x[d],x[e],x[f],x[g],x[h],x[i]) for a in T for b in T for c in T for d in T "
                "for e in T for f in T for g in T for h in T for i in T)'")),
    ("nesting-33", "'min(' * 33 + 'f1(x[v0])' + ''.join(f' for v{i} in T)' for i in range(33))"),
    ("nesting-33-chain", _chain(33, alternate=True)),
    ("nesting-33-dependent", _chain(33, alternate=False)),   # a chain of one kind, over the nesting limit
    ("number-1e999", "'1e999'"), ("import", "\"__import__('os').system('true')\""),
    ("dunder", "'().__class__'"), ("lambda", "'lambda: 1'"), ("eval-call", "\"eval('1')\""),
    ("open-call-name", "\"open('/etc/passwd')\""), ("getattr", "\"getattr(x, 'y')\""),
    ("comprehension", "'[c for c in T]'"), ("string", "\"'abc'\""), ("fstring", "\"f'{x}'\""),
    ("walrus", "'(y := 1)'"), ("starred", "'f1(*a)'"), ("keyword", "'f1(x[1], k=2)'"), ("bool-op", "'a and b'"),
    ("compare", "'x[1] < x[2]'"), ("floordiv", "'x[1] // 2'"), ("matmul", "'x[1] @ x[2]'"),
    ("unbound-var", "'x[t]'"), ("var-as-value", "'max(f1(x[t], t) for t in T)'"), ("x-as-value", "'x'"),
    ("T-as-value", "'T * 2'"), ("bad-domain", "'min(f1(x[t]) for t in U)'"), ("range-zero", "'min(f1(x[t]) for t in range(0, T))'"),
    ("if-filter", "'min(f1(x[t]) for t in T if t)'"), ("rebind", "'min(max(f1(x[t]) for t in T) for t in T)'"),
    ("dot-arity", "'dot(x[1])'"), ("bilinear-matrix", "'bilinear(x[1], x[2], x[3])'"), ("abs", "'abs(x[1])'"),
    ("subset-value", "'S1 + 1'"), ("underscore", "'_secret'"), ("bytes", "b'x[1]'"), ("none", "None"), ("int", "42"),
]

ARCHITECTURES = [
    ("heads-0", "ifs.Architecture(heads=(0,))"), ("heads-negative", "ifs.Architecture(heads=(-1,))"),
    ("heads-bool", "ifs.Architecture(heads=(True,))"), ("heads-float", "ifs.Architecture(heads=(1.5,))"),
    ("heads-string", "ifs.Architecture(heads='2')"), ("heads-none", "ifs.Architecture(heads=None)"),
    ("heads-empty", "ifs.Architecture(heads=())"), ("heads-zero-layer", "ifs.Architecture(heads=(1, 0))"),
    ("heads-million", "ifs.Architecture(heads=(10**6,))"), ("layers-70", "ifs.Architecture(heads=(1,) * 70)"),
    ("width-negative", "ifs.Architecture(heads=(1,), embed_dim=-4)"), ("width-0", "ifs.Architecture(heads=(1,), embed_dim=0)"),
    ("width-nan", "ifs.Architecture(heads=(1,), embed_dim=sympy.nan)"), ("width-oo", "ifs.Architecture(heads=(1,), embed_dim=sympy.oo)"),
    ("width-zoo", "ifs.Architecture(heads=(1,), embed_dim=sympy.zoo)"), ("width-sin", "ifs.Architecture(heads=(1,), embed_dim=sympy.sin(T))"),
    ("width-minus-T", "ifs.Architecture(heads=(1,), embed_dim=-T)"), ("width-string", "ifs.Architecture(heads=(1,), embed_dim='32')"),
    ("width-none", "ifs.Architecture(heads=(1,), embed_dim=None)"), ("width-bool", "ifs.Architecture(heads=(1,), embed_dim=True)"),
    ("width-float", "ifs.Architecture(heads=(1,), embed_dim=1.5)"), ("width-complex", "ifs.Architecture(heads=(1,), embed_dim=sympy.I * T)"),
    ("width-other-symbol", "ifs.Architecture(heads=(1,), embed_dim=sympy.Symbol('n'))"),
    ("input-dim-0", "ifs.Architecture(heads=(1,), input_dim=0)"), ("input-dim-negative", "ifs.Architecture(heads=(1,), input_dim=-1)"),
    ("input-dim-10**9", "ifs.Architecture(heads=(1,), input_dim=10**9)"), ("input-dim-float", "ifs.Architecture(heads=(1,), input_dim=1.5)"),
    ("input-dim-string", "ifs.Architecture(heads=(1,), input_dim='2')"), ("input-dim-bool", "ifs.Architecture(heads=(1,), input_dim=True)"),
    ("positional-string", "ifs.Architecture(heads=(1,), positional='yes')"), ("positional-int", "ifs.Architecture(heads=(1,), positional=1)"),
]

DECIDE = [
    ("seq-len-1", f"ifs.decide('max_retrieval', {A}, seq_len=1)"), ("seq-len-string", f"ifs.decide('max_retrieval', {A}, seq_len='8')"),
    ("seq-len-float", f"ifs.decide('max_retrieval', {A}, seq_len=2.5)"), ("seq-len-bool", f"ifs.decide('max_retrieval', {A}, seq_len=True)"),
    ("seq-len-short-for-rank", f"ifs.decide('kth_largest:k=3', {A}, seq_len=3)"),
    ("timeout-0", f"ifs.decide('max_retrieval', {A}, timeout=0)"), ("timeout-negative", f"ifs.decide('max_retrieval', {A}, timeout=-1)"),
    ("timeout-nan", f"ifs.decide('max_retrieval', {A}, timeout=float('nan'))"), ("timeout-inf", f"ifs.decide('max_retrieval', {A}, timeout=float('inf'))"),
    ("timeout-string", f"ifs.decide('max_retrieval', {A}, timeout='1')"), ("timeout-bool", f"ifs.decide('max_retrieval', {A}, timeout=True)"),
    # past MAX_TIMEOUT: z3 takes milliseconds in 32 bits (an OverflowError inside at 1e306)
    ("timeout-1e306", f"ifs.decide('max_retrieval', {A}, timeout=1e306)"),
    ("samples-0", f"ifs.decide('max_retrieval', {A}, samples=0)"), ("samples-negative", f"ifs.decide('max_retrieval', {A}, samples=-1)"),
    ("samples-none", f"ifs.decide('max_retrieval', {A}, samples=None)"), ("samples-float", f"ifs.decide('max_retrieval', {A}, samples=1.5)"),
    ("law-unknown", f"ifs.decide('max_retrieval', {A}, decode_law='foo')"), ("target-none", f"ifs.decide(None, {A})"),
    ("target-int", f"ifs.decide(42, {A})"), ("target-object", f"ifs.decide(object(), {A})"), ("arch-none", "ifs.decide('max_retrieval', None)"),
    ("arch-tuple", "ifs.decide('max_retrieval', (1, 1))"), ("unknown-catalogue", f"ifs.decide('no_such_target', {A})"),
    ("scalar-tokens-with-vectors", f"ifs.decide('max(x[t] for t in T)', {A})"),
    ("too-costly-to-check", (f"ifs.decide('min(dot(x[a],x[b])*dot(x[c],x[d])*dot(x[e],x[f])*dot(x[g],x[h]) for a in T for b in T "
                            f"for c in T for d in T for e in T for f in T for g in T for h in T)', {A})")),
    ("nesting-12-chain-too-costly", f"ifs.decide({_chain(12, alternate=True, reads_all=True)}, {A}, timeout=20)"),
]
BOUNDED = [  # each returns within its deadline (UNKNOWN is fine, a wrong or unbounded answer is not)
    ("joint-8-chain", (f"ifs.decide('min(dot(x[a],x[b])+dot(x[b],x[c])+dot(x[c],x[d])+dot(x[d],x[e])+dot(x[e],x[f])+"
                      f"dot(x[f],x[g])+dot(x[g],x[h]) for a in T for b in T for c in T for d in T for e in T for f in T "
                      f"for g in T for h in T)', {A}, timeout=20)")),
    ("timeout-nanosecond", f"ifs.decide('intrinsic_dimension:D=3', {A}, timeout=1e-9)"),
    ("timeout-sub-millisecond", "ifs.decide('intrinsic_dimension:D=8', ifs.Architecture(heads=(7, 8), input_dim=4), timeout=0.0005)"),
    ("joint-7-chain", (f"ifs.decide('min(dot(x[a],x[b])+dot(x[b],x[c])+dot(x[c],x[d])+dot(x[d],x[e])+dot(x[e],x[f])+"
                      f"dot(x[f],x[g]) for a in T for b in T for c in T for d in T for e in T for f in T "
                      f"for g in T)', {A}, timeout=20)")),
    ("intrinsic-8-at-8x8", "ifs.decide('intrinsic_dimension:D=8', ifs.Architecture(heads=(8,) * 8, input_dim=4), timeout=20)"),
    ("position-256-positional", f"ifs.decide('x[256]', {APE}, timeout=20)"),
    ("nesting-12-distributed", (f"ifs.decide('min(f1(x[v0]) + ' + ''.join(f'min(dot(x[v{{i}}], x[v{{i+1}}]) + ' "
                               f"for i in range(10)) + 'f1(x[v10])' + ''.join(f' for v{{10-i}} in T)' for i in range(10)) + "
                               f"' for v0 in T)', {A}, timeout=20)")),
    ("sum-of-8-independent-selections", ("ifs.decide('min(' + ' + '.join(f'f{i}(x[{v}])' for i, v in enumerate('abcdefgh', 1)) + "
                                         "' ' + ' '.join(f'for {v} in T' for v in 'abcdefgh') + ')', "
                                         "ifs.Architecture(heads=(8,), input_dim=2), timeout=20)")),
    ("nesting-32-chain-on-2-layers", f"ifs.decide({_chain(32, alternate=True)}, {A}, timeout=20)"),
    ("nesting-32-one-kind", f"ifs.decide({_chain(32, alternate=False)}, {A}, timeout=20)"),  # one joint reduction
    ("nesting-32-chain-32-layers", (f"ifs.decide({_chain(32, alternate=True)}, ifs.Architecture(heads=(1,) * 32, "
                                    "input_dim=2), timeout=20)")),
    ("minimize-bounded", "ifs.minimize('intrinsic_dimension:D=6', max_layers=6, max_heads=8, input_dim=2, timeout=20)"),
    ("sweep-bounded", f"ifs.sweep(['triangle_center'], [{A}], cache=False, workers=1, timeout=20)"),
]

CHECK = [
    ("check-program-none", f"ifs.check(None, 'max_retrieval', {A})"), ("check-program-string", f"ifs.check('prog', 'max_retrieval', {A})"),
    ("check-target-none", f"ifs.check(ifs.Program(()), None, {A})"), ("check-arch-none", "ifs.check(ifs.Program(()), 'max_retrieval', None)"),
    ("check-samples-0", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, samples=0)"),
    ("check-samples-negative", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, samples=-3)"),
    ("check-seq-len-1", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, seq_len=1)"),
    ("check-seq-len-huge", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, seq_len=10**7)"),
    ("check-inputs-shape", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, inputs=np.zeros((2, 3)))"),
    ("check-inputs-nan", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, inputs=np.full((2, 4, 2), np.nan))"),
    ("check-inputs-list", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, inputs=[[[0.0]]])"),
    ("check-inputs-wrong-d", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, inputs=np.zeros((2, 4, 5)))"),
    ("check-seed-string", f"ifs.check(ifs.Program((), layers=2), 'max_retrieval', {A}, seed='0')"),
]

OTHERS = [
    ("minimize-layers-0", "ifs.minimize('max_retrieval', max_layers=0)"), ("minimize-heads-string", "ifs.minimize('max_retrieval', max_heads='3')"),
    ("minimize-target-none", "ifs.minimize(None)"), ("minimize-width", "ifs.minimize('max_retrieval', embed_dim=-1)"),
    ("minimize-timeout", "ifs.minimize('max_retrieval', timeout=-1)"),
    ("sweep-workers-0", f"ifs.sweep(['max_retrieval'], [{A}], workers=0)"), ("sweep-backend", f"ifs.sweep(['max_retrieval'], [{A}], backend='spark')"),
    ("sweep-arch-tuple", "ifs.sweep(['max_retrieval'], [(1, 1)])"), ("sweep-no-targets", f"ifs.sweep([], [{A}])"),
    ("sweep-bad-target", f"ifs.sweep(['x[0]'], [{A}], cache=False)"), ("sweep-timeout", f"ifs.sweep(['max_retrieval'], [{A}], timeout=0)"),
    ("minimize-timeout-1e308", "ifs.minimize('max_retrieval', timeout=1e308)"),
    ("sweep-timeout-1e306", f"ifs.sweep(['max_retrieval'], [{A}], cache=False, timeout=1e306)"),
    ("sweep-cell-timeout-0", f"ifs.sweep(['max_retrieval'], [{A}], cache=False, cell_timeout=0)"),
    ("sweep-cell-timeout-nan", f"ifs.sweep(['max_retrieval'], [{A}], cache=False, cell_timeout=float('nan'))"),
    ("sweep-cell-timeout-string", f"ifs.sweep(['max_retrieval'], [{A}], cache=False, cell_timeout='1')"),
    ("decide-all-timeout-1e306", "ifs.decide_all('max_retrieval', timeout=1e306)"),
    ("decide-all-head-dim", "ifs.decide_all('max_retrieval', head_dim=0)"), ("decide-all-target", "ifs.decide_all(3.5)"),
    ("decide-all-width", "ifs.decide_all('max_retrieval', embed_dim='x')"), ("decide-all-timeout", "ifs.decide_all('max_retrieval', timeout=float('nan'))"),
    ("export-exists", f"open(tmp + '/e.smt2', 'w').close() or ifs.export_smtlib('max_retrieval', {A}, tmp + '/e.smt2')"),
    ("export-symlink", f"__import__('os').symlink('/tmp/target-of-link', tmp + '/l.smt2') or ifs.export_smtlib('max_retrieval', {A}, tmp + '/l.smt2')"),
    ("export-directory", f"ifs.export_smtlib('max_retrieval', {A}, tmp)"),
    ("export-no-folder", f"ifs.export_smtlib('max_retrieval', {A}, tmp + '/no/such/folder/e.smt2')"),
    ("catalogue-unknown", "ifs.catalogue.get('no_such')"), ("catalogue-D-0", "ifs.catalogue.get('intrinsic_dimension', D=0)"),
    ("catalogue-D-1000", "ifs.catalogue.get('intrinsic_dimension', D=1000)"), ("catalogue-D-string", "ifs.catalogue.parse_spec('intrinsic_dimension:D=x')"),
    ("catalogue-k-2000", "ifs.catalogue.get('kth_largest', k=2000)"), ("catalogue-positions-0", "ifs.catalogue.parse_spec('specific_positions:positions=0')"),
    ("catalogue-squared-maybe", "ifs.catalogue.parse_spec('triangle_center:squared=maybe')"),
    ("catalogue-duplicate", "ifs.catalogue.parse_spec('intrinsic_dimension:D=2,D=3')"), ("catalogue-unknown-param", "ifs.catalogue.get('max_retrieval', z=1)"),
    ("catalogue-name-type", "ifs.catalogue.get(3)"),
    ("evaluate-list", "ifs.parse_target('x[1]').evaluate([[[1.0]]])"), ("evaluate-2d", "ifs.parse_target('x[1]').evaluate(np.zeros((2, 3)))"),
    ("evaluate-strings", "ifs.parse_target('x[1]').evaluate(np.array([[['a']]]))"), ("evaluate-nan", "ifs.parse_target('x[1]').evaluate(np.full((1, 2, 2), np.nan))"),
    ("evaluate-inf", "ifs.parse_target('x[1]').evaluate(np.full((1, 2, 2), np.inf))"), ("evaluate-empty", "ifs.parse_target('x[1]').evaluate(np.zeros((1, 0, 2)))"),
    ("evaluate-complex", "ifs.parse_target('x[1]').evaluate(np.zeros((1, 2, 2), dtype=complex))"),
    ("evaluate-too-short", "ifs.parse_target('x[5]').evaluate(np.zeros((1, 3, 2)))"),
    ("parse-seed-string", "ifs.parse_target('x[1]', seed='1')"), ("parse-name-int", "ifs.parse_target('x[1]', name=3)"),
]

# no silent partial answer: an aggregate answer cut short by its deadline says which cells it could not decide
PARTIAL = [
    ("partial-minimize", ("from infoflow_smt.smt.solver import forget_recent; forget_recent(); "
                          "f = ifs.minimize('intrinsic_dimension:D=10', max_layers=2, max_heads=2, input_dim=2, "
                          "timeout=0.01); d = f.to_json(); assert not f.complete and len(f.undecided) == 4 "
                          "and d['complete'] is False and len(d['undecided']) == 4 and 'incomplete' in str(f)")),
    ("partial-minimize-some-decided", ("f = ifs.minimize('max_retrieval', max_layers=1, max_heads=2, input_dim=2, "
                                       "timeout=20); assert f.complete and f.points and not f.to_json()['undecided']")),
    # hard questions, their recent answers forgotten: a warm process answers a small one within any deadline
    ("partial-sweep", ("from infoflow_smt.smt.solver import forget_recent; forget_recent(); "
                       "s = ifs.sweep(['intrinsic_dimension:D=10'], [ifs.Architecture(heads=(1,) * 10, input_dim=2), "
                       "ifs.Architecture(heads=(2, 2), input_dim=2)], "
                       "cache=False, workers=1, timeout=0.01); d = s.to_json(); assert s.undecided == 2 and "
                       "d['complete'] is False and d['undecided'] == 2 and 'incomplete' in str(s)")),
    ("partial-decide-all", "ifs.decide_all('intrinsic_dimension:D=3', timeout=0.01)"),
]

# every input bounded before allocation, typed errors for every wrong type, a clear answer for NaN targets
BOUNDS = [
    ("bound-samples-10**8", f"ifs.decide('max_retrieval', {A}, samples=10**8)"),
    ("bound-sweep-samples", f"ifs.sweep(['max_retrieval'], [{A}], cache=False, samples=10**9)"),
    ("bound-workers-100000", f"ifs.sweep(['max_retrieval'], [{A}], cache=False, workers=100000)"),
    ("bound-subset-2**63", "ifs.parse_target('max(f1(x[t]) for t in S9223372036854775808)')"),
    ("bound-param-5000-digits", "ifs.catalogue.parse_spec('intrinsic_dimension:D=' + '9' * 5000)"),
    ("bound-param-5000-digits-get", "ifs.catalogue.get('kth_largest', k=10**5000)"),
    ("bound-flat-sum-350", "ifs.parse_target(' + '.join(f'f1(x[{i % 200 + 1}])' for i in range(350)))"),
    ("bound-product-300", "ifs.parse_target(' * '.join(f'dot(x[{i % 200 + 1}], x[1])' for i in range(300)))"),
    ("type-from-json-empty", "ifs.Program.from_json({})"), ("type-from-json-str", "ifs.Program.from_json('x')"),
    ("type-from-json-action", "ifs.Program.from_json({'layers': 1, 'order': {}, 'actions': [{'layer': 1}]})"),
    ("type-from-json-mode", ("ifs.Program.from_json({'layers': 1, 'order': {}, 'actions': [{'layer': 1, 'head': 1, "
                             "'where': 'output', 'mode': 'FLY', 'node': None, 'positions': []}]})")),
    ("type-from-json-none", "ifs.Program.from_json(None)"),
    ("type-check-bad-order", f"ifs.check(ifs.Program((), layers=2, order=(('g0', ('z',)),)), 'min_pairwise_dot', {A})"),
    ("type-plot-str", "ifs.plot_flow('str', tmp + '/f.png')"), ("type-plot-none", "ifs.plot_flow(None, tmp + '/f.png')"),
    ("type-export-path-none", f"ifs.export_smtlib('max_retrieval', {A}, None)"),
    ("type-export-path-int", f"ifs.export_smtlib('max_retrieval', {A}, 3)"),
    ("type-sweep-cache-0", f"ifs.sweep(['max_retrieval'], [{A}], cache=0, workers=1)"),
    ("type-sweep-cache-list", f"ifs.sweep(['max_retrieval'], [{A}], cache=[], workers=1)"),
    ("bound-width-T**T", "ifs.Architecture(heads=(1,), embed_dim=T**T)"),
    ("bound-brute-force-nan", f"ifs.brute_force_decide('max_retrieval', {A}, budget_s=float('nan'))"),
    ("bound-brute-force-inf", f"ifs.brute_force_decide('max_retrieval', {A}, budget_s=float('inf'))"),

    ("nan-divide-by-0", f"ifs.decide('max(f1(x[t]) for t in T) / 0', {A})"),
    ("nan-0-over-0", f"ifs.decide('max(f1(x[t]) for t in T) * 0 / 0', {A})"),
    ("nan-root-of-negative", f"ifs.decide('max(f1(x[t]) for t in T) + x[1] ** 0.5', {APE})"),
    ("nan-sweep", f"ifs.sweep(['max(f1(x[t]) for t in T) / 0'], [{A}], cache=False, workers=1)"),
]
NUMPY_INTS = [  # numpy integers are accepted wherever ints are (each returns)
    ("numpy-architecture", "ifs.Architecture(heads=(np.int64(2), np.int32(1)), embed_dim=np.int64(16), input_dim=np.int8(2))"),
    ("numpy-decide", f"ifs.decide('max_retrieval', {A}, seq_len=np.int64(8), samples=np.int32(3))"),
    ("numpy-minimize", "ifs.minimize('max_retrieval', max_layers=np.int64(1), max_heads=np.uint8(1), input_dim=np.int64(2))"),
    ("numpy-sweep", f"ifs.sweep(['max_retrieval'], [{A}], cache=False, workers=np.int64(1), samples=np.int64(4), seq_len=np.int64(8))"),
    ("numpy-catalogue", "ifs.catalogue.get('kth_largest', k=np.int64(2))"),
]
# nothing read from disk trusted unchecked; special files refused before work; writes atomic, modes kept
_CACHE = f"c = tmp + '/c.jsonl'; g = [{A}, ifs.Architecture(heads=(1,), input_dim=2)]; ifs.sweep(['min_pairwise_dot'], g, cache=c, workers=1); "
DISK = [
    ("disk-cache-folder", f"ifs.sweep(['max_retrieval'], [{A}], cache=tmp, workers=1)"),
    ("disk-cache-dev-zero", f"ifs.sweep(['max_retrieval'], [{A}], cache='/dev/zero', workers=1)"),
    ("disk-cache-fifo", f"__import__('os').mkfifo(tmp + '/f') or ifs.sweep(['max_retrieval'], [{A}], cache=tmp + '/f', workers=1)"),
    ("disk-cache-under-a-file", f"open(tmp + '/file', 'w').close() or ifs.sweep(['max_retrieval'], [{A}], cache=tmp + '/file/c', workers=1)"),
    ("disk-cache-empty-name", f"ifs.sweep(['max_retrieval'], [{A}], cache='', workers=1)"),
    ("disk-export-under-a-file", f"open(tmp + '/file', 'w').close() or ifs.export_smtlib('max_retrieval', {A}, tmp + '/file/e.smt2')"),
    ("disk-export-dev-null", f"ifs.export_smtlib('max_retrieval', {A}, '/dev/null', overwrite=True)"),
    ("disk-export-fifo", f"__import__('os').mkfifo(tmp + '/f.smt2') or ifs.export_smtlib('max_retrieval', {A}, tmp + '/f.smt2', overwrite=True)"),
    ("disk-plot-fifo", ("__import__('os').mkfifo(tmp + '/f.png') or ifs.plot_flow(ifs.decide('min_pairwise_dot', "
                        "ifs.Architecture(heads=(1, 1), input_dim=2)), tmp + '/f.png')")),
    ("disk-plot-no-folder", ("ifs.plot_flow(ifs.decide('min_pairwise_dot', ifs.Architecture(heads=(1, 1), input_dim=2)), "
                             "tmp + '/no/f.png')")),
]
DISK_OK = [
    ("disk-tampered-status", (_CACHE + "import json; r = [json.loads(l) for l in open(c)]; [x.update(status='infeasible') "
                              "for x in r if x['status'] == 'feasible']; open(c, 'w').write(''.join(json.dumps(x) + '\\n' "
                              "for x in r)); s = ifs.sweep(['min_pairwise_dot'], g, cache=c, workers=1); "
                              "assert s.cells[0].status.value == 'feasible' and not s.cells[0].cached, s")),
    ("disk-empty-witness", (_CACHE + "import json; from infoflow_smt.explore import sweeps; r = [json.loads(l) for l in open(c)]; "
                            "[x.update(witness={'layers': 2, 'order': {}, 'actions': []}) or x.update(sum=sweeps._checksum(x)) "
                            "for x in r if x['status'] == 'feasible']; open(c, 'w').write(''.join(json.dumps(x) + '\\n' "
                            "for x in r)); s = ifs.sweep(['min_pairwise_dot'], g, cache=c, workers=1); "
                            "assert not s.cells[0].cached and s.cells[0].witness.actions, s")),
    ("disk-garbage-lines", (_CACHE + "open(c, 'a').write('{\"model\": \"' + __import__('infoflow_smt.explore.sweeps', "
                            "fromlist=['x']).MODEL_VERSION + '\", \"key\": 1}\\n' + 'x' * 3000000 + '\\n'); "
                            "s = ifs.sweep(['min_pairwise_dot'], g, cache=c, workers=1); assert s.cached == 2, s")),
    # a record edited with its checksum recomputed (the checksum is no secret): checked against itself
    ("disk-status-flipped-checksum-recomputed",   # "no 1": infeasible with an efficient exponent
     (_CACHE + "import json; from infoflow_smt.explore import sweeps; r = [json.loads(l) for l in open(c)]; "
      "[x.update(status='infeasible', solver=sweeps.SOLVER) or x.update(sum=sweeps._checksum(x)) for x in r "
      "if x['status'] == 'feasible']; open(c, 'w').write(''.join(json.dumps(x) + '\\n' for x in r)); "
      "s = ifs.sweep(['min_pairwise_dot'], g, cache=c, workers=1); "
      "assert s.cells[0].status.value == 'feasible' and not s.cells[0].cached, s")),
    ("disk-feasible-exponent-that-grows",
     (_CACHE + "import json; from infoflow_smt.explore import sweeps; r = [json.loads(l) for l in open(c)]; "
      "[x.update(exponent='T/8 - 1') or x.update(sum=sweeps._checksum(x)) for x in r if x['status'] == 'feasible']; "
      "open(c, 'w').write(''.join(json.dumps(x) + '\\n' for x in r)); "
      "s = ifs.sweep(['min_pairwise_dot'], g, cache=c, workers=1); "
      "assert s.cells[0].exponent == '1' and not s.cells[0].cached, s")),
    ("disk-infeasible-from-another-solver",   # nothing replays a "no": only the solver that wrote it is served it
     (_CACHE + "import json; from infoflow_smt.explore import sweeps; r = [json.loads(l) for l in open(c)]; "
      "[x.update(solver='model 4, z3 0.0') or x.update(sum=sweeps._checksum(x)) for x in r "
      "if x['status'] == 'infeasible']; open(c, 'w').write(''.join(json.dumps(x) + '\\n' for x in r)); "
      "s = ifs.sweep(['min_pairwise_dot'], g, cache=c, workers=1); "
      "assert s.cells[1].status.value == 'infeasible' and not s.cells[1].cached and s.cells[0].cached, s")),
    ("disk-exponent-that-is-code",   # read by a whitelist: never run
     (_CACHE + "import json, os; from infoflow_smt.explore import sweeps; r = [json.loads(l) for l in open(c)]; "
      "[x.update(exponent=f\"__import__('os').mkdir('{tmp}/ran')\") or x.update(sum=sweeps._checksum(x)) for x in r "
      "if x['status'] == 'infeasible']; open(c, 'w').write(''.join(json.dumps(x) + '\\n' for x in r)); "
      "s = ifs.sweep(['min_pairwise_dot'], g, cache=c, workers=1); "
      "assert not s.cells[1].cached and not os.path.exists(tmp + '/ran'), s")),
    ("disk-same-architecture-twice", (f"s = ifs.sweep(['min_pairwise_dot'], [{A}, {A}], cache=False, workers=1); "
                                      "assert not any(c.inferred for c in s.cells) and all(c.witness for c in s.cells), s")),
    ("disk-export-keeps-mode", (f"p = tmp + '/e.smt2'; open(p, 'w').close(); __import__('os').chmod(p, 0o644); "
                                f"ifs.export_smtlib('max_retrieval', {A}, p, overwrite=True); "
                                "assert __import__('os').stat(p).st_mode & 0o777 == 0o644 and open(p).read().startswith('(set-logic')")),
]

# returned objects immutable or copies: changing one cannot change a later answer
_TWICE = "a = ifs.Architecture(heads=(1, 1), input_dim=2); t = ifs.catalogue.get('min_pairwise_dot'); v = ifs.decide(t, a); "
SHARED = [
    ("shared-tree-cleared", (_TWICE + "g = t.tree(); g.remove_nodes_from(list(g.nodes)); g.graph.clear(); "
                             "w = ifs.decide('min_pairwise_dot', a); assert (w.status, w.exponent, w.witness) == "
                             "(v.status, v.exponent, v.witness) and len(t.tree().nodes) == 3 and t.comparison_order == 2")),
    ("shared-tree-attributes", (_TWICE + "g = t.tree(); [d.update(kind='output', bound=frozenset()) for _, d in g.nodes(data=True)]; "
                                "[grp.__dict__.clear() for grp in g.graph.get('groups', {}).values() if hasattr(grp, '__dict__')]; "
                                "w = ifs.decide(ifs.catalogue.get('min_pairwise_dot'), a); "
                                "assert (w.status, w.exponent) == (v.status, v.exponent) and t.comparison_order == 2")),
    ("shared-program-lists", ("p = ifs.Program([], order=[('g0', ['s', 't'])], layers=2); "
                              "assert isinstance(p.actions, tuple) and p.order == (('g0', ('s', 't')),) and hash(p)")),
    ("shared-stats", (_TWICE + "v.stats.extra['poison'] = 1; w = ifs.decide('max_retrieval', ifs.Architecture(heads=(1,), input_dim=2)); "
                      "assert 'poison' not in w.stats.extra")),
]
SHARED_FROZEN = [
    ("shared-witness-frozen", _TWICE + "v.witness.actions = ()"),
    ("shared-verdict-frozen", _TWICE + "v.witness = None"),
    ("shared-action-frozen", _TWICE + "v.witness.actions[0].op.positions = (1,)"),
]

# one deadline over every phase: the encoding (eight subset selections on six layers take seconds) stops at it
_SUBSETS = "' + '.join(f'max(f{i}(x[t]) for t in S{i})' for i in range(1, 9))"
_DEEP = "ifs.Architecture(heads=(2,) * 6, input_dim=2, positional=True)"
ENCODING_DEADLINE = [  # each raises OutOfTime, writing nothing
    ("deadline-export", f"ifs.export_smtlib({_SUBSETS}, {_DEEP}, tmp + '/e.smt2', timeout=0.05)"),
    ("deadline-export-any-cost", f"ifs.export_smtlib({_SUBSETS}, {_DEEP}, tmp + '/a.smt2', efficient=False, timeout=0.05)"),
]
ENCODING_BOUNDED = [  # each returns soon after its deadline (UNKNOWN unless an earlier answer is reused)
    ("deadline-decide-encoding", (f"import time; s = time.monotonic(); ifs.decide({_SUBSETS}, {_DEEP}, timeout=0.1); "
                                  "assert time.monotonic() - s < 0.1 + 1.5")),
    # the encoding grows polynomially with the selections summed (it was exponential: 16 ran out of memory)
    *[(f"deadline-decide-{k}-subset-selections",
       (f"import time; s = time.monotonic(); ifs.decide(' + '.join(f'min(f{{i}}(x[t]) for t in S{{i}})' "
        f"for i in range(1, {k + 1})), ifs.Architecture(heads=(2, 2), input_dim=2, positional=True), timeout=5); "
        "assert time.monotonic() - s < 5 + 1.5")) for k in (16, 32)],
]
# the target's evaluation counted before it starts (Target.work: what it visits) and stopped by the deadline
EVALUATION_BOUNDED = [
    ("deadline-decide-eight-independent-parts",
     ("import time; text = 'min(' + ' + '.join(f'f{i}(x[{v}])' for i, v in enumerate('abcdefgh', 1)) + ' ' + "
      "' '.join(f'for {v} in T' for v in 'abcdefgh') + ')'; assert ifs.parse_target(text).work(20, 2) == 8 * 20; "
      "s = time.monotonic(); ifs.decide(text, ifs.Architecture(heads=(8,), input_dim=2), timeout=5); "
      "assert time.monotonic() - s < 6")),
    ("deadline-decide-chain-of-6-on-100000-samples",  # 2 * 10^9 tuples: past any deadline, stopped at it
     (f"import time; s = time.monotonic(); ifs.decide({_chain(6, alternate=True)}, {A}, samples=100000, timeout=5); "
      "assert time.monotonic() - s < 5 + 1.5")),
]

# a target as a user may write it: comments holding mathtext, LaTeX that runs a shell, an escape sequence
_COMMENTED = repr("max(f1(x[t]) for t in T)  # $\\frac{$ \x1b[2J\n# \\immediate\\write18{touch owned}\n")
EXPORTS = [  # each drawn or written as the characters it is (mathtext crashed the phase diagram and its HTML)
    ("export-phase-diagram-mathtext",
     (f"s = ifs.sweep([{_COMMENTED}], [ifs.Architecture(heads=(1,), input_dim=2)], cache=False, workers=1); "
      "s.plot(tmp + '/p.png'); assert '<img' in s._repr_html_() and '\\x1b' not in s._repr_html_()")),
    ("export-latex-title-stays-a-comment",
     ("from infoflow_smt.report.tables import Table; "
      f"lines = Table.of(['L'], [[1]], title={_COMMENTED}).render('latex').splitlines(); "
      "assert lines[0].startswith('% ') and lines[1] == '\\\\begin{tabular}{l}', lines")),
]

CASES: list[tuple[str, str, str]] = (
    [(f"text-{i}", f"ifs.parse_target({code})", ERR) for i, code in TEXTS]
    + [(f"decide-text-{i}", f"ifs.decide({code}, {A})", ERR) for i, code in TEXTS[:20]]
    + [(f"arch-{i}", code, ERR) for i, code in ARCHITECTURES]
    + [(f"decide-{i}", code, ERR) for i, code in DECIDE]
    + [(f"bounded-{i}", code, "ok") for i, code in BOUNDED]
    + [(i, code, ERR) for i, code in CHECK]
    + [(i, code, ERR) for i, code in OTHERS]
    + [(i, code, ERR) for i, code in BOUNDS + DISK] + [(i, code, "ok") for i, code in NUMPY_INTS + DISK_OK]
    + [(i, code, "ok") for i, code in SHARED] + [(i, code, "FrozenInstanceError") for i, code in SHARED_FROZEN]
    + [(i, code, "ok") for i, code in PARTIAL[:-1]] + [(PARTIAL[-1][0], PARTIAL[-1][1], "SolverUnknownError")]
    + [(i, code, "OutOfTime") for i, code in ENCODING_DEADLINE] + [(i, code, "ok") for i, code in ENCODING_BOUNDED]
    + [(i, code, "ok") for i, code in EVALUATION_BOUNDED]
    + [(i, code, "ok") for i, code in EXPORTS]
)


# ---- the command line: each probe in its own process (support/hostile_probe.py checks its promises) -------------
_INT, _TERM = 2, 15   # SIGINT, SIGTERM
_S32 = "'" + " + ".join(f"max(f{i}(x[t]) for t in S{i})" for i in range(1, 33)) + "'"
_S8 = "'" + " + ".join(f"max(f{i}(x[t]) for t in S{i})" for i in range(1, 9)) + "'"
_D = "decide min_pairwise_dot --heads 1,1"
_CMP = "compile max_retrieval --heads 1 --embed-dim 8 --seq-len 8 --beta 16 --samples 4"
_LONG = "minimize intrinsic_dimension:D=16 --max-layers 17 --max-heads 16 --input-dim 2 --timeout 120"
# a target written with comments: a newline, LaTeX that runs a shell, an escape sequence
_NAMED = "$'max(f1(x[t]) for t in T)  # \\x1b[2J note\\n# \\\\immediate\\\\write18{touch owned}\\n'"
_BAD_NUMBERS = [   # (command, option and value[, True: the suite runs it]): each one line, exit 2, before any work
    (_D, "--timeout 1e308", True), (_D, "--timeout 1e306"), (_D, "--timeout inf"), (_D, "--timeout nan", True),
    (_D, "--timeout 0"), (_D, "--timeout -1"), (_D, "--timeout 1e-400"), (_D, "--seq-len 1" + "0" * 19, True),
    (_D, "--seq-len 1.5"), (_D, "--input-dim 1000000000"), ("decide min_pairwise_dot", "--heads 1,0"),
    ("decide min_pairwise_dot", "--heads 257"), ("decide min_pairwise_dot", "--heads " + ",".join(["1"] * (MAX_LAYERS + 1))),
    (_D, "--embed-dim T**T"), ("explain min_pairwise_dot --heads 1", "--timeout 1e306"),
    ("minimize min_pairwise_dot", f"--max-layers {MAX_LAYERS + 1}"), ("minimize min_pairwise_dot", "--max-heads 1000000000"),
    ("minimize min_pairwise_dot", "--timeout 1e306"), ("frontier min_pairwise_dot", "--timeout 1e306"),
    ("frontier min_pairwise_dot", "--head-dim 0"), ("sweep min_pairwise_dot --no-cache", "--timeout 1e306"),
    ("sweep min_pairwise_dot --no-cache", "--workers 100000", True), ("sweep min_pairwise_dot", "--layers 1..100000000000"),
    ("sweep min_pairwise_dot --no-cache", "--cell-timeout 0", True), ("sweep min_pairwise_dot --no-cache", "--cell-timeout -1"),
    ("sweep min_pairwise_dot --no-cache", "--cell-timeout abc"), ("sweep min_pairwise_dot --no-cache", "--cell-timeout nan", True),
    ("sweep min_pairwise_dot --no-cache", "--cell-timeout 1e306"),
    ("export-smtlib min_pairwise_dot --heads 1 --output {d}/q.smt2", "--timeout 1e308"),
    ("check {d}/claims_true.toml", "--timeout 1e308", True), ("check {d}/claims_true.toml", "--timeout nan"),
    ("prove depth_separation", "--timeout 1e308", True), ("prove depth_separation", "--timeout inf"),
    ("python -m proofs depth_separation", "--timeout 1e306"),
    (_CMP, "--seq-len 10000000", True), (_CMP, "--samples 1000000000"), (_CMP, "--embed-dim 1000000000"),
    (_CMP, "--beta inf", True), (_CMP, "--beta 1e308"), (_CMP, "--samples 1", True), (_CMP, "--beta 16,4"),
    (_CMP, "--timeout 1e308"),
]
_BAD_PATHS = [   # (command line, what it names[, True]): each one line, exit 2, nothing written, before any work
    ("check {d}/fifo.toml", "a FIFO", True), ("check /dev/zero", "a device", True), ("check {d}/folder", "a folder"),
    ("check {d}/claims_deep.toml", "arrays nested 5000 deep"), ("check {d}/missing.toml", "a missing file"),
    ("check {d}/claims_true.toml --junit-xml {d}/fifo.xml", "a FIFO", True),
    ("check {d}/claims_true.toml --junit-xml {d}/link.xml", "a link", True),
    ("check {d}/claims_true.toml --junit-xml {d}/folder", "a folder"),
    ("check {d}/claims_true.toml --junit-xml {d}/no/out.xml", "a missing folder"),
    ("check {d}/claims_true.toml --junit-xml {d}/claims_true.toml", "the claims file itself", True),
    (f"{_D} --plot {{d}}/fifo.png", "a FIFO", True), (f"{_D} --plot {{d}}/link.png", "a link"),
    (f"{_D} --plot {{d}}/folder", "a folder"), (f"{_D} --plot {{d}}/flow.txt", "a text file"),
    (f"{_D} --plot {{d}}/no/flow.png", "a missing folder"),
    ("sweep min_pairwise_dot --no-cache --plot {d}/link.png", "a link"),
    ("sweep min_pairwise_dot --cache {d}/fifo.jsonl", "a FIFO"), ("sweep min_pairwise_dot --cache /dev/zero", "a device"),
    ("export-smtlib min_pairwise_dot --heads 1 --overwrite --output {d}/link.smt2", "a link", True),
    ("export-smtlib min_pairwise_dot --heads 1 --overwrite --output {d}/fifo.smt2", "a FIFO"),
    ("export-smtlib min_pairwise_dot --heads 1 --overwrite --output /dev/full", "a device"),
    ("prove depth_separation --report {d}/fifo.md", "a FIFO"), ("prove depth_separation --report {d}/link.md", "a link", True),
    ("prove depth_separation --report {d}/folder", "a folder"), ("prove depth_separation --report {d}/no/r.md",
                                                                 "a missing folder"),
    (f"{_CMP} --save {{d}}/folder", "a folder"), (f"{_CMP} --save {{d}}/no/m.pt", "a missing folder"),
    (f"{_CMP} --save /dev/full", "a device"), (f"{_CMP} --save {{d}}/fifo.pt", "a FIFO", True),
    (f"{_CMP} --save {{d}}/link.pt", "a link", True), (f"{_CMP} --plot {{d}}/errors.txt", "a text file"),
    (f"{_CMP} --plot {{d}}/fifo.png", "a FIFO"),
]
COMMAND_LINE: list[Probe] = [
    *(Probe(f"number {command.split()[0] if not command.startswith('python') else 'proofs'} {value}",
            f"infoflow {command} {value}" if not command.startswith("python") else f"{command} {value}", (2,),
            quick=bool(quick)) for command, value, *quick in _BAD_NUMBERS),
    *(Probe(f"path {what}: {line.replace('{d}/', '').replace(_CMP, 'compile').replace(_D, 'decide')}",
            f"infoflow {line}", (2,), quick=bool(quick)) for line, what, *quick in _BAD_PATHS),
    # a reader that stops early leaves the exit code as it would have been (read with pipefail)
    Probe("pipe decide infeasible | true", "infoflow decide min_pairwise_dot --heads 4 | true", (1,), quick=True),
    Probe("pipe decide feasible | head -c 1", f"infoflow {_D} | head -c 1", (0,), ),
    Probe("pipe check false | true", "infoflow check {d}/claims_false.toml | true", (1,), quick=True),
    Probe("pipe check true | head -1", "infoflow check {d}/claims_true.toml | head -1", (0,), ),
    Probe("pipe catalogue | true", "infoflow catalogue | true", (0,), ),
    Probe("pipe sweep | true", "infoflow sweep min_pairwise_dot --layers 1..3 --heads 1..3 --no-cache --workers 1 "
          "| true", (0,), ),
    Probe("pipe prove | true", "infoflow prove depth_separation | true", (0, 3), seconds=60),
    Probe("pipe python -m proofs | true", "python -m proofs depth_separation | true", (0, 3), seconds=60),
    Probe("pipe compile | true", f"infoflow {_CMP} | true", (0,), seconds=60),
    Probe("pipe python -m experiments compile | true", f"python -m experiments {_CMP} | true", (0,), seconds=60),
    Probe("pipe decide > /dev/full", f"infoflow {_D} > /dev/full", (2,), quick=True),
    Probe("pipe catalogue >&-", "infoflow catalogue >&-", (2,), quick=True),
    # Ctrl-C and SIGTERM: one line, 130 or 143, within a second and a half
    Probe("signal minimize SIGINT", f"infoflow {_LONG}", (130,), signal=(_INT, 3)),
    Probe("signal minimize SIGTERM", f"infoflow {_LONG}", (143,), signal=(_TERM, 3)),
    Probe("signal sweep SIGINT", "infoflow sweep intrinsic_dimension:D=16 linear_max_sum:D=16 --layers 1..17 "
          "--heads 1..16 --no-infer --workers 2 --cache {d}/cache.jsonl", (130,), signal=(_INT, 4)),
    Probe("signal prove SIGINT", "infoflow prove --all", (130,), signal=(_INT, 3)),
    Probe("signal check SIGTERM", "infoflow check {d}/claims_slow.toml", (143,), signal=(_TERM, 2)),
    Probe("signal compile SIGINT", "infoflow compile intrinsic_dimension:D=2 --heads 2,2 --embed-dim 16 --input-dim 4 "
          "--seq-len 8,32,128,512,1024 --samples 256", (130,), signal=(_INT, 6)),
    # short deadlines: wall time within the deadline + 2 s, the unfinished unknown (exit 3), never a false answer
    Probe("deadline decide 32 subset selections 0.5 s", f"infoflow decide {_S32} --heads 2,2 --positional "
          "--timeout 0.5", (0, 1, 3), seconds=2.5),
    Probe("deadline explain 0.5 s", f"infoflow explain {_S32} --heads 2,2 --positional --timeout 0.5", (0, 1, 3),
          seconds=2.5),
    Probe("deadline minimize 0.5 s", "infoflow minimize intrinsic_dimension:D=16 --max-layers 8 --max-heads 8 "
          "--timeout 0.5", (0, 1, 3), seconds=2.5),
    Probe("deadline frontier 32 subset selections 0.5 s", f"infoflow frontier {_S32} --timeout 0.5", (0, 1, 3),
          seconds=2.5),
    Probe("deadline frontier 32 subset selections 1 s", f"infoflow frontier {_S32} --timeout 1", (0, 1, 3),
          seconds=3),
    Probe("deadline frontier intrinsic_dimension:D=16 4 s", "infoflow frontier intrinsic_dimension:D=16 --timeout 4",
          (0, 1, 3), seconds=6),
    Probe("deadline frontier intrinsic_dimension:D=40 4 s", "infoflow frontier intrinsic_dimension:D=40 --timeout 4",
          (0, 1, 3), seconds=6),
    Probe("deadline sweep 2 workers 1 s", f"infoflow sweep {_S32} intrinsic_dimension:D=16 --layers 1..8 --heads 1..8 "
          "--workers 2 --timeout 1 --no-cache", (0, 3), seconds=3),
    Probe("deadline sweep 1 worker 1 s", "infoflow sweep intrinsic_dimension:D=16 --layers 1..8 --heads 1..8 "
          "--workers 1 --timeout 1 --no-cache", (0, 3), seconds=3),
    # a deadline per cell: two hard cells of 0.5 s each, then an easy target (the walk asks 3 questions of each)
    Probe("deadline sweep --cell-timeout 0.5", f"infoflow sweep {_S32} max_retrieval --layers 1..2 --heads 1..2 "
          "--positional --workers 1 --cell-timeout 0.5 --no-cache", (0, 3), seconds=6),
    Probe("deadline prove --all 0.5 s", "infoflow prove --all --timeout 0.5", (0, 3), seconds=2.5),
    Probe("deadline python -m proofs --all 1 s", "python -m proofs --all --timeout 1", (0, 3), seconds=3),
    Probe("deadline export-smtlib 0.05 s", f"infoflow export-smtlib {_S8} --heads 2,2,2,2,2,2 --positional "
          "--output {d}/q.smt2 --timeout 0.05", (3,), seconds=2.05),
    Probe("deadline compile 32 subset selections 1 s", f"infoflow compile {_S32} --heads 8,8 --positional "
          "--timeout 1 --json", (3,), seconds=3),
    # an unknown is never a pass: the false claim cut short (3 of 20 runs held), five times
    *(Probe(f"unknown check the cut D=8 frontier, run {i}", "infoflow check {d}/claims_cut.toml", (1, 3),
            seconds=20) for i in range(1, 6)),
    # exports and the terminal: a target's comments and a claim's name as the characters they are
    Probe("escape sweep latex", f"infoflow sweep {_NAMED} --layers 1 --heads 1 --no-cache --format latex", (0,),
          lacks=("\x1b", "\n\\immediate", "\n# \\immediate"), quick=True),
    Probe("escape sweep text", f"infoflow sweep {_NAMED} --layers 1 --heads 1 --no-cache", (0,), lacks=("\x1b",),
          ),
    Probe("escape sweep csv", f"infoflow sweep {_NAMED} --layers 1 --heads 1 --no-cache --format csv", (0,),
          lacks=("\x1b",), ),
    Probe("escape sweep markdown", f"infoflow sweep {_NAMED} --layers 1 --heads 1 --no-cache --format markdown",
          (0,), lacks=("\x1b",), ),
    Probe("escape sweep plot", f"infoflow sweep {_NAMED} --layers 1 --heads 1 --no-cache --plot {{d}}/p.png", (0,),
          ),
    Probe("escape check names and junit", "infoflow check {d}/claims_hostile.toml --junit-xml {d}/out.xml", (1,),
          lacks=("\x1b", "\x00", "\u202e"), xml="out.xml", quick=True),
]
