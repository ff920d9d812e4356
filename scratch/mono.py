import sys
sys.path.insert(0, "scratch")
from spend3 import *
import numpy as np
def design(N, m, beta=0.2, I0=2.0):
    f = mhyb(beta, I0)(m)
    return spending_boundary(N, m, {n: HALF * f(n, N) for n in range(1, N + 1)})
for N in (10, 30, 50, 100):
    grid = np.linspace(0.002, 0.998, 2000)
    C = np.array([design(N, p) for p in grid])
    d = np.diff(C, axis=0)
    bad = np.argwhere(d < 0)
    print(N, "non-monotone steps:", len(bad), [(round(grid[i],4), n, C[i,n], C[i+1,n]) for i, n in bad[:8]])
