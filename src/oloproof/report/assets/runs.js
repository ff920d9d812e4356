/* `oloproof view`: the runs of a project, newest first (the page's embedded list, kept current
 * from the view's JSON API). Pick two runs to compare them; a run's id opens its report.
 *
 * Every value is drawn as text (dom.js); nothing is fetched but the view's own `/api/runs`.
 */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("oloproof-data").textContent);
  var META = DATA.meta;
  var DOM = oloproofDom(META.unsafe);
  var h = DOM.h, add = DOM.add, clear = DOM.clear, fmtInt = DOM.fmtInt, pill = DOM.pill;

  var runs = DATA.runs || [];
  var picked = [];          // run ids, in the order they were picked (at most two)
  var els = {};
  var PAGE = 100;           // runs drawn at a time: a store of many runs opens at once
  var page = 0;

  function when(t) {
    return typeof t === "number" ? new Date(t * 1000).toISOString().replace("T", " ")
      .slice(0, 19) + " UTC" : "—";
  }

  function gateCell(r) {
    if (r.gate) return pill(r.gate_words, r.gate.action);
    return pill(r.gate_words, r.status === "running" ? "running" : "missing");
  }

  /* The text a filter is matched against: everything the row shows. */
  function rowText(r) {
    return [r.run_id, r.status, r.kind_words || "", r.gate_words, r.system, r.version,
      r.variant || "",
      (r.tags || []).join(" "), when(r.started)].join(" ").toLowerCase();
  }

  function number(v) { return typeof v === "number" ? fmtInt(v) : "—"; }

  function runRow(r) {
    var box = h("input", { type: "checkbox", "data-pick": r.run_id,
      "aria-label": "pick " + r.run_id + " to compare" });
    box.checked = picked.indexOf(r.run_id) >= 0;
    box.addEventListener("change", function () {
      var at = picked.indexOf(r.run_id);
      if (box.checked && at < 0) picked.push(r.run_id);
      if (!box.checked && at >= 0) picked.splice(at, 1);
      if (picked.length > 2) picked.shift();
      drawRows();
    });
    return h("tr", { "data-run": r.run_id, "data-status": r.status,
      class: r.failing || r.errored ? "row-failed" : null },
      h("td", null, box),
      h("td", { class: "mono" }, h("a", { href: "/runs/" + encodeURIComponent(r.run_id) },
        r.run_id)),
      h("td", { class: "nowrap" }, when(r.started)),
      h("td", null, r.status, r.kind_words ? [" ", pill(r.kind_words, "tag")] : null),
      h("td", { class: "gate-cell" }, gateCell(r)),
      h("td", null, r.system), h("td", { class: "mono" }, r.version,
        r.variant ? [" ", pill(r.variant, "tag")] : null),
      h("td", null, (r.tags || []).map(function (t) { return pill(t, "tag"); })),
      h("td", { class: "num" }, number(r.trials)),
      h("td", { class: "num" }, number(r.cases)),
      h("td", { class: "num" + (r.failing ? " bad" : "") }, number(r.failing)),
      h("td", { class: "num" + (r.errored ? " bad" : "") }, number(r.errored)));
  }

  /* Two picked runs: the one started first is the baseline. */
  function comparePair() {
    if (picked.length !== 2) return null;
    var order = runs.map(function (r) { return r.run_id; });
    var a = picked[0], b = picked[1];
    if (order.indexOf(a) < 0 || order.indexOf(b) < 0) return null;
    // The list is newest first: the later position is the older run, the baseline.
    return order.indexOf(a) > order.indexOf(b) ? [a, b] : [b, a];
  }

  function drawRows() {
    picked = picked.filter(function (id) {
      return runs.some(function (r) { return r.run_id === id; });
    });
    var q = els.filter.value.trim().toLowerCase();
    var shown = runs.filter(function (r) { return !q || rowText(r).indexOf(q) >= 0; });
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    if (page >= pages) page = pages - 1;
    var body = clear(els.tbody);
    var frag = document.createDocumentFragment();
    shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (r) {
      frag.appendChild(runRow(r));
    });
    body.appendChild(frag);
    if (!shown.length) {
      body.appendChild(h("tr", null, h("td", { colspan: 12, class: "note" }, runs.length ?
        "No run matches this filter." : "No runs yet: `oloproof run` makes the first one.")));
    }
    els.count.textContent = (shown.length > PAGE ? "showing " + fmtInt(page * PAGE + 1) + "–" +
      fmtInt(Math.min(shown.length, (page + 1) * PAGE)) + " of " : "") + fmtInt(shown.length) +
      " matching of " + fmtInt(runs.length) + " runs";
    els.pageText.textContent = "page " + (page + 1) + " of " + pages;
    els.prev.disabled = page === 0;
    els.next.disabled = page >= pages - 1;
    els.pager.hidden = pages === 1;
    var pair = comparePair();
    els.compare.disabled = !pair;
    els.pairNote.textContent = pair ? "baseline " + pair[0] + " · candidate " + pair[1] :
      "Pick two runs to compare them (the older is the baseline).";
    document.getElementById("app").setAttribute("data-listed", String(shown.length));
  }

  function poll() {
    var running = runs.some(function (r) { return r.status === "running"; });
    setTimeout(function () {
      fetch(META.served + "runs", { cache: "no-store", credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error("the view answered " + r.status); return r.json(); })
        .then(function (list) { runs = list; els.error.textContent = ""; drawRows(); },
          function (err) { els.error.textContent = "The view did not answer (" +
            String(err.message || err) + "); trying again."; })
        .then(poll);
    }, running ? 1000 : 2000);
  }

  function start() {
    var app = document.getElementById("app");
    clear(app);
    els.filter = h("input", { type: "search", id: "run-filter", autocomplete: "off",
      spellcheck: "false", placeholder: "Filter: id, system, version, tag, gate, status",
      "aria-label": "filter runs" });
    els.filter.addEventListener("input", function () { page = 0; drawRows(); });
    els.prev = h("button", { type: "button", id: "runs-prev" }, "‹ newer");
    els.next = h("button", { type: "button", id: "runs-next" }, "older ›");
    els.pageText = h("span");
    els.prev.addEventListener("click", function () { page--; drawRows(); });
    els.next.addEventListener("click", function () { page++; drawRows(); });
    els.pager = h("div", { class: "pager" }, els.prev, els.pageText, els.next);
    els.compare = h("button", { type: "button", id: "compare-picked", disabled: true },
      "Compare the two picked runs");
    els.compare.addEventListener("click", function () {
      var pair = comparePair();
      if (!pair) return;
      location.href = "/compare?baseline=" + encodeURIComponent(pair[0]) + "&candidate=" +
        encodeURIComponent(pair[1]);
    });
    els.pairNote = h("span", { class: "note", id: "pair-note" });
    els.count = h("div", { class: "count-line", id: "run-count" });
    els.error = h("p", { class: "warning-text", id: "runs-error", "aria-live": "polite" });
    els.tbody = h("tbody", { id: "run-rows" });
    add(app, h("header", { class: "top" }, h("div", { class: "wrap" },
      h("div", { class: "brand" }, "Oloproof view"),
      h("h1", null, (DATA.project ? DATA.project + " · " : "") + "runs (newest first)"),
      h("div", { class: "meta-line" }, h("span", null, "read-only: the store is read, never " +
        "written"), h("span", null, "read " + when(META.generated_at))))),
      h("main", { class: "wrap" },
        h("div", { class: "controls" }, els.filter, els.compare, els.pairNote),
        els.count, els.pager, els.error,
        h("div", { class: "table-scroll" }, h("table", { id: "runs" },
          h("thead", null, h("tr", null, ["", "Run", "Started", "Status", "Gate", "System",
            "Version", "Tags", "Trials", "Cases", "Failing", "Errored"].map(function (c) {
            return h("th", null, c);
          }))), els.tbody)),
        h("p", { class: "note" }, "Failing: cases that failed or missed a criterion, or " +
          "errored. Errored: cases whose call failed. Cases: what a finished run decided on; " +
          "for a run in progress, what it plans.")));
    drawRows();
    poll();
    app.removeAttribute("aria-busy");
    app.setAttribute("data-ready", "1");
    window.__oloproofReady = performance.now();
  }

  start();
})();
