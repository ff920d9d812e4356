import sys
sys.path.insert(0, "scratch")
from spend3 import *
def mk(beta, I0, rho, reserve):
    def f(m):
        def g(n, N):
            if n >= N: return 1.0
            v = n*m*(1-m)
            return (1 - reserve) * (beta * v / (I0 + v) + (1 - beta) * (n / N) ** rho)
        return g
    return f
fams = {}
for beta in (0.2, 0.3):
    for rho in (1, 1.5, 2):
        for reserve in (0, 0.2, 0.4):
            fams[f"b{beta} rho{rho} res{reserve}"] = mk(beta, 2, rho, reserve)
ms = [0.5, 0.8, 0.9, 0.95]
Ns = [20, 30, 50, 100, 200]
summ = collections.defaultdict(list)
head = {}
for m in ms:
    for N in Ns:
        rates = (m + (1-m)/2, m + 3*(1-m)/4, m/2)
        fx = evaluate("fixed", fixed_n_boundary, N, m, rates)
        for name, f in fams.items():
            r = evaluate(name, build_from(f(m)), N, m, rates)
            if (m, N) == (0.8, 50): head[name] = r
            for i, p in enumerate(rates):
                pf = fx[p][0] if i < 2 else fx[p][1]
                pr = r[p][0] if i < 2 else r[p][1]
                if pf > 0.05:
                    summ[name, "deficit"].append(pf - pr); summ[name, "ET/N"].append(r[p][2] / N)
for name, f in fams.items():
    ap = [all_pass_trials(build_from(f(0.8))(N, 0.8), N) for N in (50, 1000)]
    h = head[name]
    print(f"{name:22} deficit={statistics.mean(summ[name,'deficit']):+.4f} ET/N={statistics.mean(summ[name,'ET/N']):.4f} "
          f"head α={h['alpha_pass']:.4f} P.9={h[0.9][0]:.3f} P.95={h[0.95][0]:.3f} E.9={h[0.9][2]:.1f} E.95={h[0.95][2]:.1f} E1={h[1.0][2] if 1.0 in h else ''} allpass={ap}")
