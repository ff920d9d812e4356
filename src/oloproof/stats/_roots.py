"""A bracketed root search for monotone functions, vectorised over rows (private)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["increasing_root"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def increasing_root(
    g: Callable[[FloatArray, BoolArray], FloatArray],
    a: FloatArray,
    b: FloatArray,
    ga: FloatArray,
    gb: FloatArray,
    tolerance: float,
    guesses: Sequence[FloatArray] = (),
) -> tuple[FloatArray, FloatArray]:
    """Shrink brackets ``[a, b]`` (one per row) around the root of a nondecreasing ``g`` until
    each is at most ``tolerance`` wide; returns the final ``(a, b)``: ``g(a) ≤ 0 < g(b)``.

    ``g(x, rows)`` evaluates the rows selected by the boolean mask ``rows`` at their points
    ``x`` (one per selected row). ``guesses`` (one point per row each) are tried first, each
    shrinking the brackets it falls inside: where the caller knows about where the root is.
    Method: regula falsi with the Anderson–Björck correction
    (Anderson & Björck, 1973, BIT 13: the end kept twice has its value scaled down, so both
    ends converge, superlinearly), safeguarded by bisection whenever two steps have not halved
    the bracket, which bounds the work by about twice that of bisection. The caller keeps the
    end on the side it must not cross (a bound reported outward).
    """
    a, b, ga, gb = a.copy(), b.copy(), ga.copy(), gb.copy()
    everyone = np.ones(a.shape, dtype=bool)
    for guess in guesses:
        inside = (guess > a) & (guess < b)
        if not inside.any():
            continue
        gg = g(np.where(inside, guess, a), everyone)
        up = inside & (gg > 0.0)
        down = inside & ~(gg > 0.0)
        b, gb = np.where(up, guess, b), np.where(up, gg, gb)
        a, ga = np.where(down, guess, a), np.where(down, gg, ga)
    # Only the rows still searching take part in a step: a row whose bracket is narrow enough
    # is written back and dropped, so a step costs the same few array operations however the
    # rows stand. The rows are independent: each takes exactly the steps it would alone.
    rows = np.flatnonzero(b - a > tolerance)
    live = np.zeros(a.shape, dtype=bool)
    live[rows] = True
    ra, rb, rga, rgb = a[rows], b[rows], ga[rows], gb[rows]
    before = [rb - ra, rb - ra]
    # Whether the last step replaced b (a stayed) or a (b stayed); neither before the first.
    a_stayed = b_stayed = np.zeros(rows.shape, dtype=bool)
    for _ in range(300):  # bisection alone needs ~log2(width / tolerance) steps
        width = rb - ra
        going = width > tolerance
        if not going.all():
            done = rows[~going]
            a[done], b[done], live[done] = ra[~going], rb[~going], False
            rows, width, a_stayed, b_stayed = (rows[going], width[going], a_stayed[going],
                                               b_stayed[going])
            ra, rb, rga, rgb = ra[going], rb[going], rga[going], rgb[going]
            before = [before[0][going], before[1][going]]
        if not rows.size:
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            falsi = (rgb * ra - rga * rb) / (rgb - rga)
        slow = (width > 0.5 * before[0]) | ~np.isfinite(falsi)
        probe = np.where(slow, ra + 0.5 * width, falsi)
        # Keep the probe strictly inside the bracket (float rounding can put it on an end).
        margin = np.minimum(0.25 * width, 0.5 * tolerance)
        probe = np.minimum(np.maximum(probe, ra + margin), rb - margin)
        gp = g(probe, live)
        up = gp > 0.0
        down = ~up
        # Anderson–Björck: the end that stays twice has its value scaled by
        # 1 − g(probe)/g(replaced) (halved when that is not positive); after a bisection step
        # nothing is scaled. (The rows scaled on each side are disjoint.)
        fast = ~slow
        scale_a, scale_b = up & fast & a_stayed, down & fast & b_stayed
        if scale_a.any():
            rga = np.where(scale_a, rga * _stay_scale(gp, rgb), rga)
        if scale_b.any():
            rgb = np.where(scale_b, rgb * _stay_scale(gp, rga), rgb)
        rb, rgb = np.where(up, probe, rb), np.where(up, gp, rgb)
        ra, rga = np.where(down, probe, ra), np.where(down, gp, rga)
        a_stayed, b_stayed = up, down
        before = [before[1], width]
    a[rows], b[rows] = ra, rb
    return a, b


def _stay_scale(gp: FloatArray, replaced: FloatArray) -> FloatArray:
    """Anderson–Björck's factor for the end that stays: ``1 − g(probe)/g(replaced)``, or ½
    where ``g(replaced)`` is 0 or the factor is not positive."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(replaced != 0.0, 1.0 - gp / replaced, 0.5)
    out: FloatArray = np.where(scale > 0.0, scale, 0.5)
    return out
