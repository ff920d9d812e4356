import sys
sys.path.insert(0, "scratch")
from spend3 import *
fams = {"rel1": mrel(1)}
for b in (0.1, 0.2, 0.3, 0.5):
    for I0 in (2, 4, 8):
        fams[f"hyb{b},I{I0}"] = mhyb(b, I0)
ms = [0.5, 0.7, 0.8, 0.9, 0.95, 0.99]
Ns = [20, 30, 50, 100, 200, 500]
summ = collections.defaultdict(list)
for m in ms:
    for N in Ns:
        rates = (m + (1-m)/2, m + 3*(1-m)/4, m/2, m/4)
        fx = evaluate("fixed", fixed_n_boundary, N, m, rates)
        for name, mk in fams.items():
            r = evaluate(name, build_from(mk(m)), N, m, rates)
            for i, p in enumerate(rates):
                pf = fx[p][0] if i < 2 else fx[p][1]
                pr = r[p][0] if i < 2 else r[p][1]
                if pf > 0.05:
                    summ[name, "deficit"].append(pf - pr)
                    summ[name, "ET/N"].append(r[p][2] / N)
for name in fams:
    big = [build_from(fams[name](0.8)) ]
    ap = [all_pass_trials(build_from(fams[name](0.8))(N, 0.8), N) for N in (50, 1000, 3000)]
    d = summ[name, "deficit"]; e = summ[name, "ET/N"]
    print(f"{name:14} deficit mean={statistics.mean(d):+.4f} max={max(d):+.3f} E[T]/N={statistics.mean(e):.4f} allpass@.8 N=50,1000,3000: {ap}")
