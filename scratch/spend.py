import sys, math
import numpy as np
sys.path.insert(0, "scratch")
from research import *

def spend_rel(rho):
    return lambda n, N: (n / N) ** rho
def spend_abs(n0, r=1.0):
    return lambda n, N: 1.0 if n >= N else 1 - (n0 / (n0 + n)) ** r
def spend_mix(rho, beta, n0):
    # beta of the budget on an absolute clock, the rest on the cap's clock
    return lambda n, N: 1.0 if n >= N else beta * (1 - n0 / (n0 + n)) + (1 - beta) * (n / N) ** rho

def build_from(fn):
    def b(N, m):
        return spending_boundary(N, m, {n: HALF * fn(n, N) for n in range(1, N + 1)})
    return b

fams = {
  "rel1": spend_rel(1), "rel2": spend_rel(2), "rel3": spend_rel(3),
  "abs20": spend_abs(20), "abs50": spend_abs(50), "abs100": spend_abs(100),
  "mix rho2 b.2 n0=20": spend_mix(2, 0.2, 20),
  "mix rho2 b.1 n0=10": spend_mix(2, 0.1, 10),
  "mix rho1 b.2 n0=20": spend_mix(1, 0.2, 20),
  "mix rho3 b.2 n0=20": spend_mix(3, 0.2, 20),
}
if __name__ == "__main__":
    m = float(sys.argv[1]) if len(sys.argv) > 1 else 0.8
    caps = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [30, 50, 100, 200]
    for N in caps:
        fx = evaluate("fixed", fixed_n_boundary, N, m, (0.9, 0.95))
        print(f"N={N} m={m} fixed-n: α={fx['alpha_pass']:.4f} power .9={fx[0.9][0]:.3f} .95={fx[0.95][0]:.3f}")
        for name, fn in fams.items():
            r = evaluate(name, build_from(fn), N, m, (0.9, 0.95))
            print(f"   {name:22} α={r['alpha_pass']:.4f}/{r['alpha_fail']:.4f} allpass={r['all_pass']} "
                  f"P.9={r[0.9][0]:.3f} E.9={r[0.9][2]:6.1f} P.95={r[0.95][0]:.3f} E.95={r[0.95][2]:6.1f}")
