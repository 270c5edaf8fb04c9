"""The report page's style sheet and its one script (sorting, filtering, the metric picker; no requests).

Colour carries meaning in one way only: green is better and red is worse for the metric in question (lower is
better for latency, tokens and cost), and only where a test says the move is significant. Cell backgrounds are
set on cells, row striping on rows, so a marked cell keeps its colour on every row.
"""

from __future__ import annotations

CSS = """
:root{--fg:#1d232b;--muted:#5b6673;--line:#d7dde4;--bg:#fff;--alt:#f5f7fa;--good:#17753a;--bad:#b3261e;
--goodbg:#e2f2e6;--badbg:#fbe3e1;--accent:#2557a7}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);
margin:0 auto;max-width:1400px;padding:24px}
@media (max-width:700px){body{padding:10px;font-size:13px}input#filter{width:100%}}
h1{font-size:22px;margin:0 0 4px;overflow-wrap:anywhere}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.meta{color:var(--muted);font-size:12.5px;overflow-wrap:anywhere}.meta code{font-size:12px}
.qrels-provenance{padding-left:18px}.qrels-provenance .warn{color:#8a4b00}
ul.verdict .warn{color:#8a4b00;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto;max-width:100%}
@media (max-width:700px){.scroll::before{content:"\\2194  scrolls sideways";display:block;position:sticky;left:0;font-size:11px;color:#5b6673;padding:2px 4px}}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:right;vertical-align:top}
th{background:var(--alt);font-weight:600}td.l,th.l{text-align:left}
tbody tr:nth-child(even){background:#fafbfc}
td.better{background:var(--goodbg)}td.worse{background:var(--badbg)}
tr.better td{background:var(--goodbg)}tr.worse td{background:var(--badbg)}
.best{font-weight:700}.up{color:var(--good);font-weight:700}.down{color:var(--bad);font-weight:700}
.runlabel{color:var(--muted);font-weight:400;font-size:12px}
.gate{padding:10px 14px;border-radius:6px;margin:14px 0;border:1px solid}
.gate.ok{border-color:#9cc9a8;background:#f0f8f2}.gate.fail{border-color:#e3a29c;background:#fdf1f0}
.gate table{background:#fff}
.gate h3{margin:0 0 6px;font-size:15px}.legend{color:var(--muted);font-size:12.5px;margin:4px 0}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(360px,100%),1fr));gap:10px}
.plots figure{margin:0}img.plot{width:100%;border:1px solid var(--line);border-radius:4px}
.plots figure.wide{grid-column:1/-1;max-width:1100px}.plotgroup .plots{padding:8px}
details{border:1px solid var(--line);border-radius:4px;margin:4px 0;background:#fff}
summary{cursor:pointer;padding:6px 10px;list-style-position:inside;overflow-wrap:anywhere}
summary .qid,a.qid{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;color:var(--accent);margin-right:8px}
.drill{padding:4px 12px 10px}.drill p{margin:4px 0}.reason{color:var(--muted);font-size:12.5px}
.verdicts{font-size:12px;color:var(--muted);margin:2px 0 6px 0;padding-left:18px}
.claims td.hit{color:#1a7f37;font-weight:600}.claims td.miss{color:#c0c6cc}.claims .rel{font-size:10px;color:#1a7f37}
.claims tr.reference td:first-child{color:#6e5494}.diagnostics{font-size:12px;margin:2px 0 8px 0}
.failed{color:var(--bad)}ul.notes{color:var(--muted);font-size:12.5px}
input#filter,select#metric{padding:5px 8px;border:1px solid var(--line);border-radius:4px;font:inherit}
input#filter{width:320px}
table.sortable th.key{cursor:pointer;user-select:none}
table.sortable th.key:after{content:" \\2195";color:var(--muted);font-weight:400}
table.sortable th[aria-sort=ascending]:after{content:" \\25B2"}
table.sortable th[aria-sort=descending]:after{content:" \\25BC"}
td.q{max-width:420px;text-align:left;overflow-wrap:anywhere}
td.turntext{min-width:16em;max-width:480px;text-align:left;overflow-wrap:anywhere}
td.tid{white-space:nowrap;text-align:left}
"""

SCRIPT = """
(function () {
  var filter = document.getElementById('filter');
  var table = document.getElementById('perquery');
  var picker = document.getElementById('metric');
  function applyFilter() {
    var text = filter ? filter.value.toLowerCase() : '', shown = 0;
    document.querySelectorAll('details.query').forEach(function (d) {
      var hit = !text || d.getAttribute('data-search').indexOf(text) >= 0;
      d.style.display = hit ? '' : 'none'; if (hit) shown++;
    });
    if (table) table.querySelectorAll('tbody tr').forEach(function (r) {
      r.style.display = !text || r.getAttribute('data-search').indexOf(text) >= 0 ? '' : 'none';
    });
    var counter = document.getElementById('shown'); if (counter) counter.textContent = shown;
  }
  function showMetric() {
    if (!table || !picker) return;
    var want = picker.value;
    table.querySelectorAll('[data-m]').forEach(function (c) {
      c.style.display = want === 'all' || c.getAttribute('data-m') === want ? '' : 'none';
    });
  }
  function sortBy(th) {
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('thead th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    var numeric = th.getAttribute('data-type') === 'num';
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
      if (numeric) {
        var missingX = x === null || x === '', missingY = y === null || y === '';
        if (missingX || missingY) return missingX === missingY ? 0 : (missingX ? 1 : -1);
        return asc ? parseFloat(x) - parseFloat(y) : parseFloat(y) - parseFloat(x);
      }
      return asc ? String(x).localeCompare(String(y)) : String(y).localeCompare(String(x));
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (target && target.tagName === 'DETAILS') target.open = true;
  }
  if (filter) filter.addEventListener('input', applyFilter);
  if (picker) { picker.addEventListener('change', showMetric); showMetric(); }
  if (table) table.querySelectorAll('thead th.key').forEach(function (th) {
    th.addEventListener('click', function () { sortBy(th); });
  });
  window.addEventListener('hashchange', openTarget); openTarget();
  document.documentElement.setAttribute('data-ready', '1');
})();
"""
