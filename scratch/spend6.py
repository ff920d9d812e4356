import sys
sys.path.insert(0, "scratch")
from spend5 import mk, fixed_n_boundary, evaluate, build_from, all_pass_trials, pass_only_error, collections, statistics
def best_reserve_builder(beta, rho, grid):
    def build(N, m):
        best = None
        for r in grid:
            c = build_from(mk(beta, 2, rho, r)(m))(N, m)
            e = pass_only_error(c, N, m)
            if best is None or e > best[0] + 1e-15:
                best = (e, c, r)
        return best[1]
    return build
fams = {
  "b.2 rho1 res0": build_from(mk(0.2, 2, 1, 0)(0.8)),
}
grid = [i / 20 for i in range(11)]
builders = {"best-r b.2 rho1": best_reserve_builder(0.2, 1, grid), "best-r b.2 rho1.5": best_reserve_builder(0.2, 1.5, grid),
            "fixed r0": best_reserve_builder(0.2, 1, [0.0])}
ms = [0.5, 0.8, 0.9, 0.95]
Ns = [20, 30, 50, 100, 200]
summ = collections.defaultdict(list); head = {}
for m in ms:
    for N in Ns:
        rates = (m + (1-m)/2, m + 3*(1-m)/4, m/2)
        fx = evaluate("fixed", fixed_n_boundary, N, m, rates)
        for name, b in builders.items():
            r = evaluate(name, b, N, m, rates)
            if (m, N) == (0.8, 50): head[name] = r
            for i, p in enumerate(rates):
                pf = fx[p][0] if i < 2 else fx[p][1]
                pr = r[p][0] if i < 2 else r[p][1]
                if pf > 0.05:
                    summ[name, "deficit"].append(pf - pr); summ[name, "ET/N"].append(r[p][2] / N)
for name, b in builders.items():
    h = head[name]
    ap = [all_pass_trials(b(N, 0.8), N) for N in (50, 1000)]
    print(f"{name:18} deficit={statistics.mean(summ[name,'deficit']):+.4f} max={max(summ[name,'deficit']):+.3f} ET/N={statistics.mean(summ[name,'ET/N']):.4f} "
          f"head α={h['alpha_pass']:.4f} P.9={h[0.9][0]:.3f} P.95={h[0.95][0]:.3f} E.9={h[0.9][2]:.1f} E.95={h[0.95][2]:.1f} allpass={ap}")
