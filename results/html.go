package results

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
)

// htmlData is what the report template renders; Data is the JSON the
// inline script draws the charts from.
type htmlData struct {
	Run    *Run
	Status string
	// Verdict is Run.Decide for a finished run, "" otherwise.
	Verdict string
	Origin  string
	Arms    []htmlArm
	Data    template.JS
	Script  template.JS
	Notes   []string
}

type htmlArm struct {
	Index int
	Arm   *Arm
	// Observation lists an inconclusive arm's reasons and fixes.
	Observation []string
	Phases      [][]string
	Trans       [][]string
	Compare     [][]string
}

// reportData is the JSON embedded in report.html.
type reportData struct {
	Experiment string      `json:"experiment"`
	Complete   bool        `json:"complete"`
	Arms       []ArmSeries `json:"arms"`
}

// WriteHTML writes report.html for rec: one self-contained file (inline CSS,
// inline script drawing SVG charts, no network) with, per arm, the breaker
// state as bands over time, failure and slow-call rates against their
// thresholds, request outcomes per second, latency percentiles per second and
// each OPEN with its cause. The chart data sits in a
// <script type="application/json" id="cbprobe-data"> element, escaped so that
// no string can close it. Once drawn, the page sets
// data-charts-rendered="N" on <body>; script errors go to #script-errors.
func WriteHTML(w io.Writer, rec *Record) error {
	run := &rec.Run
	d := htmlData{Run: run, Status: runStatus(run), Notes: rec.Warnings}
	if run.Complete {
		d.Verdict = run.Decide()
	}
	if t0 := rec.Origin(); !t0.IsZero() {
		d.Origin = t0.UTC().Format("2006-01-02 15:04:05.000Z")
	}
	rd := reportData{Experiment: run.Experiment, Complete: run.Complete, Arms: []ArmSeries{}}
	for i := range run.Arms {
		a := &run.Arms[i]
		rd.Arms = append(rd.Arms, rec.Series(i))
		ha := htmlArm{Index: i, Arm: a, Observation: observationLines(a)}
		phases := append([]PhaseStats{}, a.Phases...)
		if len(phases) > 1 {
			phases = append(phases, a.Totals())
		}
		for j, p := range phases {
			r := phaseRate(p, j == len(a.Phases))
			ha.Phases = append(ha.Phases, []string{p.Name, r, strconv.Itoa(p.Planned), strconv.Itoa(p.Sent),
				countShare(p.Succeeded, p.Sent), countShare(p.Rejected, p.Sent), countShare(p.Failed, p.Sent),
				strconv.Itoa(p.Dropped), strconv.Itoa(p.Late)})
		}
		for _, t := range a.Transitions {
			ev := ""
			if t.Cause != "" {
				ev = causeEvidence(t.Evidence)
			}
			ha.Trans = append(ha.Trans, []string{relTime(t.At, rec.Origin()), t.From + " → " + t.To, orDash(t.Cause), ev, t.Uncertainty})
		}
		for _, c := range a.Comparisons {
			u := unitSuffix(c.Unit)
			band := "inside"
			if c.OutsideBand {
				band = "outside"
			}
			ha.Compare = append(ha.Compare, []string{c.Metric, num(c.Measured) + u, num(c.PredictedP5) + u,
				num(c.PredictedP50) + u, num(c.PredictedP95) + u, band, c.Note})
		}
		d.Arms = append(d.Arms, ha)
	}
	// json.Marshal escapes <, > and & (and U+2028/2029) as \u00XX, so no
	// string in the data can end the <script> element it sits in.
	raw, err := json.Marshal(rd)
	if err != nil {
		return fmt.Errorf("encode report data: %w", err)
	}
	d.Data = template.JS(raw) // #nosec: escaped JSON, see above
	d.Script = template.JS(reportScript)
	t, err := template.New("report").Funcs(template.FuncMap{
		"seq": seqOrNone, "firstOpen": firstOpenText, "firstRejected": firstRejectedText, "num": num, "detail": expectationDetail,
	}).Parse(reportTemplate)
	if err != nil {
		return fmt.Errorf("parse report template: %w", err)
	}
	if err := t.Execute(w, d); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

const reportTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cbprobe {{.Run.Experiment}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:960px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.left td{text-align:left}
.status{font-weight:bold}.partial{color:#b26a00}.complete{color:#2e7d32}
.ok{color:#2e7d32}.fail{color:#c62828}.warn{color:#b26a00}
figure{margin:.4em 0}figcaption{font-weight:600;font-size:.95em}
svg.chart{max-width:100%;height:auto;background:#fafafa;border:1px solid #eee}
svg text{font:11px system-ui,sans-serif;fill:#333}
#script-errors{color:#c62828;white-space:pre-wrap}#script-errors:empty{display:none}
.legend span{display:inline-block;margin-right:1em}.sw{display:inline-block;width:10px;height:10px;margin-right:4px}
</style>
</head>
<body data-charts-rendered="0">
<pre id="script-errors"></pre>
<script>
window.onerror = function (msg, src, line, col) {
  var e = document.getElementById('script-errors');
  e.textContent += 'script error: ' + msg + ' (line ' + line + ':' + col + ')\n';
  document.body.setAttribute('data-script-error', '1');
};
</script>
<h1>cbprobe {{.Run.Experiment}}</h1>
{{with .Run.Description}}<p>{{.}}</p>{{end}}
<p class="status {{if .Run.Complete}}complete{{else}}partial{{end}}">{{.Status}}{{with .Verdict}} · verdict <b>{{.}}</b>{{end}}</p>
<p>{{with .Run.Target}}target <code>{{.}}</code> · {{end}}{{with .Origin}}started {{.}} · {{end}}times are seconds from the start</p>
{{if not .Run.Complete}}<p class="warn">This run is not complete: it shows what was measured before it stopped.</p>{{end}}
{{with .Run.Expectations}}<h2>Expectations</h2>
<table class="left"><tr><th></th><th>expectation</th><th>detail</th></tr>
{{range .}}<tr><td class="{{if .Inconclusive}}partial{{else if .OK}}ok{{else}}fail{{end}}">{{if .Inconclusive}}❔ inconclusive{{else if .OK}}✅ pass{{else}}❌ fail{{end}}</td><td><code>{{.Expr}}</code></td><td>{{detail .}}</td></tr>
{{end}}</table>{{end}}
{{range .Arms}}<section class="arm" id="arm-{{.Index}}">
<h2>Arm {{.Arm.Name}}</h2>
{{with .Arm.Description}}<p>{{.}}</p>{{end}}
{{with .Observation}}<div class="warn"><b>Inconclusive</b>: cbprobe could not observe this breaker well enough to judge it.<ul>{{range .}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
<p>{{firstOpen .Arm}} · {{firstRejected .Arm}}{{if .Arm.AttemptsPerRequest}} · attempts per request {{num .Arm.AttemptsPerRequest}}{{end}}{{with .Arm.Breaker}} · breaker <code>{{.}}</code>{{end}}</p>
<table><tr><th>phase</th><th>rate</th><th>planned</th><th>sent</th><th>succeeded</th><th>rejected</th><th>failed</th><th>dropped</th><th>late</th></tr>
{{range .Phases}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{if .Trans}}<table class="left transitions"><tr><th>at</th><th>transition</th><th>cause</th><th>evidence</th><th>uncertainty</th></tr>
{{range .Trans}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{else}}<p>No breaker transitions were observed.</p>{{end}}
{{if .Compare}}<table class="comparisons"><tr><th>metric</th><th>measured</th><th>predicted p5</th><th>p50</th><th>p95</th><th>band</th><th>note</th></tr>
{{range .Compare}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<div class="charts" data-arm="{{.Index}}"></div>
{{range .Arm.Notes}}<p>{{.}}</p>{{end}}
</section>
{{end}}
{{with .Run.Findings}}<h2>Findings</h2><ul>
{{range .}}<li><b>{{.Title}}</b> (<code>{{.ID}}</code>{{with .Severity}}, {{.}}{{end}}{{with .Arm}}, arm {{.}}{{end}}){{with .Detail}}: {{.}}{{end}}
{{if .Evidence}}<ul>{{range .Evidence}}<li>{{.}}</li>{{end}}</ul>{{end}}{{with .Fix}}<div>Fix: {{.}}</div>{{end}}</li>
{{end}}</ul>{{end}}
{{if or .Run.Warnings .Notes}}<h2>Measurement warnings</h2><ul>{{range .Run.Warnings}}<li>{{.}}</li>{{end}}{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<script type="application/json" id="cbprobe-data">{{.Data}}</script>
<script>{{.Script}}</script>
</body>
</html>
`

// reportScript draws the charts from #cbprobe-data with plain DOM and SVG calls.
const reportScript = `
(function () {
  'use strict';
  var NS = 'http:/' + '/www.w3.org/2000/svg';
  var COLORS = {CLOSED: '#2e7d32', OPEN: '#c62828', HALF_OPEN: '#f9a825', FORCED_OPEN: '#6a1b9a', DISABLED: '#9e9e9e', METRICS_ONLY: '#607d8b'};
  var W = 900, M = {l: 52, r: 16, t: 16, b: 26};
  var rendered = 0;

  function report(msg) {
    document.getElementById('script-errors').textContent += msg + '\n';
    document.body.setAttribute('data-script-error', '1');
  }
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function text(parent, x, y, s, attrs) {
    var a = {x: x, y: y};
    for (var k in (attrs || {})) { a[k] = attrs[k]; }
    var t = el('text', a, parent);
    t.textContent = s;
    return t;
  }
  function tip(parent, s) { el('title', {}, parent).textContent = s; }
  function step(max) {
    var raw = max / 6, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function fmt(v) { return Math.abs(v) >= 100 ? v.toFixed(0) : String(Math.round(v * 10) / 10); }

  // chart makes one SVG chart with axes; x is seconds in [0, xmax], y in [0, ymax].
  function chart(box, title, xmax, ymax, h, yunit, legend) {
    var fig = document.createElement('figure');
    var cap = document.createElement('figcaption');
    cap.textContent = title;
    fig.appendChild(cap);
    if (legend) {
      var lg = document.createElement('div');
      lg.className = 'legend';
      legend.forEach(function (l) {
        var s = document.createElement('span'), sw = document.createElement('i');
        sw.className = 'sw'; sw.style.background = l[1];
        s.appendChild(sw); s.appendChild(document.createTextNode(l[0]));
        lg.appendChild(s);
      });
      fig.appendChild(lg);
    }
    var svg = el('svg', {viewBox: '0 0 ' + W + ' ' + h, width: W, height: h, 'class': 'chart', role: 'img', 'aria-label': title});
    fig.appendChild(svg);
    box.appendChild(fig);
    var c = {
      svg: svg, h: h,
      x: function (t) { return M.l + (W - M.l - M.r) * Math.max(0, Math.min(t, xmax)) / xmax; },
      y: function (v) { return h - M.b - (h - M.t - M.b) * Math.max(0, Math.min(v, ymax)) / ymax; }
    };
    var xs = step(xmax);
    for (var t = 0; t <= xmax + 1e-9; t += xs) {
      el('line', {x1: c.x(t), x2: c.x(t), y1: M.t, y2: h - M.b, stroke: '#e4e4e4'}, svg);
      text(svg, c.x(t), h - M.b + 14, fmt(t) + 's', {'text-anchor': 'middle'});
    }
    if (yunit !== null) {
      var ys = step(ymax);
      for (var v = 0; v <= ymax + 1e-9; v += ys) {
        el('line', {x1: M.l, x2: W - M.r, y1: c.y(v), y2: c.y(v), stroke: '#e4e4e4'}, svg);
        text(svg, M.l - 4, c.y(v) + 4, fmt(v) + yunit, {'text-anchor': 'end'});
      }
    }
    el('line', {x1: M.l, y1: h - M.b, x2: W - M.r, y2: h - M.b, stroke: '#666'}, svg);
    el('line', {x1: M.l, y1: M.t, x2: M.l, y2: h - M.b, stroke: '#666'}, svg);
    rendered++;
    return c;
  }
  function opens(c, arm, label) {
    arm.opens.forEach(function (o) {
      var g = el('g', {'class': 'open-mark'}, c.svg);
      el('line', {x1: c.x(o.t), x2: c.x(o.t), y1: M.t - 4, y2: c.h - M.b, stroke: '#c62828', 'stroke-dasharray': '4 3'}, g);
      if (label) { text(g, c.x(o.t) + 3, M.t - 5, o.cause || 'unknown', {fill: '#c62828'}); }
      tip(g, o.from + ' → ' + o.to + ' at ' + fmt(o.t) + 's: ' + (o.cause || 'unknown') + (o.evidence ? ' (' + o.evidence + ')' : '') + (o.uncertainty ? ' ⚠ ' + o.uncertainty : ''));
    });
  }
  function line(c, pts, color, gap) {
    // pts: [[t, v], ...]; a negative v (unknown) or a time gap above gap seconds breaks the line.
    var seg = [], last = null;
    function flush() {
      if (seg.length) { el('polyline', {points: seg.join(' '), fill: 'none', stroke: color, 'stroke-width': 1.6}, c.svg); }
      seg = [];
    }
    pts.forEach(function (p) {
      if (gap && last !== null && p[0] - last > gap) { flush(); }
      last = p[0];
      if (p[1] < 0 || p[1] === null) { flush(); } else { seg.push(c.x(p[0]).toFixed(1) + ',' + c.y(p[1]).toFixed(1)); }
    });
    flush();
  }
  function empty(c, msg) { text(c.svg, W / 2, c.h / 2, msg, {'text-anchor': 'middle', fill: '#888'}); }

  function drawArm(box, arm) {
    var xmax = Math.max(arm.duration, 1);
    // 1. breaker state bands with the cause of each OPEN.
    var c = chart(box, 'Breaker state' + (arm.breaker ? ' (' + arm.breaker + ')' : '') + ' and the cause of each OPEN', xmax, 1, 76, null,
      [['CLOSED', COLORS.CLOSED], ['OPEN', COLORS.OPEN], ['HALF_OPEN', COLORS.HALF_OPEN]]);
    arm.states.forEach(function (b) {
      var x0 = c.x(b.from), x1 = c.x(b.to);
      var r = el('rect', {x: x0, y: M.t, width: Math.max(x1 - x0, 1), height: c.h - M.t - M.b, fill: COLORS[b.state] || '#9e9e9e', 'class': 'band'}, c.svg);
      tip(r, b.state + ' ' + fmt(b.from) + 's–' + fmt(b.to) + 's');
      if (x1 - x0 > 60) { text(c.svg, x0 + 4, (M.t + c.h - M.b) / 2 + 4, b.state, {fill: '#fff'}); }
    });
    if (!arm.states.length) { empty(c, 'no breaker state observed (no metrics polled)'); }
    opens(c, arm, true);

    // 2. failure and slow-call rates against their thresholds.
    c = chart(box, 'Failure and slow-call rate (%) against thresholds', xmax, 100, 170, '%',
      [['failure rate', '#c62828'], ['slow-call rate', '#1565c0'], ['thresholds (dashed)', '#888']]);
    if (arm.thresholds.failureRate >= 0 && arm.thresholds.failureRate) {
      el('line', {x1: M.l, x2: W - M.r, y1: c.y(arm.thresholds.failureRate), y2: c.y(arm.thresholds.failureRate), stroke: '#c62828', 'stroke-dasharray': '6 4', 'class': 'threshold'}, c.svg);
    }
    if (arm.thresholds.slowCallRate >= 0 && arm.thresholds.slowCallRate) {
      el('line', {x1: M.l, x2: W - M.r, y1: c.y(arm.thresholds.slowCallRate), y2: c.y(arm.thresholds.slowCallRate), stroke: '#1565c0', 'stroke-dasharray': '6 4', 'class': 'threshold'}, c.svg);
    }
    line(c, arm.rates.map(function (p) { return [p.t, p.fail]; }), '#c62828');
    line(c, arm.rates.map(function (p) { return [p.t, p.slow]; }), '#1565c0');
    if (!arm.rates.length) { empty(c, 'no rates observed (no metrics polled)'); }
    opens(c, arm, false);

    // 3. request outcomes per second, stacked.
    var ymax = 1;
    arm.seconds.forEach(function (s) { ymax = Math.max(ymax, s.ok + s.rej + s.fail); });
    c = chart(box, 'Requests per second by outcome', xmax, ymax, 170, '',
      [['succeeded', '#2e7d32'], ['rejected', '#ef6c00'], ['failed', '#c62828']]);
    arm.seconds.forEach(function (s) {
      var x = c.x(s.t) + 0.5, w = Math.max(c.x(s.t + 1) - c.x(s.t) - 1, 1), base = 0;
      [['ok', '#2e7d32'], ['rej', '#ef6c00'], ['fail', '#c62828']].forEach(function (k) {
        var n = s[k[0]];
        if (!n) { return; }
        var r = el('rect', {x: x, y: c.y(base + n), width: w, height: c.y(base) - c.y(base + n), fill: k[1], 'class': 'bar'}, c.svg);
        tip(r, fmt(s.t) + 's: ' + n + ' ' + {ok: 'succeeded', rej: 'rejected', fail: 'failed'}[k[0]]);
        base += n;
      });
    });
    if (!arm.seconds.length) { empty(c, 'no requests'); }
    opens(c, arm, false);

    // 4. latency percentiles per second.
    var lmax = 1;
    arm.seconds.forEach(function (s) { lmax = Math.max(lmax, s.p99); });
    c = chart(box, 'Latency per second (ms): p50, p95, p99', xmax, lmax * 1.1, 170, 'ms',
      [['p50', '#2e7d32'], ['p95', '#ef6c00'], ['p99', '#c62828']]);
    line(c, arm.seconds.map(function (s) { return [s.t + 0.5, s.p50]; }), '#2e7d32', 1.5);
    line(c, arm.seconds.map(function (s) { return [s.t + 0.5, s.p95]; }), '#ef6c00', 1.5);
    line(c, arm.seconds.map(function (s) { return [s.t + 0.5, s.p99]; }), '#c62828', 1.5);
    if (!arm.seconds.length) { empty(c, 'no requests'); }
    opens(c, arm, false);
  }

  try {
    var data = JSON.parse(document.getElementById('cbprobe-data').textContent);
    data.arms.forEach(function (arm, i) {
      var box = document.querySelector('.charts[data-arm="' + i + '"]');
      if (!box) { report('no chart box for arm ' + i); return; }
      try { drawArm(box, arm); } catch (e) { report('arm ' + arm.name + ': ' + e); }
    });
  } catch (e) {
    report('report data: ' + e);
  }
  document.body.setAttribute('data-charts-rendered', String(rendered));
})();
`

// WriteHTMLFile rewrites rec.Dir/report.html from rec (through a temporary
// file and a rename), as `cbprobe report --html` does.
func WriteHTMLFile(rec *Record) error {
	return writeFileAtomic(rec.Dir, HTMLFile, func(w io.Writer) error { return WriteHTML(w, rec) })
}
