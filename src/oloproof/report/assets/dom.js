/* The DOM helpers of Oloproof's pages (the HTML report and `oloproof view`): text only.
 *
 * Every value that came from a case or a system is untrusted. It reaches a page only as text:
 * elements are made with createElement/textContent/setAttribute, never with innerHTML.
 * `oloproofDom(unsafe)` returns the helpers; `unsafe` is the pattern of the characters shown
 * escaped (the terminal's definition, handed over by the page's data).
 */
function oloproofDom(unsafe) {
  "use strict";

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      for (var key in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, key)) continue;
        var v = attrs[key];
        if (v === null || v === undefined || v === false) continue;
        if (key === "class") el.className = v;
        else if (key === "text") addOne(el, String(v));
        else if (key.slice(0, 2) === "on" && typeof v === "function") {
          el.addEventListener(key.slice(2), v);
        } else el.setAttribute(key, v === true ? "" : String(v));
      }
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }

  /* Append children (text, nodes, arrays of them; null/false skipped) to `el`. */
  function add(el) {
    for (var a = 1; a < arguments.length; a++) addOne(el, arguments[a]);
  }

  function addOne(el, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) {
      for (var i = 0; i < child.length; i++) addOne(el, child[i]);
      return;
    }
    if (typeof child === "string" || typeof child === "number") {
      addText(el, String(child));
      return;
    }
    el.appendChild(child);
  }

  /* Text, with each character that would change how the text around it looks without being
   * seen (a bidi override turns `trip-\u202egnp.exe` into `trip-exe.png`; a zero-width space
   * hides in an id) shown as a marked `\uXXXX`, as the terminal shows it. */
  var UNSAFE = new RegExp(unsafe, "g");
  function addText(el, text) {
    UNSAFE.lastIndex = 0;
    if (!UNSAFE.test(text)) { el.appendChild(document.createTextNode(text)); return; }
    UNSAFE.lastIndex = 0;
    var at = 0, m;
    while ((m = UNSAFE.exec(text)) !== null) {
      if (m.index > at) el.appendChild(document.createTextNode(text.slice(at, m.index)));
      var code = "\\u" + ("000" + m[0].charCodeAt(0).toString(16)).slice(-4);
      var mark = document.createElement("span");
      mark.className = "unsafe-char";
      mark.title = "an invisible or direction-changing character (" + code.slice(1).toUpperCase()
        .replace("U", "U+") + "), shown escaped";
      mark.textContent = code;
      el.appendChild(mark);
      at = m.index + m[0].length;
    }
    if (at < text.length) el.appendChild(document.createTextNode(text.slice(at)));
  }

  var SVGNS = "http://www.w3.org/2000/svg";
  function s(tag, attrs) {
    var el = document.createElementNS(SVGNS, tag);
    for (var key in attrs) {
      if (key === "text") el.textContent = attrs[key];
      else el.setAttribute(key, String(attrs[key]));
    }
    return el;
  }

  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

  function fmtInt(n) { return Number(n).toLocaleString("en-US"); }

  function pill(text, cls) { return h("span", { class: "pill " + (cls || text) }, text); }

  return { h: h, add: add, s: s, clear: clear, fmtInt: fmtInt, pill: pill };
}
