"""Scratch: candidates for the sequential pass-rate rule, measured by exact DP."""
from __future__ import annotations

import math
import sys

import numpy as np
from scipy import special, stats

ALPHA = 0.05
HALF = ALPHA / 2


# ---------- boundaries: for each n = 1..N, c[n] = smallest k deciding PASS (n+1 if none) ----

def boundary_from_evalue(log_e, N, m):
    """log_e(n, k_array, m) -> log e-value; PASS when >= log(2/alpha)."""
    c = np.empty(N + 1, dtype=np.int64)
    c[0] = 1
    thr = math.log(1 / HALF)
    for n in range(1, N + 1):
        k = np.arange(n + 1)
        ok = log_e(n, k, m) >= thr - 1e-12
        idx = np.nonzero(ok)[0]
        c[n] = idx[0] if idx.size else n + 1
    return c


def fail_boundary(pass_boundary_fn, N, m):
    """FAIL boundary by mirroring: FAIL at (n,k) iff PASS at (n, n-k) for 1-m."""
    c = pass_boundary_fn(N, 1 - m)
    return np.array([n - c[n] for n in range(N + 1)])  # FAIL when k <= f[n]


def dp(c, f, N, p):
    """Exact: P(PASS), P(FAIL), E[trials], P(PASS by n) per n, P(stop at n)."""
    v = np.zeros(N + 2)
    v[0] = 1.0
    ppass = pfail = 0.0
    et = 0.0
    stop = np.zeros(N + 1)
    for n in range(1, N + 1):
        w = np.zeros(N + 2)
        w[: n + 1] = v[: n + 1] * (1 - p)
        w[1 : n + 1] += v[:n] * p
        v = w
        if c[n] <= n:
            s = v[c[n] : n + 1].sum()
            ppass += s
            v[c[n] : n + 1] = 0
        else:
            s = 0.0
        if f is not None and f[n] >= 0:
            t = v[: f[n] + 1].sum()
            pfail += t
            v[: f[n] + 1] = 0
        else:
            t = 0.0
        stop[n] = s + t
        et += n * (s + t)
    et += N * v.sum()
    return ppass, pfail, et, stop


def pass_only_error(c, N, p):
    return dp(c, None, N, p)[0]


# ---------- e-value candidates (lower side, null p = m) ----------

def ll(n, k, q, m):
    """log LR of q against m for k passes of n."""
    out = np.zeros_like(k, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(k > 0, k * np.log(q / m), 0.0) if q > 0 else np.where(k > 0, -np.inf, 0.0)
        b = np.where(n - k > 0, (n - k) * np.log((1 - q) / (1 - m)), 0.0) if q < 1 else np.where(n - k > 0, -np.inf, 0.0)
    out = a + b
    return out


def discrete_mixture(gaps, weights=None):
    """Alternatives q = m + s(1-m), s in gaps."""
    gaps = list(gaps)
    w = np.ones(len(gaps)) / len(gaps) if weights is None else np.asarray(weights) / np.sum(weights)

    def log_e(n, k, m):
        terms = np.array([ll(n, k, m + s * (1 - m), m) + math.log(wi) for s, wi in zip(gaps, w)])
        return special.logsumexp(terms, axis=0)
    return log_e


def uniform_full(n, k, m):
    """Beta(1,1) on [0,1]: B(k+1,n-k+1)/(m^k(1-m)^(n-k))."""
    return special.betaln(k + 1, n - k + 1) - k * math.log(m) - (n - k) * math.log(1 - m)


def beta_gap(a, b=1.0):
    """s ~ Beta(a,b) on gap fraction; numeric integration (Gauss-Legendre in s)."""
    xs, ws = np.polynomial.legendre.leggauss(200)
    s = (xs + 1) / 2
    wts = ws / 2 * stats.beta.pdf(s, a, b)

    def log_e(n, k, m):
        q = m + s * (1 - m)
        terms = (k[None, :] * np.log(q / m)[:, None]
                 + (n - k)[None, :] * np.log(1 - s)[:, None] + np.log(wts)[:, None])
        return special.logsumexp(terms, axis=0)
    return log_e


def trunc_uniform(n, k, m):
    """uniform prior on [m,1] in q, closed form: ∫_m^1 q^k(1-q)^(n-k) dq/(1-m) / (m^k(1-m)^(n-k))."""
    lb = special.betaln(k + 1, n - k + 1) + np.log(special.betainc(n - k + 1, k + 1, 1 - m))
    return lb - math.log(1 - m) - k * math.log(m) - (n - k) * math.log(1 - m)


# ---------- group-sequential by exact recursion ----------

def spending_boundary(N, m, spent):
    """Looks at n where spent[n] defined; c[n] smallest k with cumulative error <= spent[n]."""
    c = np.full(N + 1, 10**9, dtype=np.int64)
    for n in range(N + 1):
        c[n] = n + 1
    v = np.zeros(N + 2)
    v[0] = 1.0
    cum = 0.0
    for n in range(1, N + 1):
        w = np.zeros(N + 2)
        w[: n + 1] = v[: n + 1] * (1 - m)
        w[1 : n + 1] += v[:n] * m
        v = w
        if n in spent:
            budget = spent[n] - cum
            tail = np.cumsum(v[: n + 1][::-1])[::-1]  # tail[k] = P(S>=k, alive)
            ok = np.nonzero(tail <= budget * (1 + 1e-12))[0]
            ck = ok[0] if ok.size else n + 1
            c[n] = ck
            if ck <= n:
                cum += v[ck : n + 1].sum()
                v[ck : n + 1] = 0
    return c


def fixed_n_boundary(N, m):
    c = np.array([n + 1 for n in range(N + 1)])
    k = np.arange(N + 1)
    ok = np.nonzero(special.bdtrc(k - 1, N, m) <= HALF)[0]
    c[N] = ok[0] if ok.size else N + 1
    return c


def naive_cp_every_look(N, m):
    c = np.empty(N + 1, dtype=np.int64)
    for n in range(N + 1):
        k = np.arange(n + 1)
        ok = np.nonzero(special.bdtrc(k - 1, n, m) <= HALF)[0]
        c[n] = ok[0] if ok.size else n + 1
    return c


def make_spending(kind):
    def build(N, m):
        if kind.startswith("looks"):
            looks = [int(x) for x in kind.split(":")[1].split(",")]
            looks = [l for l in looks if l < N] + [N]
            K = len(looks)
            spent = {l: HALF * (i + 1) / K for i, l in enumerate(looks)}
        elif kind.startswith("power"):
            rho = float(kind.split(":")[1])
            spent = {n: HALF * (n / N) ** rho for n in range(1, N + 1)}
        elif kind.startswith("abs"):
            # spend alpha over absolute n: HALF * (1 - (n0/(n0+n))^r); rest at the cap
            n0, r = (float(x) for x in kind.split(":")[1].split(","))
            spent = {n: HALF * (1 - (n0 / (n0 + n)) ** r) for n in range(1, N)}
            spent[N] = HALF
        return spending_boundary(N, m, spent)
    return build


def all_pass_trials(c, N):
    for n in range(1, N + 1):
        if c[n] <= n:
            return n
    return None


def evaluate(name, build, N=50, m=0.8, rates=(0.8, 0.9, 0.95, 1.0, 0.7, 0.6)):
    c = build(N, m)
    f_c = build(N, 1 - m)
    f = np.array([n - f_c[n] for n in range(N + 1)])
    row = {"name": name}
    row["alpha_pass"] = pass_only_error(c, N, m)
    # fail side at m
    row["alpha_fail"] = pass_only_error(f_c, N, 1 - m)
    row["all_pass"] = all_pass_trials(c, N)
    for p in rates:
        pp, pf, et, _ = dp(c, f, N, p)
        row[p] = (pp, pf, et)
    return row


def lr_builder(log_e):
    return lambda N, m: boundary_from_evalue(log_e, N, m)


CANDIDATES = {
    "fixed-n exact at cap": fixed_n_boundary,
    "CP at every look (naive)": naive_cp_every_look,
    "uniform mixture [0,1]": lr_builder(uniform_full),
    "uniform mixture [min,1]": lr_builder(trunc_uniform),
    "Beta(2,1) gap mixture": lr_builder(beta_gap(2)),
    "Beta(4,1) gap mixture": lr_builder(beta_gap(4)),
    "LR q=1 only": lr_builder(discrete_mixture([1.0])),
    "mix gaps .25/.5/.75/1": lr_builder(discrete_mixture([0.25, 0.5, 0.75, 1.0])),
    "mix gaps .5/.75/.9/1": lr_builder(discrete_mixture([0.5, 0.75, 0.9, 1.0])),
    "mix gaps .5/1": lr_builder(discrete_mixture([0.5, 1.0])),
    "mix gaps .5/.75/1": lr_builder(discrete_mixture([0.5, 0.75, 1.0])),
    "looks 10,20,30,40,50 (equal α)": make_spending("looks:10,20,30,40,50"),
    "looks 20,30,40,50 (equal α)": make_spending("looks:20,30,40,50"),
    "every trial, spend (n/N)^1": make_spending("power:1"),
    "every trial, spend (n/N)^2": make_spending("power:2"),
    "every trial, abs spend n0=20,r=1": make_spending("abs:20,1"),
    "every trial, abs spend n0=50,r=1": make_spending("abs:50,1"),
}

def one_sided_full(n, k, m):
    e = uniform_full(n, k, m)
    return np.where(k > m * n, e, -np.inf)


CANDIDATES["uniform mixture [0,1]"] = lr_builder(one_sided_full)


if __name__ == "__main__":
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    m = float(sys.argv[2]) if len(sys.argv) > 2 else 0.8
    rates = (0.8, 0.9, 0.95, 1.0, 0.6)
    print(f"N={N} min={m}")
    hdr = f"{'candidate':36} {'αPASS':>8} {'αFAIL':>8} {'allpass':>7} " + " ".join(
        f"{'E[T]@'+str(p):>8} {'P@'+str(p):>7}" for p in rates)
    print(hdr)
    for name, b in CANDIDATES.items():
        r = evaluate(name, b, N, m, rates)
        cells = []
        for p in rates:
            pp, pf, et = r[p]
            dec = pp if p > m else pf if p < m else pp
            cells.append(f"{et:8.1f} {dec:7.3f}")
        print(f"{name:36} {r['alpha_pass']:8.5f} {r['alpha_fail']:8.5f} {str(r['all_pass']):>7} " + " ".join(cells))

