import sys
sys.path.insert(0, "scratch")
from spend import *

def spend_info(I0):
    return lambda m: (lambda n, N: 1.0 if n >= N else (n*m*(1-m)) / (I0 + n*m*(1-m)))
def mrel(rho):
    return lambda m: spend_rel(rho)
def mabs(n0):
    return lambda m: spend_abs(n0)
def mhyb(beta, I0, rho=1.0):
    def f(m):
        return lambda n, N: 1.0 if n >= N else beta * (n*m*(1-m)) / (I0 + n*m*(1-m)) + (1 - beta) * (n / N) ** rho
    return f

fams = {"rel1": mrel(1), "rel1.5": mrel(1.5), "abs50": mabs(50), "info8": spend_info(8), "info4": spend_info(4),
        "info16": spend_info(16), "hyb.3,I4": mhyb(0.3, 4), "hyb.5,I8": mhyb(0.5, 8), "hyb.2,I2,rho1.5": mhyb(0.2, 2, 1.5)}
ms = [0.5, 0.8, 0.9, 0.95, 0.99]
Ns = [30, 50, 100, 200, 500]
import collections
summ = collections.defaultdict(list)
fixed = {}
for m in ms:
    for N in Ns:
        rates = (m + (1-m)/2, m + 3*(1-m)/4)
        fx = evaluate("fixed", fixed_n_boundary, N, m, rates)
        fixed[m, N] = fx
        for name, mk in fams.items():
            r = evaluate(name, build_from(mk(m)), N, m, rates)
            for p in rates:
                if fx[p][0] > 0.05:
                    summ[name, "deficit"].append(fx[p][0] - r[p][0])
                    summ[name, "ET/N"].append(r[p][2] / N)
            if m == 0.8:
                summ[name, "allpass.8"].append((N, r["all_pass"]))
            assert r["alpha_pass"] <= HALF * (1 + 1e-9) and r["alpha_fail"] <= HALF * (1 + 1e-9)
import statistics
for name in fams:
    d = summ[name, "deficit"]; e = summ[name, "ET/N"]
    print(f"{name:18} power deficit mean={statistics.mean(d):+.3f} max={max(d):+.3f}  E[T]/N mean={statistics.mean(e):.3f}  allpass@.8={summ[name,'allpass.8']}")
