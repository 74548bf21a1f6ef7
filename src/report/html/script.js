// ctxbench report: sortable, filterable tables; state in the URL fragment
// (#sort=TABLE:COLUMN:asc|desc&filter=TABLE:TEXT). Moves, hides and labels existing elements
// only; text is written with textContent, never parsed as markup.
(function () {
  "use strict";
  var tables = {};
  var state = { sort: {}, filter: {} };

  function cellKey(td) {
    if (!td) return null;
    var v = td.getAttribute("data-v");
    if (v !== null && v !== "" && !isNaN(parseFloat(v))) return parseFloat(v);
    var t = td.textContent.trim();
    if (t === "" || t === "\u2013") return null;
    var n = Number(t);
    return isNaN(n) ? t.toLowerCase() : n;
  }

  function compare(a, b) {
    if (a === null || b === null) return a === b ? 0 : (a === null ? 1 : -1);
    var na = typeof a === "number", nb = typeof b === "number";
    if (na && nb) return a - b;
    if (na !== nb) return na ? -1 : 1;
    return a.localeCompare(b, undefined, { numeric: true });
  }

  function columnIndex(t, col) {
    var c = String(col).toLowerCase();
    for (var i = 0; i < t.heads.length; i++) {
      if (t.heads[i].textContent.trim().toLowerCase() === c) return i;
    }
    return -1;
  }

  function sortTable(t, col, dir) {
    var i = columnIndex(t, col);
    if (i < 0) return false;
    var sign = dir === "desc" ? -1 : 1;
    var rows = t.rows.map(function (r, k) { return { r: r, k: k, v: cellKey(r.cells[i]) }; });
    rows.sort(function (x, y) {
      if (x.v === null || y.v === null) return compare(x.v, y.v) || x.k - y.k;
      return sign * compare(x.v, y.v) || x.k - y.k;
    });
    rows.forEach(function (x) { t.body.appendChild(x.r); });
    t.heads.forEach(function (h, k) {
      if (k === i) h.setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
      else h.removeAttribute("aria-sort");
    });
    state.sort[t.id] = t.heads[i].textContent.trim() + ":" + (dir === "desc" ? "desc" : "asc");
    return true;
  }

  function filterTable(t, text) {
    var terms = text.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    t.rows.forEach(function (r) {
      var all = r.textContent.toLowerCase();
      var ok = terms.every(function (term) {
        var eq = term.indexOf("=");
        if (eq > 0) {
          var i = columnIndex(t, term.slice(0, eq));
          if (i >= 0 && r.cells[i]) return r.cells[i].textContent.trim().toLowerCase() === term.slice(eq + 1);
        }
        return all.indexOf(term) >= 0;
      });
      r.hidden = !ok;
      if (ok) shown++;
    });
    t.input.value = text;
    t.count.textContent = terms.length ? shown + " of " + t.rows.length + " rows" : t.rows.length + " rows";
    if (terms.length) state.filter[t.id] = text; else delete state.filter[t.id];
  }

  function saveState() {
    var p = new URLSearchParams();
    Object.keys(state.sort).forEach(function (id) { p.append("sort", id + ":" + state.sort[id]); });
    Object.keys(state.filter).forEach(function (id) { p.append("filter", id + ":" + state.filter[id]); });
    try { history.replaceState(null, "", "#" + p.toString()); } catch (e) { /* file: URL rules */ }
  }

  function setup(table) {
    var body = table.tBodies[0];
    if (!table.tHead || !body) return;
    var t = {
      id: table.id, el: table, body: body,
      heads: Array.prototype.slice.call(table.tHead.rows[0].cells),
      rows: Array.prototype.slice.call(body.rows)
    };
    t.heads.forEach(function (h) {
      h.tabIndex = 0;
      h.title = "sort by this column";
      var go = function () {
        var asc = h.getAttribute("aria-sort") !== "ascending";
        sortTable(t, h.textContent.trim(), asc ? "asc" : "desc");
        saveState();
      };
      h.addEventListener("click", go);
      h.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); }
      });
    });
    var box = document.createElement("div");
    box.className = "filterbox";
    t.input = document.createElement("input");
    t.input.type = "search";
    t.input.placeholder = "filter: words or column=value";
    t.input.setAttribute("aria-label", "filter the rows of " + t.id);
    t.count = document.createElement("span");
    t.count.textContent = t.rows.length + " rows";
    t.input.addEventListener("input", function () { filterTable(t, t.input.value); saveState(); });
    box.appendChild(t.input);
    box.appendChild(t.count);
    var anchor = table.parentNode.classList.contains("scroll") ? table.parentNode : table;
    anchor.parentNode.insertBefore(box, anchor);
    tables[t.id] = t;
  }

  function openTarget(id) {
    var el = document.getElementById(id);
    if (!el) return;
    for (var p = el; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
    el.scrollIntoView();
  }

  function applyHash(scroll) {
    var raw = location.hash.slice(1);
    if (!raw) return;
    if (raw.indexOf("=") < 0) {
      try { openTarget(decodeURIComponent(raw)); } catch (e) { /* not an element id */ }
      return;
    }
    var p = new URLSearchParams(raw);
    var first = null;
    p.getAll("sort").forEach(function (s) {
      var a = s.indexOf(":"), z = s.lastIndexOf(":");
      var t = tables[s.slice(0, a)];
      if (t && z > a && sortTable(t, s.slice(a + 1, z), s.slice(z + 1))) first = first || t;
    });
    p.getAll("filter").forEach(function (s) {
      var a = s.indexOf(":");
      var t = tables[s.slice(0, a)];
      if (t) { filterTable(t, s.slice(a + 1)); first = first || t; }
    });
    if (scroll && first) first.el.scrollIntoView();
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.data[id]"), setup);
  applyHash(true);
  window.addEventListener("hashchange", function () { applyHash(true); });
})();
