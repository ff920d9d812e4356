import sys
sys.path.insert(0, "scratch")
from spend import *
fams2 = {"rel1": spend_rel(1), "abs30": spend_abs(30), "abs50": spend_abs(50), "abs75": spend_abs(75)}
for m, rates in [(0.5, (0.6, 0.7)), (0.8, (0.9, 0.95)), (0.95, (0.97, 0.99)), (0.99, (0.995, 0.999))]:
    for N in [50, 200, 1000]:
        fx = evaluate("fixed", fixed_n_boundary, N, m, rates)
        print(f"N={N} m={m} fixed-n: α={fx['alpha_pass']:.4f} allpass={fx['all_pass']} " + " ".join(f"P{p}={fx[p][0]:.3f}" for p in rates))
        for name, fn in fams2.items():
            r = evaluate(name, build_from(fn), N, m, rates)
            print(f"   {name:8} α={r['alpha_pass']:.4f}/{r['alpha_fail']:.4f} allpass={r['all_pass']} " + " ".join(
                f"P{p}={r[p][0]:.3f} E{p}={r[p][2]:6.1f}" for p in rates) + f" E(m-.1)")
