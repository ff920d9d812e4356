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
    before = [b - a, b - a]
    kept = np.zeros(a.shape, dtype=np.int8)  # +1: b was replaced last, −1: a was
    for _ in range(300):  # bisection alone needs ~log2(width / tolerance) steps
        width = b - a
        live = width > tolerance
        if not live.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            falsi = (gb * a - ga * b) / (gb - ga)
        slow = (width > 0.5 * before[0]) | ~np.isfinite(falsi)
        probe = np.where(slow, a + 0.5 * width, falsi)
        # Keep the probe strictly inside the bracket (float rounding can put it on an end).
        margin = np.minimum(0.25 * width, 0.5 * tolerance)
        probe = np.clip(probe, a + margin, b - margin)
        gp = np.zeros(a.shape)
        gp[live] = g(probe[live], live)
        to_b = live & (gp > 0.0)
        to_a = live & ~(gp > 0.0)
        # Anderson–Björck: the end that stays has its value scaled by 1 − g(probe)/g(replaced)
        # (halved when that is not positive); after a bisection step nothing is scaled.
        with np.errstate(divide="ignore", invalid="ignore"):
            scale_a = np.where(gb != 0.0, 1.0 - gp / gb, 0.5)
            scale_b = np.where(ga != 0.0, 1.0 - gp / ga, 0.5)
        scale_a = np.where(scale_a > 0.0, scale_a, 0.5)
        scale_b = np.where(scale_b > 0.0, scale_b, 0.5)
        ga = np.where(to_b & ~slow & (kept == 1), ga * scale_a, ga)
        gb = np.where(to_a & ~slow & (kept == -1), gb * scale_b, gb)
        b, gb = np.where(to_b, probe, b), np.where(to_b, gp, gb)
        a, ga = np.where(to_a, probe, a), np.where(to_a, gp, ga)
        kept = np.where(to_b, 1, np.where(to_a, -1, kept)).astype(np.int8)
        before = [before[1], width]
    return a, b
