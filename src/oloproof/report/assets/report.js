/* Oloproof HTML report: draws the page from the JSON embedded in this file.
 *
 * Every value that came from a case or a system is untrusted. It reaches the page only as text:
 * the DOM is built with createElement/textContent/setAttribute, never with innerHTML, and the
 * embedded data is read with JSON.parse. In a report file nothing is fetched: case details are
 * read from script elements of this file (gzip+base64 ones are decompressed with
 * DecompressionStream). Served by `oloproof view` (`META.served`, the JSON API's address on the
 * same origin), the same page reads a case's details from the API when it is opened, and a run
 * in progress polls the API and draws itself again with the figures so far.
 */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("oloproof-data").textContent);
  var META = DATA.meta;
  var S = DATA.summary;
  var INDEX = DATA.index;              // [id, codes, errorKind, groups[], source, chunk, pos,
                                       //  with trials [trials, trials failed per criterion]]
  // Served by `oloproof view` while the run is running: redrawn as it goes (`live`).
  var LIVE = !!META.live && S.status === "running";
  // With a baseline: the baseline run's cases whose verdicts moved (same row shape).
  var BASE_INDEX = DATA.baseline_index || [];
  var CMP = S.comparison || null;
  var CRITERIA = S.criteria || [];
  var SLICES = S.slice_names || [];
  var PAGE = 100;
  var VERDICT = { P: "passed", F: "failed", M: "missing", X: "excluded" };

  // ---- DOM helpers (text only: dom.js) ----------------------------------------------------

  var DOM = oloproofDom(META.unsafe);
  var h = DOM.h, add = DOM.add, s = DOM.s, clear = DOM.clear, fmtInt = DOM.fmtInt,
    pill = DOM.pill;

  function jsonText(value, pretty) {
    if (value === undefined) return "";
    try { return JSON.stringify(value, null, pretty ? 2 : 0); } catch (e) { return String(value); }
  }

  function isEmpty(v) {
    return v === null || v === undefined ||
      (typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0);
  }

  function short(value, limit) {
    var t = typeof value === "string" ? value : jsonText(value, false);
    limit = limit || 240;
    return t.length <= limit ? t : t.slice(0, limit - 1) + "…";
  }

  /* A JSON value as JSON text: one line when short, else the start with a toggle to see it
   * whole. Strings keep their quotes, so "10" and 10 (or "null" and null) never look alike. */
  function inlineJson(value, limit) {
    var one = jsonText(value, false);
    limit = limit || 240;
    if (one.length <= limit) return h("span", { class: "json" }, one);
    return h("details", { class: "json" },
      h("summary", null, h("span", { class: "json" }, one.slice(0, limit - 1) + "…")),
      h("pre", null, jsonText(value, true)));
  }

  /* A block of JSON (pretty), long ones folded behind "show all". */
  function jsonBlock(value, cutChars) {
    if (cutChars) {
      return h("div", null,
        h("p", { class: "note" }, "Too large to embed whole: the first " +
          fmtInt(value.length) + " of " + fmtInt(cutChars) + " characters of its JSON. " +
          "`oloproof inspect RUN --case ID` prints it whole."),
        h("pre", null, value));
    }
    if (value === undefined || value === null) return h("span", { class: "empty-value" }, "none");
    var text = typeof value === "string" ? value : jsonText(value, true);
    var lines = text.split("\n");
    if (lines.length <= 60) return h("pre", null, text);
    var pre = h("pre", null, lines.slice(0, 40).join("\n"));
    var btn = h("button", { class: "more noprint", type: "button" },
      "show all " + fmtInt(lines.length) + " lines");
    btn.addEventListener("click", function () { pre.textContent = text; btn.remove(); });
    pre.setAttribute("data-full", "1");
    pre._full = text;
    return h("div", null, pre, btn);
  }

  function box(label, value, cutChars, extraClass) {
    return h("div", { class: "box " + (extraClass || "") },
      h("div", { class: "label" }, label), jsonBlock(value, cutChars));
  }

  function agentClass(name) {
    var hsh = 0;
    for (var i = 0; i < name.length; i++) hsh = (hsh * 31 + name.charCodeAt(i)) >>> 0;
    return "agent a" + (hsh % 8);
  }

  function agentBadge(name) { return h("span", { class: agentClass(name) }, name); }

  // ---- reading case details ---------------------------------------------------------------

  var chunkCache = new Map();
  var sharedCache = new Map();

  function decodeText(text) {
    if (META.encoding === "json") return Promise.resolve(text);
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error(
        "This browser cannot decompress the case details embedded in this report " +
        "(it lacks DecompressionStream). Open the report in a current browser, or read the " +
        "case with `oloproof inspect RUN --case ID`."));
    }
    var bin = atob(text.trim());
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  function readBlock(id) {
    var el = document.getElementById(id);
    if (!el) return Promise.reject(new Error("the report is missing its block " + id));
    return decodeText(el.textContent).then(function (t) { return JSON.parse(t); });
  }

  function loadChunk(i) {
    if (chunkCache.has(i)) return chunkCache.get(i);
    var p = readBlock("oloproof-chunk-" + i);
    chunkCache.set(i, p);
    if (chunkCache.size > 12) chunkCache.delete(chunkCache.keys().next().value);
    p.catch(function () { chunkCache.delete(i); });
    return p;
  }

  function loadShared(k) {
    if (!sharedCache.has(k)) sharedCache.set(k, readBlock("oloproof-shared-" + k));
    return sharedCache.get(k);
  }

  function loadCase(pos) { return loadRow(INDEX[pos]); }

  /* JSON from the view's API (same origin), or an Error with the message it answered. */
  function fetchJson(url) {
    return fetch(url, { cache: "no-store", credentials: "same-origin" }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (r.ok) return body;
        throw new Error((body.error && body.error.message) || "the view answered " + r.status);
      });
    });
  }

  /* A case's details: from this file's blocks, or (served) from the API, by run and case id. */
  function loadRow(row, runId) {
    if (META.served) {
      var url = META.served + "runs/" + encodeURIComponent(runId || S.run_id) + "/cases?id=" +
        encodeURIComponent(row[0]);
      if (LIVE) return fetchJson(url);  // what a running run stored of a case can grow
      if (!chunkCache.has(url)) {
        var p = fetchJson(url);
        chunkCache.set(url, p);
        if (chunkCache.size > 24) chunkCache.delete(chunkCache.keys().next().value);
        p.catch(function () { chunkCache.delete(url); });
      }
      return chunkCache.get(url);
    }
    return loadChunk(row[5]).then(function (chunk) {
      var detail = chunk[row[6]];
      var refs = detail["$refs"] || {};
      var keys = Object.keys(refs);
      return Promise.all(keys.map(function (k) { return loadShared(refs[k]); }))
        .then(function (values) {
          keys.forEach(function (k, i) {
            var dot = k.indexOf(".");
            if (dot < 0) detail[k] = values[i];
            else if (detail[k.slice(0, dot)]) detail[k.slice(0, dot)][k.slice(dot + 1)] = values[i];
          });
          delete detail["$refs"];
          return detail;
        });
    });
  }

  // ---- interval bars ----------------------------------------------------------------------

  var RULES_BY_METRIC = {};
  var STATE_BY_RULE = {};
  function indexRules() {
    RULES_BY_METRIC = {};
    (S.policy.rules || []).forEach(function (r) {
      // A max_errored rule decides on the run's executions, a sequential one on one case's
      // trials: never on a metric's bar.
      if (r.kind === "max_errored" || r.kind === "sequential") return;
      (RULES_BY_METRIC[r.metric] = RULES_BY_METRIC[r.metric] || []).push(r);
    });
    STATE_BY_RULE = {};
    // A running run is not decided: its bars carry no rule state.
    if (!LIVE) (S.decisions || []).forEach(function (d) { STATE_BY_RULE[d.rule] = d.state; });
  }
  indexRules();

  function metricState(metricId) {
    var order = ["FAIL", "MANUAL_REVIEW", "INSUFFICIENT_EVIDENCE", "PASS"];
    var states = (RULES_BY_METRIC[metricId] || []).map(function (r) { return STATE_BY_RULE[r.id]; })
      .filter(Boolean);
    for (var i = 0; i < order.length; i++) if (states.indexOf(order[i]) >= 0) return order[i];
    return "";
  }

  function niceMax(x) {
    if (!(x > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(x)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= x) return steps[i] * p;
    return 10 * p;
  }

  /* The interval as a bar on its scale, the estimate as a dot, each rule's threshold as a line. */
  function intervalBar(row, opts) {
    opts = opts || {};
    var W = opts.width || 360, H = opts.compact ? 22 : 34, L = 6, R = W - 8;
    var rate = row.kind === "rate";
    if (row.below_support || row.estimate === null || row.estimate === undefined) return null;
    var thresholds = opts.rules ? opts.rules.filter(function (r) {
      return r.kind !== "observed_count" && (r.min !== null && r.min !== undefined ||
        r.max !== null && r.max !== undefined);
    }) : [];
    var lo = 0, hi = 1;
    if (!rate) {
      var vals = [row.estimate, row.lower, row.upper].concat(thresholds.map(function (r) {
        return r.min !== null && r.min !== undefined ? r.min : r.max;
      })).filter(function (v) { return typeof v === "number"; });
      lo = Math.min(0, Math.min.apply(null, vals));
      hi = niceMax(Math.max.apply(null, vals) * 1.1);
      if (hi <= lo) hi = lo + 1;
    }
    function x(v) { return L + (R - L) * (Math.min(Math.max(v, lo), hi) - lo) / (hi - lo); }
    var y = opts.compact ? 6 : 14;
    var svg = s("svg", { class: "bar", width: W, height: H, viewBox: "0 0 " + W + " " + H,
      role: "img" });
    svg.appendChild(s("line", { class: "axis", x1: L, x2: R, y1: y + 4, y2: y + 4 }));
    if (!opts.compact) {
      var ticks = rate ? [0, 0.5, 1] : [lo, (lo + hi) / 2, hi];
      ticks.forEach(function (t) {
        svg.appendChild(s("line", { class: "axis", x1: x(t), x2: x(t), y1: y + 2, y2: y + 7 }));
        svg.appendChild(s("text", { class: "tick", x: x(t), y: y + 17,
          "text-anchor": t === ticks[0] ? "start" : t === ticks[2] ? "end" : "middle",
          text: rate ? Math.round(t * 100) + "%" : String(+t.toPrecision(3)) }));
      });
    }
    var state = opts.state || "";
    var hasLo = typeof row.lower === "number", hasHi = typeof row.upper === "number";
    var x0 = hasLo ? x(row.lower) : L, x1 = hasHi ? x(row.upper) : R;
    svg.appendChild(s("rect", { class: "iv " + state + (hasLo && hasHi ? "" : " open"),
      x: x0, y: y, width: Math.max(x1 - x0, 2), height: 8, rx: 2 }));
    if (hasLo && hasHi) {
      // nothing more
    } else {
      if (hasLo) {
        svg.appendChild(s("rect", { class: "iv " + state, x: x0, y: y, width: 2, height: 8 }));
      }
      if (hasHi) {
        svg.appendChild(s("rect", { class: "iv " + state, x: x1 - 2, y: y, width: 2, height: 8 }));
      }
      if (!opts.compact) {
        svg.appendChild(s("text", { class: "nobound", x: hasHi ? L : R, y: y - 2,
          "text-anchor": hasHi ? "start" : "end", text: hasHi ? "← no bound" : "no bound →" }));
      }
    }
    svg.appendChild(s("circle", { class: "est", cx: x(row.estimate), cy: y + 4, r: 3.5 }));
    thresholds.forEach(function (r) {
      var t = r.min !== null && r.min !== undefined ? r.min : r.max;
      var tx = x(t);
      svg.appendChild(s("line", { class: "thr", x1: tx, x2: tx, y1: y - 5, y2: y + 13 }));
      if (!opts.compact) {
        svg.appendChild(s("text", { class: "thr-label", x: tx, y: y - 6,
          "text-anchor": tx > W - 50 ? "end" : tx < 50 ? "start" : "middle", text: r.text }));
      }
    });
    var label = "estimate " + row.text.estimate + ", interval " + row.text.interval +
      thresholds.map(function (r) { return "; rule " + r.id + ": " + r.text; }).join("");
    svg.setAttribute("aria-label", label);
    svg.appendChild(s("title", { text: label }));
    return svg;
  }

  // ---- the summary ------------------------------------------------------------------------

  var GATE_WORDS = {
    0: "release allowed",
    1: "blocked with a FAIL",
    3: "blocked on INSUFFICIENT_EVIDENCE only: more evidence could settle it",
    4: "blocked with MANUAL_REVIEW and no FAIL",
    5: "the run could not complete",
    2: "usage or configuration error"
  };

  function renderHeader() {
    var gate = S.gate || {};
    var when = S.started_at ? new Date(S.started_at * 1000).toISOString().replace("T", " ")
      .slice(0, 19) + " UTC" : null;
    var status = S.status === "complete" ? "complete" :
      S.status + " (did not complete: figures cover what finished)";
    if (LIVE) status = "running";
    var blockOn = h("div", { class: "note" }, "block on: " + (S.policy.block_on || []).join(", ") +
      ((S.policy.warn_on || []).length ? " · warn on: " + S.policy.warn_on.join(", ") : ""));
    var gateBox = LIVE ? h("div", { class: "gate RUNNING", id: "gate", "data-running": "1" },
      h("div", null, h("div", { class: "action" }, "Running"),
        h("div", { class: "exit" }, "not decided")),
      h("div", null, "running, not decided: the figures below cover the cases stored so far; " +
        "the gate is decided when the run finishes", blockOn)) :
      h("div", { class: "gate " + (gate.action || ""), id: "gate" },
        h("div", null, h("div", { class: "action" }, "Gate: " + (gate.action || "?")),
          h("div", { class: "exit" }, "exit " + gate.exit_code)),
        h("div", null, S.subset_note ? h("div", { id: "subset-note", class: "warning" },
          S.subset_note) : gate.action === "WARN" ? "release allowed, with a warning" :
          GATE_WORDS[gate.exit_code] || "", h("div", null, ruleTally()), blockOn));
    return h("header", { class: "top" }, h("div", { class: "wrap" },
      META.served ? h("div", { class: "brand" }, h("a", { href: META.home, id: "all-runs" },
        "Oloproof · all runs")) : h("div", { class: "brand" }, "Oloproof report"),
      h("h1", null, (S.project || "") + " · " + (S.system ? S.system.name + " " +
        S.system.version + (S.system.variant ? " (" + S.system.variant + ")" : "") : "")),
      h("div", { class: "meta-line" },
        h("span", { class: "mono", id: "run-id" }, S.run_id),
        h("span", null, status),
        h("span", null, fmtInt(S.cases || 0) + " cases"),
        S.subset ? h("span", { id: "subset" }, "subset of " + fmtInt(S.subset.of) + " cases" +
          (S.subset.words ? ": " + S.subset.words : "")) : null,
        h("span", null, "confidence level " + S.confidence_level),
        when ? h("span", null, "run started " + when) : null,
        h("span", null, (META.served ? "read from the store " : "report written ") +
          new Date(META.generated_at * 1000).toISOString().replace("T", " ").slice(0, 19) +
          " UTC")),
      gateBox,
      h("nav", { class: "toc" },
        [["#decisions", "Decisions"]].concat(CMP ? [["#comparison", "Comparison"]] : [],
          [["#metrics", "Metrics"], ["#slices", "Slices"], ["#cases", "Cases"],
          ["#limits", "What a run cannot tell you"]]).map(function (l) {
          return h("a", { href: l[0] }, l[1]);
        }))));
  }

  function ruleTally() {
    var counts = {};
    (S.decisions || []).forEach(function (d) { counts[d.state] = (counts[d.state] || 0) + 1; });
    var order = ["FAIL", "MANUAL_REVIEW", "INSUFFICIENT_EVIDENCE", "PASS"];
    var parts = order.filter(function (k) { return counts[k]; }).map(function (k) {
      return [pill(counts[k] + " " + k, k), " "];
    });
    return parts.length ? [parts, "of " + (S.decisions || []).length + " rule(s)"] :
      "no rules in the policy";
  }

  function renderErrors(broke) {
    // The groups are made in Python (report/what_broke.py), as the terminal prints them:
    // commonest first, each case once, a hint for the known kinds.
    if (!broke || !broke.groups || !broke.groups.length) return null;
    return h("section", { id: "errors" },
      h("h2", null, "What broke"),
      broke.lead ? h("p", { class: "warning", id: "broke-lead" }, h("strong", null, broke.lead)) : null,
      h("p", { class: "warning" }, broke.cases + " case(s) errored; they count as missing for " +
        "every criterion that needed their output."),
      h("ul", null, broke.groups.map(function (g) {
        return h("li", { class: "broke-group" }, h("strong", null, g.kind + " × " + g.executions + ": "),
          h("span", { class: "mono" }, g.message),
          h("div", null, "cases: ", g.cases.slice(0, 12).map(function (c, i) {
            return [i ? ", " : "", caseLink(c)];
          }), g.cases.length > 12 ? " (+" + (g.cases.length - 12) + " more)" : ""),
          g.hint ? h("div", { class: "hint" }, "hint: " + g.hint) : null);
      })));
  }

  /* What broke, the simulators' part: the simulated conversations whose simulator failed a
   * check, by the first check failed (docs/conversations.md). */
  function renderSimulatorFailures(c) {
    if (!c || !c.failures || !Object.keys(c.failures).length) return null;
    var failed = 0;
    Object.keys(c.failures).forEach(function (k) { failed += c.failures[k]; });
    return h("section", { id: "simulator-failures" },
      h("h2", null, "What broke: the simulator"),
      h("p", { class: "warning" }, "The simulator failed a check in " + failed + " of " +
        c.simulated + " simulated conversation(s): the simulator's failure, not the agent's; " +
        "each case counts as missing for every criterion of the agent (simulator:<check>)."),
      h("ul", null, Object.keys(c.failures).map(function (k) {
        // (distinct case ids, the first 20 the run names: analysis/conversations.py)
        var cases = (c.failed_cases || {})[k] || [], capped = cases.length >= 20;
        return h("li", { class: "broke-group" }, h("strong", null, k + " × " + c.failures[k]),
          h("div", null, "cases: ", cases.slice(0, 12).map(function (id, i) {
            return [i ? ", " : "", caseLink(id)];
          }), cases.length > 12 ? " (+" + (cases.length - 12) + (capped ? "+" : "") +
            " more)" : "", c.failures[k] > cases.length && !capped ?
            " · " + c.failures[k] + " conversations over their trials" : ""));
      })));
  }

  function renderDecisions() {
    if (LIVE) {  // the rules, each with what it will compare; no state before the run ends
      var pending = (S.policy.rules || []).map(function (r) {
        return h("tr", null, h("td", null, r.id), h("td", { class: "mono" }, r.metric),
          h("td", null, pill("running, not decided", "running")), h("td"),
          h("td", null, r.text));
      });
      if (!pending.length) pending = [h("tr", null, h("td", { colspan: 5 }, "(no rules)"))];
      return h("section", { id: "decisions" }, h("h2", null, "Decisions ",
        h("span", { class: "sub" }, "— made when the run finishes")),
        h("div", { class: "table-scroll" }, h("table", null,
          h("thead", null, h("tr", null, ["Rule", "Metric", "State", "Reasons", "Threshold"]
            .map(function (c) { return h("th", null, c); }))),
          h("tbody", null, pending))));
    }
    var rulesById = {};
    (S.policy.rules || []).forEach(function (r) { rulesById[r.id] = r; });
    var rows = (S.decisions || []).map(function (d) {
      var rule = rulesById[d.rule];
      return h("tr", null, h("td", null, d.rule), h("td", { class: "mono" }, d.metric),
        h("td", null, pill(d.state), d.text ? h("span", { class: "comparison" }, " · " + d.text)
          : null), h("td", { class: "mono" }, (d.reasons || []).join(", ")),
        h("td", null, rule ? rule.text : ""));
    });
    if (!rows.length) rows = [h("tr", null, h("td", { colspan: 5 }, "(no rules)"))];
    return h("section", { id: "decisions" }, h("h2", null, "Decisions"),
      h("div", { class: "table-scroll" }, h("table", null,
        h("thead", null, h("tr", null, ["Rule", "Metric", "State", "Reasons", "Threshold"]
          .map(function (c) { return h("th", null, c); }))),
        h("tbody", null, rows))));
  }

  function legend() {
    return h("div", { class: "legend" },
      h("span", null, h("span", { class: "sw PASS" }), "rule PASS"),
      h("span", null, h("span", { class: "sw INSUFFICIENT_EVIDENCE" }), "INSUFFICIENT_EVIDENCE"),
      h("span", null, h("span", { class: "sw FAIL" }), "FAIL"),
      h("span", null, h("span", { class: "sw none" }), "no interval rule"),
      h("span", null, "● estimate · ┆ rule threshold · faded end: no bound"));
  }

  function renderMetrics() {
    var metrics = S.metrics || [];
    var rows = metrics.map(function (m) {
      var rules = RULES_BY_METRIC[m.id] || [];
      var counts = rules.filter(function (r) { return r.kind === "observed_count"; });
      var bar = intervalBar(m, { rules: rules, state: metricState(m.id) });
      return h("tr", { id: "metric-" + m.id },
        h("td", { class: "mono" }, m.id),
        h("td", { class: "num" }, m.text.estimate),
        h("td", { class: "num" }, m.text.interval + (m.approximate ? " ≈" : "")),
        h("td", { class: "n-text" }, m.text.n),
        h("td", { class: "bar-cell" }, bar || h("span", { class: "note" }, "no observations"),
          counts.map(function (r) {
            return h("div", { class: "note" }, "rule " + r.id + ": " + r.text +
              (m.kind === "rate" ? " — " + (m.observed - m.passed) + " failure(s) observed" : "") + " ",
              STATE_BY_RULE[r.id] ? [" ", pill(STATE_BY_RULE[r.id])] : null);
          })));
    });
    var approx = metrics.some(function (m) { return m.approximate; });
    return h("section", { id: "metrics", "data-running": LIVE ? "1" : null },
      h("h2", null, "Metrics", LIVE ? h("span", { class: "sub running" },
        " so far — running, not decided") : null), legend(),
      h("div", { class: "table-scroll" }, h("table", null,
        h("thead", null, h("tr", null, h("th", null, "Metric"), h("th", { class: "num" }, "Estimate"),
          h("th", { class: "num" }, "Interval"), h("th", null, "N"),
          h("th", null, "Interval against the rule's threshold"))),
        h("tbody", null, rows))),
      approx ? h("p", { class: "note" }, "≈ over clusters (Bentkus interval): cases of one " +
        "cluster are not independent.") : null,
      h("p", { class: "note" }, "Percentages to one decimal; interval bounds rounded outward. " +
        "Missing cases stay in the denominator and widen the interval; excluded cases leave it."));
  }

  /* pass^k against k (1 … trials), one small chart per criterion: the points and intervals are
   * the report's data (computed in Python: docs/reliability.md#what-passk-means); this only
   * draws them. */
  function reliabilityChart(curve, trials) {
    var W = 300, H = 150, L = 38, R = W - 10, T = 12, B = H - 26;
    function x(k) { return trials > 1 ? L + (R - L) * (k - 1) / (trials - 1) : (L + R) / 2; }
    function y(v) { return B - (B - T) * v; }
    var label = curve.criterion + ": pass^k for k = 1 to " + trials + ": " +
      curve.points.map(function (p) {
        return "k=" + p.k + " " + p.text.estimate + " " + p.text.interval;
      }).join("; ");
    var svg = s("svg", { class: "reliability", width: W, height: H,
      viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": label });
    svg.appendChild(s("title", { text: label }));
    [0, 0.5, 1].forEach(function (v) {
      svg.appendChild(s("line", { class: "grid", x1: L, x2: R, y1: y(v), y2: y(v) }));
      svg.appendChild(s("text", { class: "tick", x: L - 4, y: y(v) + 3, "text-anchor": "end",
        text: Math.round(v * 100) + "%" }));
    });
    for (var k = 1; k <= trials; k++) {
      svg.appendChild(s("text", { class: "tick", x: x(k), y: B + 12, "text-anchor": "middle",
        text: String(k) }));
    }
    svg.appendChild(s("text", { class: "tick", x: (L + R) / 2, y: H - 2,
      "text-anchor": "middle", text: "k (trials that must all pass)" }));
    var line = [];
    curve.points.forEach(function (p) {
      if (typeof p.lower === "number" && typeof p.upper === "number") {
        svg.appendChild(s("line", { class: "whisker", x1: x(p.k), x2: x(p.k), y1: y(p.lower),
          y2: y(p.upper) }));
        [p.lower, p.upper].forEach(function (v) {
          svg.appendChild(s("line", { class: "whisker", x1: x(p.k) - 3, x2: x(p.k) + 3,
            y1: y(v), y2: y(v) }));
        });
      }
      if (typeof p.estimate === "number") line.push([x(p.k), y(p.estimate)]);
    });
    if (line.length > 1) {
      svg.appendChild(s("polyline", { class: "trend", points: line.map(function (pt) {
        return pt[0].toFixed(1) + "," + pt[1].toFixed(1); }).join(" ") }));
    }
    line.forEach(function (pt) {
      svg.appendChild(s("circle", { class: "est", cx: pt[0], cy: pt[1], r: 3 }));
    });
    return svg;
  }

  function renderReliability() {
    var rel = S.reliability;
    if (!rel || !rel.curves || !rel.curves.length) return null;
    return h("section", { id: "reliability" },
      h("h2", null, "Reliability over " + rel.trials + " trials: pass^k against k"),
      h("p", { class: "note" }, "pass^k is the chance that k fresh trials of a case all pass " +
        "(C(c, k) / C(n, k) per case, averaged over cases). Bars are " +
        Math.round(rel.level * 100) + "% intervals over cases: exact at k = " + rel.trials +
        ", Bentkus below; missing trials count the worst way for the lower end and the best " +
        "for the upper."),
      h("div", { class: "reliability-grid" }, rel.curves.map(function (c) {
        return h("figure", { class: "reliability-item" },
          h("figcaption", { class: "mono" }, c.criterion),
          reliabilityChart(c, rel.trials),
          h("table", { class: "reliability-table" },
            h("thead", null, h("tr", null, h("th", null, "k"), h("th", { class: "num" },
              "pass^k"), h("th", { class: "num" }, "interval"))),
            h("tbody", null, c.points.map(function (p) {
              return h("tr", null, h("td", null, String(p.k)),
                h("td", { class: "num" }, p.text.estimate),
                h("td", { class: "num" }, p.text.interval));
            }))));
      })));
  }

  /* A case's trials side by side (docs/reliability.md#what-passk-means): each criterion's
   * verdict per trial, where the trajectories part, and their steps (the rest of the panel is
   * trial 1). */
  function renderTrials(d) {
    var trials = d.trials;
    var head = h("tr", null, h("th", null, "Criterion"), trials.map(function (t) {
      return h("th", { class: "num" }, "T" + t.trial);
    }), h("th", { class: "num" }, "passed"));
    var rows = CRITERIA.map(function (name, i) {
      var codes = trials.map(function (t) { return t.codes.charAt(i); });
      var counted = codes.filter(function (c) { return c === "P" || c === "F" || c === "M"; });
      var passed = codes.filter(function (c) { return c === "P"; }).length;
      var divided = codes.indexOf("P") >= 0 && codes.indexOf("F") >= 0;
      return h("tr", { class: divided ? "divided" : null }, h("td", { class: "mono" }, name),
        codes.map(function (c) {
          return h("td", { class: "num" }, h("span", { class: "pill " + VERDICT[c] }, c));
        }),
        h("td", { class: "num" }, counted.length ? passed + " / " + counted.length : "excluded"));
    });
    var out = [h("h3", null, "Trials side by side (" + trials.length +
      " trials; trial 1 is shown whole below)"),
      h("div", { class: "table-scroll" }, h("table", { class: "trials" }, h("thead", null, head),
        h("tbody", null, rows)))];
    var p = d.parting;
    function parting(head, q) {
      return h("p", { class: "parting" }, h("strong", null, head + q.step + ": "),
        q.groups.map(function (g, i) {
          return h("span", null, (i ? " · " : "") + "trial" + (g.trials.length > 1 ? "s " : " ") +
            g.trials.join(", ") + ": ", h("span", { class: "mono" }, g.step));
        }));
    }
    if (p) {
      out.push(parting("The trials part at step ", p));
      if (d.parting_actions) out.push(parting("Their actions part at step ", d.parting_actions));
      var longest = Math.max.apply(null, trials.map(function (t) { return t.steps.length; }));
      var stepRows = [];
      for (var i = 0; i < Math.min(longest, 60); i++) {
        var cells = trials.map(function (t) { return i < t.steps.length ? t.steps[i] : ""; });
        var same = cells.every(function (c) { return c === cells[0]; });
        stepRows.push(h("tr", { class: same ? null : "differs" }, h("td", { class: "num" },
          String(i + 1)), cells.map(function (c) { return h("td", { class: "mono step" }, c); })));
      }
      out.push(h("div", { class: "table-scroll" }, h("table", { class: "trial-steps" },
        h("thead", null, h("tr", null, h("th", null, "#"), trials.map(function (t) {
          return h("th", null, "trial " + t.trial);
        }))), h("tbody", null, stepRows))));
    } else if (trials.some(function (t) { return t.steps.length; })) {
      out.push(h("p", { class: "note" }, "Every trial took the same steps."));
    }
    return h("div", { class: "trials-box" }, out);
  }

  function renderExclusions() {
    var lines = (S.metrics || []).filter(function (m) {
      return m.excluded_by_reason && Object.keys(m.excluded_by_reason).length;
    }).map(function (m) {
      return h("li", null, h("span", { class: "mono" }, m.id), ": ",
        Object.keys(m.excluded_by_reason).map(function (r, i) {
          return [i ? ", " : "", h("span", { class: "mono" }, r), " " + m.excluded_by_reason[r]];
        }));
    });
    return h("section", { id: "exclusions" }, h("h3", null, "Exclusions by reason"),
      lines.length ? h("ul", null, lines) : h("p", { class: "note" }, "No case was excluded " +
        "from any metric."));
  }

  function renderJudgeChecks() {
    var j = S.judge_checks || [];
    if (!j.length) return null;
    return h("section", { id: "judge-checks" },
      h("h3", null, "Judges, checked against people's labels"),
      h("ul", null, j.map(function (v) {
        return h("li", null, h("strong", { class: "mono" }, v.criterion),
          " (judge " + v.judge + "): " + v.text, " ",
          pill(v.status === "checked" ? "checked" : v.status === "disagrees" ?
            "disagrees with people" : "uncalibrated",
            v.status === "checked" ? "PASS" : v.status === "disagrees" ? "MANUAL_REVIEW" :
              "INSUFFICIENT_EVIDENCE"));
      })));
  }

  /* Each judge criterion's verdict on one case: who judged, what it said, what it cost, and
   * what it was shown (docs/judges.md). */
  function renderJudges(judges) {
    return h("div", { id: "panel-judges" }, h("h3", null, "Judges"), judges.map(function (j) {
      var cost = [];
      if (j.input_tokens != null || j.output_tokens != null) cost.push(
        (j.input_tokens || 0) + " + " + (j.output_tokens || 0) + " tokens");
      if (typeof j.latency_ms === "number") cost.push(Math.round(j.latency_ms) + " ms");
      if (j.split) cost.push("samples " + (j.split.pass || 0) + " pass / " +
        (j.split.fail || 0) + " fail");
      if (j.attempts > 1) cost.push(j.attempts + " calls");
      return h("div", { class: "judge", "data-criterion": j.criterion },
        h("p", null, h("span", { class: "mono" }, j.criterion), " ", pill(j.verdict),
          " by judge ", h("strong", null, j.judge || ""),
          j.model ? [" (", h("span", { class: "mono" }, j.model), ")"] : null,
          j.reason ? " — " + j.reason : null,
          j.error ? " — " + (j.why || "") + ": " + j.error : null,
          cost.length ? h("span", { class: "note" }, " · " + cost.join(" · ")) : null),
        j.shown ? box("What the judge was shown", j.shown) : null);
    }));
  }

  /* A case's conversation turn by turn, and what the simulator's audit found
   * (docs/conversations.md). */
  function renderConversation(c) {
    var users = (c.turns || []).filter(function (t) {
      return t.role === "user" && String(t.text || "").trim();
    }).length;
    var who = c.user === "simulated" ? "simulated by " + c.simulator + " (seed " + c.seed + ")" :
      "scripted";
    var head = who + " · " + users + " user turn" + (users === 1 ? "" : "s") + " · ended " +
      c.ended + (c.ended === "max_turns" ? " (cut at max_turns " + c.max_turns +
        ": truncated)" : "");
    var checks = c.checks || [];
    return h("div", { id: "panel-conversation" }, h("h3", null, "Conversation"),
      h("p", { class: "note" }, head),
      h("table", { class: "conversation" }, h("tbody", null, (c.turns || []).map(function (t) {
        var said = String(t.text || "").trim() ? t.text : "(no message)";
        return h("tr", { class: "turn-" + t.role },
          h("td", { class: "mono" }, t.role), h("td", { class: "turn-text" }, said,
            t.role === "user" && t.done ? h("span", { class: "note" }, "  [done]") : null));
      }))),
      checks.length ? h("div", { class: "error-box" }, h("div", { class: "msg" },
        "The simulator failed " + checks.map(function (k) { return k.check; }).join(", ") +
        ": the simulator's failure, not the agent's; every criterion of the agent is missing " +
        "(simulator:" + checks[0].check + ")"),
        h("ul", null, checks.map(function (k) { return h("li", null, k.check + ": " + k.why); })))
        : c.user === "simulated" ? h("p", { class: "note" },
          "The simulator passed its audit (simulator_error, ended_early, leaked_instructions).")
          : null,
      c.instructions ? h("details", null, h("summary", null, "The simulator's instructions"),
        h("pre", null, c.instructions)) : null);
  }

  function renderTransforms() {
    var t = S.transforms || [];
    if (!t.length) return null;
    return h("section", { id: "transforms" }, h("h3", null, "Transforms: validity labels"),
      h("ul", null, t.map(function (v) {
        return h("li", null, h("strong", { class: "mono" }, v.transform), ": " + v.text, " ",
          pill(v.checked ? "checked" : "not checked", v.checked ? "PASS" : "INSUFFICIENT_EVIDENCE"));
      })));
  }

  /* Slices as a matrix: one row per group, one column per metric
   * (docs/concepts.md#slices-are-exploratory-and-never-gate). */
  function renderSlices() {
    var rows = S.slices || [];
    var sec = h("section", { id: "slices" },
      h("h2", null, "Slices ", h("span", { class: "sub" },
        "— exploratory: descriptive only, never gated")));
    if (!rows.length) {
      add(sec, h("p", { class: "note" }, "No slices were declared."));
      return sec;
    }
    var metricIds = [];
    var groups = [];
    var cells = new Map();
    rows.forEach(function (r) {
      if (metricIds.indexOf(r.metric) < 0) metricIds.push(r.metric);
      var key = r.slice + "\u0000" + r.value;
      if (!cells.has(key)) { cells.set(key, {}); groups.push(r); }
      cells.get(key)[r.metric] = r;
    });
    var table = h("table", { class: "slices" },
      h("thead", null, h("tr", null, h("th", null, "Group"), metricIds.map(function (m) {
        return h("th", { class: "mono" }, m);
      }))));
    var tbody = h("tbody");
    var last = null;
    var LIMIT = 300;
    function drawGroup(g) {
      var si = SLICES.indexOf(g.slice);
      var row = cells.get(g.slice + "\u0000" + g.value);
      var first = g.slice !== last;
      last = g.slice;
      var tr = h("tr", { class: first ? "slice-first" : "" },
        h("th", { class: "group", scope: "row" },
          h("span", { class: "mono" }, g.slice + "="),
          h("strong", { class: "mono" }, String(g.value)),
          si >= 0 ? h("div", null, h("button", { class: "link noprint", type: "button",
            title: "show this group's cases in the case list",
            onclick: function () { setGroup(si, String(g.value)); } }, "cases")) : null),
        metricIds.map(function (m) { return sliceCell(row[m]); }));
      tbody.appendChild(tr);
    }
    groups.slice(0, LIMIT).forEach(drawGroup);
    table.appendChild(tbody);
    add(sec, h("div", { class: "table-scroll" }, table));
    if (groups.length > LIMIT) {
      var more = h("button", { type: "button", class: "noprint" }, "show all " +
        fmtInt(groups.length) + " groups (" + fmtInt(groups.length - LIMIT) + " more)");
      more.addEventListener("click", function () {
        groups.slice(LIMIT).forEach(drawGroup);
        more.remove();
      });
      add(sec, more);
    }
    add(sec, h("p", { class: "note" }, "Each cell: estimate, interval, and the counts (hover " +
      "for the full line). Groups with support below min_slice_support show counts only. " +
      "* = differs from the rest of the suite (two-sided Fisher exact test, " +
      "Benjamini–Yekutieli adjusted across all rows, q ≤ 0.05); descriptive, never gated. " +
      "A rule cannot name a slice."));
    return sec;
  }

  function sliceCell(r) {
    if (!r) return h("td");
    var counts = r.kind === "rate" ? r.passed + " / " + r.observed :
      "p" + +(r.quantile * 100).toPrecision(4) + " of " + r.observed;
    if (r.missing) counts += " · " + r.missing + " missing";
    if (r.excluded) counts += " · " + r.excluded + " excl.";
    return h("td", { class: "cell" + (r.below_support ? " below" : ""),
      title: r.text.n + " · support " + r.support },
      h("div", null, h("strong", null, r.text.estimate), r.mark ? h("span", { class: "mark" },
        " " + r.mark) : null),
      r.text.interval !== "—" ? h("div", { class: "iv-text" }, r.text.interval) : null,
      h("div", { class: "counts" }, counts));
  }

  function renderCache() {
    var c = S.cache || {};
    var e = c.execution || {}, j = c.judgment || {};
    var text = "Cache: execution " + e.hit + " hit/" + e.miss + " miss; judgment " + j.hit +
      " hit/" + j.miss + " miss";
    Object.keys(c).forEach(function (k) {
      if (k !== "execution" && k !== "judgment" && c[k] && typeof c[k] === "object") {
        text += "; " + k + " " + c[k].hit + " hit/" + c[k].miss + " miss";
      }
    });
    return h("p", { id: "cache", class: "mono" }, text);
  }

  function renderLimits() {
    return h("section", { id: "limits" }, h("h2", null, "What this run cannot tell you"),
      h("ul", { class: "limits" }, (S.limits || []).map(function (l) { return h("li", null, l); })));
  }

  // ---- the case list ------------------------------------------------------------------------

  var state = { status: "all", crit: -1, group: null, q: "", page: 0, current: -1 };
  var filtered = [];
  var listEls = {};

  /* A case's one status on the chosen criterion (or over all): failed if it failed any, else
   * missing if any is missing, else passed if it passed any, else excluded (excluded from
   * every one). The four partition the cases: All = Failed + Missing + Excluded + Passed.
   * Errored cases (missing wherever their output was needed) are a filter of their own. */
  function category(row, crit) {
    var codes = crit >= 0 ? row[1].charAt(crit) : row[1];
    var status = codes.indexOf("F") >= 0 ? "failed" : codes.indexOf("M") >= 0 ? "missing" :
      codes.indexOf("P") >= 0 || !codes ? "passed" : "excluded";
    return { status: status, errored: !!row[2] };
  }

  function applyFilters() {
    var q = state.q.trim().toLowerCase();
    var g = state.group;
    var counts = { all: 0, failed: 0, errored: 0, missing: 0, excluded: 0, passed: 0 };
    var out = [];
    for (var i = 0; i < INDEX.length; i++) {
      var row = INDEX[i];
      if (q && row[0].toLowerCase().indexOf(q) < 0) continue;
      if (g && String(row[3][g.s]) !== g.v) continue;
      var c = category(row, state.crit);
      counts.all++;
      counts[c.status]++;
      if (c.errored) counts.errored++;
      var st = state.status;
      if (st === "all" || st === c.status || (st === "errored" && c.errored)) out.push(i);
    }
    filtered = out;
    var pages = Math.max(1, Math.ceil(out.length / PAGE));
    if (state.page >= pages) state.page = pages - 1;
    Object.keys(listEls.chips).forEach(function (k) {
      listEls.chips[k].querySelector(".count").textContent = fmtInt(counts[k]);
    });
    drawList();
  }

  function drawList() {
    var body = clear(listEls.tbody);
    var start = state.page * PAGE;
    var end = Math.min(filtered.length, start + PAGE);
    var frag = document.createDocumentFragment();
    for (var k = start; k < end; k++) frag.appendChild(caseRow(filtered[k]));
    body.appendChild(frag);
    if (!filtered.length) {
      body.appendChild(h("tr", null, h("td", { colspan: 3, class: "note" },
        "No case matches these filters.")));
    }
    var pages = Math.max(1, Math.ceil(filtered.length / PAGE));
    listEls.count.textContent = filtered.length ? "Showing " + fmtInt(start + 1) + "–" +
      fmtInt(end) + " of " + fmtInt(filtered.length) + " matching cases (" +
      fmtInt(INDEX.length) + " in the run)" : "0 of " + fmtInt(INDEX.length) + " cases";
    listEls.page.textContent = "page " + (state.page + 1) + " of " + pages;
    listEls.prev.disabled = state.page === 0;
    listEls.next.disabled = state.page >= pages - 1;
    document.getElementById("app").setAttribute("data-listed", String(filtered.length));
  }

  /* With trials: " (1 of 3 trials)" after a criterion the case failed on some of its trials,
   * as every list of cases says it (report/trial_counts.py). */
  function trialsNote(row, i) {
    var t = row[7];
    return t && t[0] > 1 && row[1].charAt(i) === "F" ? " (" + t[1][i] + " of " + t[0] +
      " trials)" : "";
  }

  function failedText(row) {
    var names = [];
    for (var i = 0; i < row[1].length; i++) {
      if (row[1].charAt(i) === "F") names.push(CRITERIA[i] + trialsNote(row, i));
    }
    return names.length ? "failed " + names.join(", ") : null;
  }

  function caseRow(pos) {
    var row = INDEX[pos];
    var strip = h("span", { class: "strip", "aria-hidden": "true" });
    for (var i = 0; i < row[1].length; i++) {
      var code = row[1].charAt(i);
      strip.appendChild(h("span", { class: code + (i === state.crit ? " sel" : ""),
        title: CRITERIA[i] + ": " + VERDICT[code] + trialsNote(row, i) }));
    }
    var failed = failedText(row);
    var c = category(row, -1);
    var tr = h("tr", { tabindex: "0", "data-case": row[0], "data-status": c.status,
      class: (pos === state.current ? "current " : "") +
        (c.status === "failed" || c.errored ? "row-failed" : ""),
      "aria-label": row[0] + ": " + c.status + (c.errored ? ", errored" : "") },
      h("td", { class: "cid" }, row[0]),
      h("td", null, strip),
      h("td", { class: "flag" }, row[2] ? pill("errored: " + row[2], "errored") : null,
        failed ? h("span", { class: "failed-criteria" }, (row[2] ? " " : "") + failed) : null,
        row[4] ? " copy of " + row[4] : null));
    tr.addEventListener("click", function () { goToCase(row[0]); });
    tr.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); goToCase(row[0]); }
      else if (ev.key === "ArrowDown" && tr.nextSibling) { ev.preventDefault(); tr.nextSibling.focus(); }
      else if (ev.key === "ArrowUp" && tr.previousSibling) {
        ev.preventDefault(); tr.previousSibling.focus();
      }
    });
    return tr;
  }

  var BY_ID = null;
  function positionOf(id) {
    if (!BY_ID) {
      BY_ID = new Map();
      for (var i = 0; i < INDEX.length; i++) if (!BY_ID.has(INDEX[i][0])) BY_ID.set(INDEX[i][0], i);
    }
    return BY_ID.has(id) ? BY_ID.get(id) : -1;
  }

  function caseLink(id) {
    return h("button", { class: "link", type: "button", onclick: function () { goToCase(id); } },
      id);
  }

  function goToCase(id) {
    var target = "#case=" + encodeURIComponent(id);
    if (location.hash === target) openCase(positionOf(id));
    else location.hash = target;
  }

  function setGroup(sliceIndex, value) {
    state.group = { s: sliceIndex, v: value };
    listEls.group.value = sliceIndex + "\u0000" + value;
    state.page = 0;
    applyFilters();
    document.getElementById("cases").scrollIntoView();
  }

  function renderCases() {
    var search = h("input", { type: "search", id: "case-search", placeholder: "Search case id",
      "aria-label": "Search case id", autocomplete: "off", spellcheck: "false" });
    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.q = search.value; state.page = 0; applyFilters(); },
        INDEX.length > 5000 ? 120 : 30);
    });
    var chips = {};
    var chipRow = h("div", { class: "chips", role: "group", "aria-label": "status filter" },
      [["all", "All"], ["failed", "Failed"], ["missing", "Missing"], ["excluded", "Excluded"],
        ["passed", "Passed"], ["errored", "Errored"]].map(function (c) {
        var b = h("button", { type: "button", class: "chip" + (c[0] === "errored" ? " apart" : ""),
          "data-status": c[0], "aria-pressed": c[0] === state.status ? "true" : "false",
          title: c[0] === "errored" ? "cases whose call failed: also counted under Missing " +
            "(or Failed)" : c[0] === "all" ? "All = Failed + Missing + Excluded + Passed" : null },
        c[1], h("span", { class: "count" }));
        b.addEventListener("click", function () {
          state.status = c[0]; state.page = 0;
          Object.keys(chips).forEach(function (k) {
            chips[k].setAttribute("aria-pressed", k === c[0] ? "true" : "false");
          });
          applyFilters();
        });
        chips[c[0]] = b;
        return b;
      }));
    var crit = h("select", { id: "case-criterion", "aria-label": "criterion" },
      h("option", { value: "-1" }, "any criterion"),
      CRITERIA.map(function (c, i) { return h("option", { value: String(i) }, c); }));
    crit.addEventListener("change", function () {
      state.crit = Number(crit.value); state.page = 0; applyFilters();
    });
    var values = SLICES.map(function () { return new Map(); });
    INDEX.forEach(function (row) {
      for (var i = 0; i < SLICES.length; i++) {
        var v = row[3][i];
        if (v === null || v === undefined) continue;
        var key = String(v);
        values[i].set(key, (values[i].get(key) || 0) + 1);
      }
    });
    var group = h("select", { id: "case-group", "aria-label": "slice group" },
      h("option", { value: "" }, "any slice group"),
      SLICES.map(function (name, i) {
        var keys = Array.from(values[i].keys()).sort();
        if (!keys.length) return null;
        return h("optgroup", { label: name }, keys.slice(0, 500).map(function (k) {
          return h("option", { value: i + "\u0000" + k },
            name + "=" + k + " (" + fmtInt(values[i].get(k)) + ")");
        }));
      }));
    group.addEventListener("change", function () {
      if (!group.value) state.group = null;
      else {
        var cut = group.value.indexOf("\u0000");
        state.group = { s: Number(group.value.slice(0, cut)), v: group.value.slice(cut + 1) };
      }
      state.page = 0; applyFilters();
    });
    var prev = h("button", { type: "button", id: "page-prev" }, "‹ previous");
    var next = h("button", { type: "button", id: "page-next" }, "next ›");
    prev.addEventListener("click", function () { state.page--; drawList(); });
    next.addEventListener("click", function () { state.page++; drawList(); });
    var tbody = h("tbody", { id: "case-rows" });
    var panel = h("div", { class: "panel empty", id: "case-panel", "aria-live": "polite" },
      "Choose a case to see it whole: input, expected, output, every step of its trajectory, " +
      "its states, compared paths and every criterion's verdict.");
    listEls = { tbody: tbody, chips: chips, count: h("div", { class: "count-line", id: "case-count" }),
      page: h("span"), prev: prev, next: next, group: group, panel: panel, search: search };
    return h("section", { id: "cases" }, h("h2", null, "Cases"),
      h("div", { class: "controls" }, search, chipRow),
      h("div", { class: "controls" }, h("label", null, "Criterion ", crit),
        h("label", null, "Slice group ", group)),
      h("div", { class: "cases-layout" },
        h("div", { class: "case-list" }, listEls.count,
          h("div", { class: "pager" }, prev, listEls.page, next),
          h("table", null, h("thead", null, h("tr", null, h("th", null, "Case"),
            h("th", null, "Verdicts"), h("th", null, ""))), tbody),
          verdictLegend()),
        panel));
  }

  /* What the squares of the Verdicts column mean, drawn with the squares themselves. */
  function verdictLegend() {
    return h("div", { class: "note verdict-legend", id: "verdict-legend" },
      "Each square is one criterion, in the suite's order (" + CRITERIA.join(", ") + "): ",
      ["P", "F", "M", "X"].map(function (code) {
        return h("span", { class: "key" }, h("span", { class: "strip", "aria-hidden": "true" },
          h("span", { class: code })), " " + VERDICT[code]);
      }),
      ". A case is Failed if it failed any criterion, else Missing if any is missing, else " +
      "Passed, or Excluded when every criterion excluded it.");
  }

  // ---- the case panel -------------------------------------------------------------------

  var openToken = 0;

  function openCase(pos, scroll) {
    var panel = listEls.panel;
    if (pos < 0) {
      clear(panel).className = "panel empty";
      add(panel, "No case with that id in this run.");
      return;
    }
    var token = ++openToken;
    state.current = pos;
    document.body.classList.add("has-case");
    Array.prototype.forEach.call(listEls.tbody.querySelectorAll("tr.current"), function (tr) {
      tr.classList.remove("current");
    });
    var rowEl = listEls.tbody.querySelector('tr[data-case="' + cssEscape(INDEX[pos][0]) + '"]');
    if (rowEl) rowEl.classList.add("current");
    clear(panel).className = "panel";
    add(panel, h("p", { class: "note" }, "Reading case " + INDEX[pos][0] + "…"));
    loadCase(pos).then(function (detail) {
      if (token !== openToken) return;
      clear(panel);
      add(panel, renderPanel(detail, pos));
      panel.setAttribute("data-case", INDEX[pos][0]);
      if (scroll) scrollToPanel(panel);
    }, function (err) {
      if (token !== openToken) return;
      clear(panel);
      add(panel, h("div", { class: "error-box" }, h("div", { class: "msg" }, String(err.message ||
        err))));
    });
  }

  /* Bring the panel into view unless its top already is (a row clicked beside it). */
  function scrollToPanel(panel) {
    var top = panel.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight * 0.6) panel.scrollIntoView({ block: "start" });
    panel.setAttribute("data-scrolled", "1");
  }

  function cssEscape(v) {
    if (window.CSS && CSS.escape) return CSS.escape(v);
    return String(v).replace(/["\\]/g, "\\$&");
  }

  function stepCase(delta) {
    var at = filtered.indexOf(state.current);
    var next = at < 0 ? (delta > 0 ? 0 : filtered.length - 1) : at + delta;
    if (next < 0 || next >= filtered.length) return;
    state.page = Math.floor(next / PAGE);
    drawList();
    goToCase(INDEX[filtered[next]][0]);
  }

  function renderPanel(d, pos, opts) {
    opts = opts || {};
    var row = opts.row || INDEX[pos];
    var cut = d["$cut"] || {};
    var out = [];
    // A structured value cut for size is shown as the text it was cut to, at the end.
    var cutBoxes = [];
    [["criteria", []], ["errors", []], ["replays", []], ["other_artifacts", {}], ["facts", null],
      ["route", null]].forEach(function (kv) {
      if (cut[kv[0]]) {
        cutBoxes.push(box(kv[0], d[kv[0]], cut[kv[0]], "full"));
        d[kv[0]] = kv[1];
      }
    });
    var title = h("h2", null, opts.label ? opts.label + " · case " : "Case ",
      h("span", { class: "cid" }, d["case"]));
    var nav = opts.label ? null : h("div", { class: "panel-nav" },
      h("button", { type: "button", title: "previous case in the list",
        onclick: function () { stepCase(-1); } }, "‹"),
      h("button", { type: "button", title: "next case in the list",
        onclick: function () { stepCase(1); } }, "›"));
    out.push(h("div", { class: "panel-head" }, title, nav));
    var facts = [];
    if (d.transform) {
      facts.push(h("span", null, "copy of ", caseLink(d.source), " under transform ",
        h("strong", { class: "mono" }, d.transform)));
    }
    if (typeof d.latency_ms === "number") facts.push(h("span", null, "latency " +
      Math.round(d.latency_ms) + " ms"));
    if (d.cached) facts.push(h("span", null, "execution from the cache"));
    if (facts.length) out.push(h("div", { class: "meta-line" }, facts));
    if (Array.isArray(d.trials) && d.trials.length) out.push(renderTrials(d));
    out.push(h("div", { class: "verdicts" }, (d.criteria || []).map(function (c) {
      return h("span", { class: "pill " + c.verdict, title: c.reason || "" },
        c.criterion + ": " + c.verdict);
    })));
    (d.errors || []).forEach(function (e) {
      out.push(h("div", { class: "error-box" },
        h("div", { class: "msg" }, "errored (" + e.kind + "): " + e.message),
        e.traceback ? h("details", null, h("summary", null, "traceback"),
          h("pre", null, e.traceback)) : null));
    });
    if (d.attempts > 1) {  // system.retries: each earlier attempt's error
      out.push(h("div", { class: "attempts" },
        h("div", null, "Attempts: " + d.attempts + " (system.retries); the last " +
          ((d.errors || []).length ? "failed too, as above" : "succeeded")),
        h("ul", null, (d.attempt_errors || []).map(function (e) {
          return h("li", null, "attempt " + e.attempt + ": " + e.kind + ": " + e.message);
        }))));
    }
    out.push(h("div", { class: "grid2" },
      box("Input", d.input, cut.input),
      box("Expected", d.expected, cut.expected),
      box("Output", d.output, cut.output)));
    out.push(renderCriteria(d.criteria || []));
    var paths = renderComparedPaths(d.criteria || []);
    if (paths) out.push(paths);
    if (d.source_case) out.push(renderPair(d));
    if (d.conversation && typeof d.conversation === "object" && !cut.conversation) {
      out.push(renderConversation(d.conversation));
    }
    if (Array.isArray(d.judges) && d.judges.length) out.push(renderJudges(d.judges));
    if (Array.isArray(d.replays) && d.replays.length) out.push(renderReplays(d));
    if (d.trajectory && typeof d.trajectory === "object" && !cut.trajectory) {
      out.push(h("h3", null, "Trajectory"));
      out.push(renderTrajectory(d.trajectory, d.route));
    } else if (cut.trajectory) {
      out.push(h("h3", null, "Trajectory"), jsonBlock(d.trajectory, cut.trajectory));
    } else {
      out.push(h("h3", null, "Trajectory"), h("p", { class: "note" },
        "No trajectory was recorded for this case."));
    }
    if (!isEmpty(d.initial_state) || !isEmpty(d.end_state)) {
      out.push(h("h3", null, "States"));
      out.push(h("div", { class: "grid2" },
        box("Initial state", d.initial_state, cut.initial_state),
        box("Recorded end state", d.end_state, cut.end_state)));
    }
    var about = [];
    if (!isEmpty(d.metadata)) about.push(box("Metadata", d.metadata, cut.metadata));
    var groups = {};
    SLICES.forEach(function (name, i) { groups[name] = row[3][i]; });
    if (SLICES.length) about.push(box("Slice groups (null: joins no group)", groups));
    if (!isEmpty(d.facts)) about.push(box("Facts read from the trajectory", d.facts, cut.facts));
    if (about.length) out.push(h("h3", null, "About this case"), h("div", { class: "grid2" }, about));
    var arts = d.other_artifacts || {};
    Object.keys(arts).forEach(function (k) { out.push(box("Artifact " + k, arts[k])); });
    out.push(cutBoxes);
    var known = ["case", "input", "expected", "metadata", "initial_state", "source", "transform",
      "output", "latency_ms", "trajectory", "end_state", "other_artifacts", "facts", "slices",
      "criteria", "errors", "cached", "source_case", "replays", "route", "$cut", "$refs",
      "trials", "parting", "parting_actions", "attempts", "attempt_errors", "judges"];
    if (!cut.conversation) known.push("conversation");
    Object.keys(d).forEach(function (k) {
      if (known.indexOf(k) < 0 && !isEmpty(d[k])) out.push(box(k, d[k], cut[k]));
    });
    return out;
  }

  function renderCriteria(criteria) {
    var rows = criteria.map(function (c) {
      var details = c.details;
      var shown = details;
      if (details && typeof details === "object" && isPathChecks(details.checks)) {
        shown = {};
        Object.keys(details).forEach(function (k) { if (k !== "checks") shown[k] = details[k]; });
      }
      return h("tr", { class: c.verdict === "failed" ? "row-failed" : "",
        "data-criterion": c.criterion },
        h("td", { class: "mono" }, c.criterion),
        h("td", null, pill(c.verdict)),
        h("td", { class: "mono" }, c.reason || ""),
        h("td", null, isEmpty(shown) ? "" : inlineJson(shown, 200)));
    });
    return h("div", { id: "panel-criteria" }, h("h3", null, "Criteria"),
      h("div", { class: "table-scroll" }, h("table", null,
        h("thead", null, h("tr", null, ["Criterion", "Verdict", "Reason", "Details"].map(
          function (t) { return h("th", null, t); }))),
        h("tbody", null, rows))));
  }

  function isPathChecks(checks) {
    return Array.isArray(checks) && checks.length > 0 && checks.every(function (c) {
      return c && typeof c === "object" && "path" in c && "agreed" in c;
    });
  }

  function stateValue(v) {
    if (v && typeof v === "object" && !Array.isArray(v) && v["$absent"] === true &&
      Object.keys(v).length === 1) return h("span", { class: "empty-value" }, "(absent)");
    return inlineJson(v, 160);
  }

  function renderComparedPaths(criteria) {
    var parts = [];
    criteria.forEach(function (c) {
      var d = c.details;
      if (!d || typeof d !== "object" || !isPathChecks(d.checks)) return;
      var agreed = typeof d.agreed_count === "number" ? d.agreed_count : null;
      var differ = typeof d.disagreed_count === "number" ? d.disagreed_count : null;
      var line = agreed !== null && differ !== null ? (agreed + differ) + " compared path(s): " +
        differ + " differ, " + agreed + " agree" + (d.mode ? " · mode " + d.mode : "") : "";
      var hidden = (agreed !== null && differ !== null) ? agreed + differ - d.checks.length : 0;
      if (d.agreed_not_shown) hidden = d.agreed_not_shown;
      parts.push(h("div", { class: "compared", "data-criterion": c.criterion },
        h("h3", null, "Compared state paths: ", h("span", { class: "mono" }, c.criterion), " ",
          pill(c.verdict)),
        line ? h("p", { class: "note" }, line) : null,
        h("div", { class: "table-scroll" }, h("table", { class: "paths" },
          h("thead", null, h("tr", null, ["Path", "Expected", "Recorded", "Verdict"].map(
            function (t) { return h("th", null, t); }))),
          h("tbody", null, d.checks.map(function (k) {
            return h("tr", { class: k.agreed ? "agrees" : "differs" },
              h("td", { class: "path" }, String(k.path)),
              h("td", null, stateValue(k.expected)),
              h("td", null, stateValue(k.recorded)),
              h("td", null, pill(k.agreed ? "agrees" : "differs"),
                k.note ? h("span", { class: "note" }, " " + k.note) : null));
          })))),
        hidden > 0 || d.truncated ? h("p", { class: "note" }, "… and " +
          (hidden > 0 ? hidden + " more" : "more") + " paths that agree (not kept).") : null));
    });
    return parts.length ? h("div", { id: "panel-paths" }, parts) : null;
  }

  // -- trajectory --

  function renderTrajectory(t, route, opts) {
    opts = opts || {};
    var steps = Array.isArray(t.steps) ? t.steps : [];
    var constraintsAt = new Map();
    (t.constraints || []).forEach(function (c) {
      var k = c.step_index === null || c.step_index === undefined ? "whole" : c.step_index;
      if (!constraintsAt.has(k)) constraintsAt.set(k, []);
      constraintsAt.get(k).push(c);
    });
    var checkpointsAt = new Map();
    (t.checkpoints || []).forEach(function (c) {
      var k = c.step_index === null || c.step_index === undefined ? "before" : c.step_index;
      if (!checkpointsAt.has(k)) checkpointsAt.set(k, []);
      checkpointsAt.get(k).push(c);
    });
    var wrap = h("div", { class: "trajectory" });
    var head = h("div", { class: "traj-head" },
      h("strong", null, steps.length + " step" + (steps.length === 1 ? "" : "s")),
      pill(String(t.terminal_status || "unknown"), t.terminal_status === "success" ? "passed" :
        t.terminal_status === "failure" ? "failed" : "plain"),
      t.truncated ? pill("TRUNCATED at the agent's limit" + (t.step_limit ? " (" + t.step_limit +
        ")" : ""), "failed") : null);
    if (!opts.noHead) add(wrap, head);
    if (route && route.length && !opts.noHead) {
      add(wrap, h("div", { class: "route" }, "route: ", route.map(function (a, i) {
        return [i ? h("span", { class: "arrow" }, "→") : null, agentBadge(a)];
      })));
    }
    var whole = constraintsAt.get("whole") || [];
    if (whole.length) {
      add(wrap, h("div", { class: "badges" }, "whole-trace constraints: ",
        whole.map(constraintBadge)));
    }
    var ol = h("ol", { class: "timeline" });
    (checkpointsAt.get("before") || []).forEach(function (c) {
      ol.appendChild(h("li", { class: "marker" }, h("div", { class: "badges" },
        checkpointBadge(c), c.description ? null : h("span", { class: "note" },
          "before the first step"))));
    });
    var seen = {};
    steps.forEach(function (step) {
      seen[step.index] = true;
      var li = renderStep(step, constraintsAt.get(step.index), checkpointsAt.get(step.index));
      if (opts.dimUpTo !== undefined && opts.dimUpTo !== null && step.index <= opts.dimUpTo) {
        li.classList.add("dim");
      }
      ol.appendChild(li);
    });
    constraintsAt.forEach(function (list, k) {
      if (k !== "whole" && !seen[k]) {
        ol.appendChild(h("li", { class: "marker" }, h("div", { class: "badges" },
          list.map(constraintBadge), h("span", { class: "note" }, "at step " + k +
            ", which is not in the recorded steps"))));
      }
    });
    if (t.truncated) {
      ol.appendChild(h("li", { class: "truncated marker" }, "The trace stops here: truncated at the " +
        "agent's step limit" + (t.step_limit ? " (" + t.step_limit + ")" : "") +
        "; what came after was never recorded."));
    }
    add(wrap, ol);
    return wrap;
  }

  function constraintBadge(c) {
    return h("span", { class: "badge " + (c.passed ? "ok" : "bad") },
      (c.passed ? "✓ " : "✗ ") + c.name + (c.passed ? "" : " FAILED"));
  }

  function checkpointBadge(c) {
    return h("span", { class: "badge cp", title: c.description || "" },
      "⚑ " + c.checkpoint_id + (c.kind ? " (" + c.kind + ")" : ""),
      c.description ? " — " + c.description : "");
  }

  function renderStep(step, constraints, checkpoints) {
    var kind = String(step.kind || "");
    var line = h("div", { class: "step-line" });
    if (step.agent) add(line, agentBadge(String(step.agent)));
    add(line, h("span", { class: "kind " + kind }, kind));
    var li = h("li", { class: "step " + kind, "data-step": step.index },
      h("span", { class: "idx" }, String(step.index)), line);
    if (kind === "handoff") {
      add(line, h("span", { class: "hand" }, "hands control to "),
        step.to_agent ? agentBadge(String(step.to_agent)) : h("span", { class: "empty-value" }, "?"));
    }
    if (step.tool_name) add(line, h("span", { class: "tool" }, String(step.tool_name)));
    var body = h("div", { class: "step-body" });
    if (step.arguments !== null && step.arguments !== undefined) {
      add(body, h("div", null, h("span", { class: "lbl" },
        kind === "tool_call" ? "arguments" : "content"), inlineJson(step.arguments, 300)));
    }
    if (step.result !== null && step.result !== undefined) {
      add(body, h("div", null, h("span", { class: "lbl" }, "result →"),
        inlineJson(step.result, 300)));
    }
    if (body.childNodes.length) add(li, body);
    var badges = [];
    (constraints || []).forEach(function (c) { badges.push(constraintBadge(c)); });
    (checkpoints || []).forEach(function (c) { badges.push(checkpointBadge(c)); });
    if (badges.length) add(li, h("div", { class: "badges" }, badges));
    return li;
  }

  // -- a metamorphic copy beside its source --

  /* One side of a row as Python made it: its text, the words that differ marked. */
  function pairCell(cell, empty) {
    if (!cell) return h("span", { class: "empty-value" }, empty);
    if (!cell.parts) return h("span", { class: "json" }, cell.text);
    return h("span", { class: "json" }, cell.parts.map(function (p) {
      return p[1] ? h("mark", null, p[0]) : p[0];
    }));
  }

  function renderPair(d) {
    var src = d.source_case || {};
    var pair = d.pair || { rows: [], agreeing_end_state_paths: 0 };
    var same = pair.agreeing_end_state_paths || 0;
    var rows = pair.rows.map(function (r) {
      var action = r.label === "action";
      return h("tr", { class: r.differs ? "changed" : "" },
        h("td", { class: "path" }, r.label + (r.path ? " " + r.path : "")),
        h("td", null, pairCell(r.left, action ? "(none)" : "(absent)")),
        h("td", null, pairCell(r.right, action ? "(none)" : "(absent)")));
    });
    return h("div", { id: "panel-pair" },
      h("h3", null, "Source beside this copy"),
      h("p", { class: "note" }, "Source ", caseLink(src["case"]), " and this copy under transform ",
        h("strong", { class: "mono" }, d.transform || "?"),
        ". Rows marked ≠ differ, compared as the evaluators compare them; the words that " +
        "differ are highlighted." +
        (same ? " " + same + " end-state path(s) agree and are not shown." : "")),
      h("div", { class: "table-scroll" }, h("table", null,
        h("thead", null, h("tr", null, h("th", null, ""),
          h("th", null, "source " + src["case"]), h("th", null, "copy " + d["case"]))),
        h("tbody", null, rows))));
  }

  // -- fault replays --

  function isTrajectory(v) { return v && typeof v === "object" && Array.isArray(v.steps); }

  /* One fault replay: what was planned, then the recording and the replay side by side from the
   * checkpoint on, the steps where they part marked; the control replay folded below. */
  function renderReplay(d, r, i) {
    var cp = r.checkpoint && typeof r.checkpoint === "object" ? r.checkpoint : null;
    var at = cp && typeof cp.step_index === "number" ? cp.step_index : 0;
    var plan = r.plan && typeof r.plan === "object" ? r.plan : {};
    var change = r.change && typeof r.change === "object" ? r.change : null;
    var head = h("div", { class: "step-line" },
      h("strong", { class: "mono" }, String(r.criterion || "")),
      r.verdict ? pill(String(r.verdict)) : null,
      r.reason ? h("span", { class: "mono note" }, String(r.reason)) : null);
    var plain = [];
    if (plan.fault || plan.tool) {
      plain.push("fault ", h("strong", { class: "mono" }, String(plan.fault || "?")), " at ",
        h("strong", { class: "mono" }, String(plan.tool || "?")),
        " (call #" + (plan.occurrence || 1) + ")");
    }
    if (cp) {
      plain.push(" · replayed from checkpoint ", h("span", { class: "mono" },
        String(cp.checkpoint_id)), " (after step " + at + ")");
    }
    var out = h("div", { class: "replay", "data-replay": i, "data-criterion": r.criterion },
      head, plain.length ? h("div", { class: "note" }, plain) : null);
    if (r.status && r.status !== "ok") {
      add(out, h("p", { class: "warning" }, "replay " + r.status + (r.message ? ": " +
        r.message : "")));
    }
    if (change && change.fault_result !== undefined) {
      add(out, h("div", { class: "note" }, "The result of step " + change.step_index + " (" +
        (change.tool_name || "") + ") was replaced by ", inlineJson(change.fault_result, 200)));
    }
    var recording = isTrajectory(d.trajectory) ? d.trajectory : null;
    var faulted = isTrajectory(r.fault_trajectory) ? r.fault_trajectory : null;
    if (recording || faulted) {
      var left = recording ? recording.steps.filter(function (s) { return s.index > at; }) : [];
      var right = faulted ? faulted.steps.filter(function (s) { return s.index > at; }) : [];
      var n = Math.max(left.length, right.length);
      var rows = [];
      for (var k = 0; k < n; k++) {
        var a = left[k], b = right[k];
        var differs = (r.steps_differ || [])[k] === true;  // compared in Python
        var isFault = change && b && b.index === change.step_index + 1;
        rows.push(h("tr", { class: differs ? "changed" : "" },
          h("td", { class: "path" }, String(at + k + 1)),
          h("td", null, a ? stepSummary(a) : h("span", { class: "empty-value" }, "(no step)")),
          h("td", null, b ? stepSummary(b) : h("span", { class: "empty-value" }, "(no step)"),
            isFault ? h("div", { class: "badges" }, h("span", { class: "badge bad" },
              "⚡ injected " + (change.fault || "fault"))) : null)));
      }
      add(out, h("div", { class: "table-scroll" }, h("table", { class: "replay-steps" },
        h("thead", null, h("tr", null, h("th", null, "#"),
          h("th", null, "recording (from the checkpoint)"),
          h("th", null, "replay with the fault"))),
        h("tbody", null, rows))));
      if (faulted) {
        var cons = faulted.constraints || [];
        add(out, h("div", { class: "badges" }, "replay ended: ",
          pill(String(faulted.terminal_status || "unknown"), "plain"),
          cons.length ? " constraints: " : null, cons.map(constraintBadge)));
      }
    }
    if (isTrajectory(r.control)) {
      add(out, h("details", null, h("summary", null, "control replay (no fault; steps " +
        "numbered from the checkpoint)"), renderTrajectory(r.control, null)));
    }
    if (r.end_state_patch !== undefined && r.end_state_patch !== null) {
      add(out, h("details", null, h("summary", null, "the sandbox after the fault replay, as a " +
        "change from the initial state"), h("pre", null, jsonText(r.end_state_patch, true))));
    }
    return out;
  }

  function stepSummary(step) {
    var line = h("div", { class: "step-line" });
    if (step.agent) add(line, agentBadge(String(step.agent)));
    add(line, h("span", { class: "kind " + step.kind }, String(step.kind)));
    if (step.kind === "handoff") add(line, "→ ", step.to_agent ? agentBadge(String(step.to_agent))
      : "?");
    if (step.tool_name) add(line, h("span", { class: "tool" }, String(step.tool_name)));
    var v = step.result !== null && step.result !== undefined ? step.result : step.arguments;
    return h("div", null, line, v !== null && v !== undefined ? h("div", { class: "step-body" },
      step.result !== null && step.result !== undefined ? h("span", { class: "lbl" }, "→") : null,
      inlineJson(v, 200)) : null);
  }

  function renderReplays(d) {
    return h("div", { id: "panel-replays" },
      h("h3", null, "Fault replays: the recording beside the replay from the checkpoint"),
      d.replays.map(function (r, i) { return renderReplay(d, r, i); }),
      h("p", { class: "note" }, "A replay shows what changed after the fault, never why."));
  }

  // ---- the comparison with a baseline (docs/compare.md#both-runs-side-by-side-the-html-report)

  var cmpEls = {};

  function baseRowOf(id) {
    for (var i = 0; i < BASE_INDEX.length; i++) if (BASE_INDEX[i][0] === id) return BASE_INDEX[i];
    return null;
  }

  function idList(ids) {
    if (!ids || !ids.length) return h("span", { class: "note" }, "none");
    return h("span", null, ids.map(function (id, i) {
      return [i ? ", " : null, h("span", { class: "mono" }, id)];
    }));
  }

  function changeRow(c, kind) {
    var part = c.parting;
    return h("tr", { class: kind === "broken" ? "row-failed" : "", "data-compare-case": c["case"] },
      h("td", { class: "cid" }, c["case"]),
      h("td", null, pill(kind, kind === "broken" ? "failed" : "passed")),
      h("td", null, (c.words || []).map(function (w) { return h("div", null, w); })),
      h("td", null, part ? [h("div", null, "step " + part.step +
        (part.action ? " (tool calls from call " + part.action + ")" : " (same tool calls)")),
        h("div", { class: "mono note" }, "baseline: " + (part.baseline === null ?
          "(no step: it had ended)" : part.baseline)),
        h("div", { class: "mono note" }, "candidate: " + (part.candidate === null ?
          "(no step: it had ended)" : part.candidate))] :
        h("span", { class: "note" }, "the same step by step")),
      h("td", null, h("button", { type: "button", class: "link",
        onclick: function () { location.hash = "#compare=" + encodeURIComponent(c["case"]); } },
        "both panels")));
  }

  function renderComparison() {
    if (!CMP) return null;
    var broken = {}, fixed = {};
    Object.keys(CMP.broken_cases || {}).forEach(function (k) {
      (CMP.broken_cases[k] || []).forEach(function (id) { broken[id] = true; });
    });
    Object.keys(CMP.fixed_cases || {}).forEach(function (k) {
      (CMP.fixed_cases[k] || []).forEach(function (id) { if (!broken[id]) fixed[id] = true; });
    });
    var changes = CMP.changes || [];
    var rows = changes.filter(function (c) { return broken[c["case"]]; }).map(function (c) {
      return changeRow(c, "broken");
    }).concat(changes.filter(function (c) { return fixed[c["case"]]; }).map(function (c) {
      return changeRow(c, "fixed");
    }));
    var nBroken = Object.keys(broken).length, nFixed = Object.keys(fixed).length;
    var described = changes.length;
    var criteria = (CMP.criteria || []).map(function (r) {
      return h("tr", { "data-criterion": r.criterion }, h("td", { class: "mono" }, r.criterion),
        h("td", null, fmtInt(r.paired)), h("td", null, fmtInt(r.both_passed)),
        h("td", null, fmtInt(r.fixed)),
        h("td", { class: r.broken ? "bad" : "" }, fmtInt(r.broken)),
        h("td", null, fmtInt(r.both_failed)), h("td", null, r.text.missing),
        h("td", { class: "mono" }, r.text.difference), h("td", null, r.text.p));
    });
    cmpEls.panel = h("div", { id: "compare-panel", class: "compare-panel" });
    return h("section", { id: "comparison" },
      h("h2", null, "Compared with baseline ", h("span", { class: "mono" }, CMP.baseline)),
      CMP.gate_used ? h("p", { id: "gate-baseline", class: "note" }, "The baseline this " +
        "run's gate was decided against (its non_inferiority rules paired these cases).") :
        null,
      h("p", { class: "note" }, "This run (candidate, " + CMP.candidate_system.name + " " +
        CMP.candidate_system.version + ") against the baseline (" + CMP.baseline_system.name +
        " " + CMP.baseline_system.version + "), cases paired by id. " + CMP.method_note),
      CMP.baseline_taken_text ? h("p", { class: "note", id: "baseline-taken" },
        CMP.baseline_taken_text) : null,
      (CMP.warnings || []).map(function (w) { return h("p", { class: "warning" }, "Warning: " + w); }),
      h("div", { class: "table-scroll" }, h("table", { id: "compare-criteria" },
        h("thead", null, h("tr", null, ["Criterion", "Paired", "Both passed", "Fixed", "Broken",
          "Both failed", "Missing", "Difference [interval]", "McNemar p"].map(function (c) {
          return h("th", null, c);
        }))), h("tbody", null, criteria))),
      h("h3", null, "Broken cases first (" + fmtInt(nBroken) + " broken, " + fmtInt(nFixed) +
        " fixed" + (described < nBroken + nFixed ? "; the first " + described + " described" :
        "") + ")"),
      rows.length ? h("div", { class: "table-scroll" }, h("table", { id: "compare-cases" },
        h("thead", null, h("tr", null, ["Case", "", "What changed", "Where the trajectories " +
          "part", ""].map(function (c) { return h("th", null, c); }))),
        h("tbody", null, rows))) : h("p", { class: "note" }, "No case broke or was fixed."),
      h("div", { class: "note" }, h("div", null, "Changed (input or expected changed; not " +
        "paired): ", idList(CMP.changed)), h("div", null, "In the baseline only: ",
        idList(CMP.baseline_only)), h("div", null, "In the candidate only: ",
        idList(CMP.candidate_only))),
      cmpEls.panel);
  }

  var compareToken = 0;

  function openCompare(id) {
    var panel = cmpEls.panel;
    if (!panel) return;
    var token = ++compareToken;
    var pos = positionOf(id), brow = baseRowOf(id);
    clear(panel);
    add(panel, h("p", { class: "note" }, "Reading case " + id + " in both runs…"));
    var sides = [brow ? loadRow(brow, CMP.baseline) : Promise.resolve(null),
      pos >= 0 ? loadCase(pos) : Promise.resolve(null)];
    Promise.all(sides).then(function (details) {
      if (token !== compareToken) return;
      clear(panel);
      panel.setAttribute("data-case", id);
      add(panel, h("h3", null, "Case ", h("span", { class: "mono" }, id), " in both runs"),
        h("div", { class: "side-by-side" },
          h("div", { class: "panel", "data-side": "baseline" }, details[0] ?
            renderPanel(details[0], -1, { row: brow, label: "baseline " + CMP.baseline }) :
            h("p", { class: "note" }, "Not in the baseline's embedded cases.")),
          h("div", { class: "panel", "data-side": "candidate" }, details[1] ?
            renderPanel(details[1], pos, { label: "candidate " + CMP.candidate }) :
            h("p", { class: "note" }, "Not in this run."))));
      panel.scrollIntoView();
    }, function (err) {
      if (token !== compareToken) return;
      clear(panel);
      add(panel, h("div", { class: "error-box" }, h("div", { class: "msg" }, String(err.message ||
        err))));
    });
  }

  // ---- start --------------------------------------------------------------------------------

  function onHash() {
    var c = /^#compare=(.*)$/.exec(location.hash);
    if (c) {
      try { openCompare(decodeURIComponent(c[1])); } catch (e) { /* a malformed hash */ }
      return;
    }
    var m = /^#case=(.*)$/.exec(location.hash);
    if (!m) return;
    var id;
    try { id = decodeURIComponent(m[1]); } catch (e) { return; }
    var pos = positionOf(id);
    openCase(pos, true);
    if (pos < 0) scrollToPanel(listEls.panel);
  }

  /* A rescored run (docs/cli.md#oloproof-rescore): the run it scored, the cases it left out. */
  function renderRescored() {
    if (!S.rescored_from) return null;
    var groups = S.not_rescored_groups || [];
    return h("section", { id: "rescored" },
      h("p", null, "Rescored from ", h("span", { class: "mono" }, S.rescored_from),
        ": its stored outputs scored by the suite's current evaluators and judges; no " +
        "system was called."),
      groups.length ? [h("p", { class: "warning" }, "Not rescored: " +
        fmtInt((S.not_rescored || []).length) + " case(s)"),
        h("ul", { id: "not-rescored" }, groups.map(function (g) {
          return h("li", null, g.words + ": ", idList(g.cases));
        }))] : null);
  }

  /* Everything above the case list, drawn from the summary. */
  function renderSummary() {
    var part = h("div", { id: "summary-part" });
    add(part, renderRescored());
    add(part, renderErrors(S.what_broke));
    add(part, renderSimulatorFailures(S.conversations));
    (S.warnings || []).forEach(function (w) { add(part, h("p", { class: "warning" }, "Warning: " + w)); });
    // Which of several complete runs of its suite and version this run is (report/reruns.py).
    if (S.record_text) add(part, h("section", { id: "record" }, S.record_text.map(function (l, i) {
      return h("p", { class: i === 0 && S.record.no_cache && S.record.run > 1 ? "warning" : "note" }, l);
    })));
    add(part, [renderDecisions(), renderComparison(), renderMetrics(), renderReliability(),
      renderExclusions(), renderJudgeChecks(), renderTransforms(), renderSlices()]);
    if (S.executions_text) add(part, [h("h2", null, "Executions"),
      h("p", { id: "executions", class: "mono" }, S.executions_text)]);
    if (S.conversations_text) add(part, [h("h2", null, "Conversations"),
      h("p", { id: "conversations", class: "mono" }, S.conversations_text)]);
    add(part, [h("h2", null, "Cache"), renderCache()]);
    if (S.usage_text) add(part, [h("h2", null, "Usage"), h("p", { id: "usage", class: "mono" }, S.usage_text)]);
    return part;
  }

  function draw() {
    var app = document.getElementById("app");
    clear(app);
    add(app, renderHeader());
    var main = h("main", { class: "wrap" });
    if (LIVE) add(main, renderProgress(progress));
    add(main, renderSummary());
    add(main, renderCases());
    add(main, renderLimits());
    add(app, main);
    applyFilters();
    onHash();
  }

  // ---- a run in progress (served by `oloproof view`) --------------------------------------

  var progress = null;     // the view's last answer to /progress
  var drawnFor = "";       // the progress the figures on the page were read at
  var figuresAt = 0;       // when the figures were last asked for (performance.now())

  function duration(seconds) {
    if (typeof seconds !== "number" || !isFinite(seconds)) return null;
    var t = Math.max(0, Math.round(seconds));
    if (t < 60) return t + " s";
    var m = Math.floor(t / 60);
    if (m < 60) return m + " min " + (t % 60) + " s";
    return Math.floor(m / 60) + " h " + (m % 60) + " min";
  }

  /* Cases done of the planned total, errored executions by kind, retried, a time to finish:
   * the view's /progress answer (counted from the rows the run stored), drawn as it is. */
  function renderProgress(p) {
    var sec = h("section", { id: "progress", class: "progress", "aria-live": "polite" },
      h("h2", null, "Running ", h("span", { class: "sub running" }, "— not decided")));
    if (!p) {
      add(sec, h("p", { class: "note" }, "Reading the run's progress…"));
      return sec;
    }
    sec.setAttribute("data-done", String(p.done));
    var kinds = Object.keys(p.errored_by_kind || {});
    var known = typeof p.total === "number";
    var eta = duration(p.eta_seconds);
    add(sec, h("div", { class: "progress-line" },
      known ? h("progress", { value: p.done, max: Math.max(p.total, 1) }) : null,
      h("strong", { id: "progress-done" }, fmtInt(p.done) + (known ? " of " + fmtInt(p.total) :
        "") + " cases done"),
      p.trials > 1 ? " · " + fmtInt(p.executions.done) + (known ? " of " +
        fmtInt(p.executions.total) : "") + " executions (" + p.trials + " trials a case)" : null),
      h("ul", { class: "progress-facts" },
        h("li", { id: "progress-errored" }, "errored: " + fmtInt(p.errored) + (kinds.length ?
          " (" + kinds.map(function (k) { return k + " " + fmtInt(p.errored_by_kind[k]); })
            .join(", ") + ")" : "")),
        h("li", { id: "progress-retried" }, "retried: " + (typeof p.retried === "number" ?
          fmtInt(p.retried) : "counted when the run ends")),
        h("li", { id: "progress-eta" }, "time to finish: " + (eta ? "about " + eta :
          "not known yet")),
        h("li", null, "running for " + (duration(p.elapsed_seconds) || "—"))),
      p.note ? h("p", { class: "warning" }, p.note) : null);
    return sec;
  }

  function setData(data) {
    META.generated_at = Date.now() / 1000;
    S = data.summary;
    INDEX = data.index;
    BASE_INDEX = data.baseline_index || [];
    CMP = S.comparison || null;
    LIVE = !!META.live && S.status === "running";
    BY_ID = null;
    indexRules();
  }

  function replaceEl(old, el) { if (old) old.replaceWith(el); }

  /* The progress every 0.4 s; when more is stored, the figures so far every other time (the
   * same summary the page was drawn from, read again: for a large run, the dearer answer), so
   * both are redrawn at least once a second; once the run has ended, the page whole. */
  function poll() {
    var base = META.served + "runs/" + encodeURIComponent(S.run_id);
    fetchJson(base + "/progress").then(function (p) {
      progress = p;
      var key = p.status + "|" + p.executions.done + "|" + p.errored;
      var now = performance.now();
      if (key === drawnFor || (p.status === "running" && now - figuresAt < 600)) {
        replaceEl(document.getElementById("progress"), renderProgress(p));
        return null;
      }
      figuresAt = now;
      return fetchJson(base + "/report").then(function (data) {
        drawnFor = key;
        setData(data);
        if (!LIVE) { draw(); return; }
        replaceEl(document.querySelector("header.top"), renderHeader());
        replaceEl(document.getElementById("progress"), renderProgress(p));
        replaceEl(document.getElementById("summary-part"), renderSummary());
        applyFilters();
      });
    }).catch(function (err) {
      var sec = document.getElementById("progress");
      if (sec) add(sec, h("p", { class: "warning" }, "The view did not answer (" +
        String(err.message || err) + "); trying again."));
    }).then(function () { if (LIVE) setTimeout(poll, 400); });
  }

  function start() {
    var app = document.getElementById("app");
    draw();
    window.addEventListener("hashchange", onHash);
    window.addEventListener("beforeprint", function () {
      Array.prototype.forEach.call(document.querySelectorAll("details:not([open])"), function (d) {
        d.setAttribute("open", ""); d.setAttribute("data-print-opened", "");
      });
      Array.prototype.forEach.call(document.querySelectorAll("pre[data-full]"), function (p) {
        p.textContent = p._full;
      });
    });
    window.addEventListener("afterprint", function () {
      Array.prototype.forEach.call(document.querySelectorAll("details[data-print-opened]"),
        function (d) { d.removeAttribute("open"); d.removeAttribute("data-print-opened"); });
    });
    if (LIVE) poll();
    if (META.focus && !location.hash && document.getElementById(META.focus)) {
      document.getElementById(META.focus).scrollIntoView({ block: "start" });
    }
    app.removeAttribute("aria-busy");
    app.setAttribute("data-ready", "1");
    window.__oloproofReady = performance.now();
  }

  start();
})();
