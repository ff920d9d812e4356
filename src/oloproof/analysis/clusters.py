"""Cases counted per cluster, for a run without trials (docs/concepts.md#clusters).

Cases of one cluster are not independent: a criterion's interval is then taken over clusters,
each cluster one draw of its cases (its passing cases and its size; the rate stays the rate of
the cases, `oloproof.stats.cluster_ratio`). `ClusterCounts` keeps, per cluster and
criterion, the passed, observed and missing cases; a case outside any named cluster is a
cluster of its own named by its id (kept only when the suite names clusters at all). With
trials the same rule is applied over the folded cases (`analysis/trial_rows.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is imported when the shares are taken, not before a run's first case
    import numpy as np
    import numpy.typing as npt

    from oloproof.analysis.outcome import CaseOutcome

    FloatArray = npt.NDArray[np.float64]


class ClusterCounts:
    """Per cluster, per criterion: [passed, observed, missing] (`criteria`: how many)."""

    def __init__(self, criteria: int) -> None:
        self.criteria = criteria
        # Per cluster, per criterion: [passed, observed, missing] (cases with a cluster only).
        self.clusters: dict[str, list[list[int]]] = {}
        # Cases outside any named cluster, by id (only when the plan says some have one).
        self.singles: dict[str, str] = {}
        self.cases = 0
        self._table: tuple[tuple[int, int, int], npt.NDArray[np.int64]] | None = None

    def add(self, outcome: CaseOutcome) -> None:
        """Count a case in its cluster, or by its id if it names none."""
        self.cases += 1
        if outcome.cluster is None:
            self.singles[outcome.case_id] = outcome.codes
            return
        counts = self.clusters.get(outcome.cluster)
        if counts is None:
            counts = [[0, 0, 0] for _ in range(self.criteria)]
            self.clusters[outcome.cluster] = counts
        for i, code in enumerate(outcome.codes):
            if code == "P":
                counts[i][0] += 1
                counts[i][1] += 1
            elif code == "F":
                counts[i][1] += 1
            elif code == "M":
                counts[i][2] += 1

    def clustered(self, i: int) -> bool:
        """Whether some named cluster counts two cases or more for criterion ``i`` (then its
        interval is over clusters)."""
        return any(c[i][1] + c[i][2] > 1 for c in self.clusters.values())

    def sums(self, i: int, support: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Each cluster's fewest and most passing cases for criterion ``i`` (missing cases
        failed, then passed) and its cases counted (observed or missing), clusters in the order
        of their ids; `support`: the criterion's observed and missing cases in the run.

        The interval depends only on the sums and sizes, not on their order; the order is
        fixed anyway (by id, never by the order cases finished in).
        """
        import numpy as np
        cells = self.table()[:, i, :]
        size = cells[:, 1] + cells[:, 2]
        counted = cells[size > 0].astype(np.float64)
        sizes = size[size > 0].astype(np.float64)
        left = support - int(sizes.sum())
        if left > 0:
            # Only when the plan said no case names a cluster and one did: their ids are
            # unknown, and any order made up from their counts would be chosen by outcome.
            raise RuntimeError(
                f"{left} cases outside any named cluster were not kept by id; "
                "re-run the suite to decide this clustered metric"
            )
        return counted[:, 0], counted[:, 0] + counted[:, 2], sizes

    def table(self) -> npt.NDArray[np.int64]:
        """[passed, observed, missing] per cluster (rows, in id order) and criterion,
        cases outside a named cluster counted as clusters of one named by their id; built once
        per state of the counts."""
        import numpy as np
        key = (self.cases, len(self.clusters), len(self.singles))
        if self._table is not None and self._table[0] == key:
            return self._table[1]
        order = sorted(self.clusters.keys() | self.singles.keys())
        position = {cid: row for row, cid in enumerate(order)}
        table = np.zeros((len(order), self.criteria, 3), dtype=np.int64)
        if self.clusters:
            rows = np.fromiter((position[cid] for cid in self.clusters), dtype=np.int64,
                               count=len(self.clusters))
            table[rows] = np.asarray(list(self.clusters.values()), dtype=np.int64)
        if self.singles:
            rows = np.fromiter((position[cid] for cid in self.singles), dtype=np.int64,
                               count=len(self.singles))
            codes = np.frombuffer("".join(self.singles.values()).encode("ascii"), dtype="S1")
            codes = codes.reshape(len(self.singles), self.criteria)
            # A case id that is also a named cluster's id joins that cluster, as a source
            # case joins its own when the loader names clusters after source ids. (Case ids
            # are unique, so each row is added to once.)
            table[rows, :, 0] += codes == b"P"
            table[rows, :, 1] += (codes == b"P") | (codes == b"F")
            table[rows, :, 2] += codes == b"M"
        self._table = (key, table)
        return table
