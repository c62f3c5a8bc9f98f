package results

// reportTemplate renders report.html and the comparison of two runs. Marks
// are text and inline SVG, never emoji (a machine without an emoji font
// draws those as empty boxes).
const reportTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:960px;color:#222;padding:0 1em}
body.cols2{max-width:1500px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}h3{font-size:1.05em;margin:.8em 0 .3em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
td.num{text-align:right;white-space:nowrap}td.sub{padding-left:1.6em}tr.head td{font-weight:600;background:#f5f5f5}
.col{overflow-x:auto}.cols{display:grid;gap:1.5em;grid-template-columns:minmax(0,1fr)}body.cols2 .cols{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}
.verdict{display:flex;align-items:center;gap:.6em;padding:.55em .9em;border:2px solid;border-radius:6px;margin:.6em 0;font-size:1.05em}
.verdict .word{font-weight:700;text-transform:uppercase;letter-spacing:.05em;font-size:1.15em}
.v-passed{background:#e8f5e9;border-color:#2e7d32;color:#1b5e20}
.v-failed{background:#ffebee;border-color:#c62828;color:#b71c1c}
.v-inconclusive{background:#fff8e1;border-color:#b26a00;color:#7a4a00}
.v-incomplete{background:#eceff1;border-color:#607d8b;color:#37474f}
svg.icon{width:1.3em;height:1.3em;flex:none}
.badge{display:inline-block;min-width:6.5em;padding:0 .4em;border-radius:3px;font-weight:600;text-align:center;color:#fff}
.b-pass{background:#2e7d32}.b-fail{background:#c62828}.b-inconclusive{background:#b26a00}
.b-error{background:#c62828}.b-warning{background:#b26a00}.b-info{background:#607d8b}
.status{color:#555}.warn{color:#b26a00}.fail{color:#c62828}.diff{background:#fff8e1}
figure{margin:.5em 0 .9em}figcaption{font-weight:600;font-size:.95em}
svg.chart{fill:#333;display:block;max-width:100%;height:auto;background:#fff;border:1px solid #e4e4e4;touch-action:pan-y;cursor:grab}
svg.chart text{font:11px system-ui,sans-serif}
.missing-note{color:#666;font-style:italic;margin:.2em 0 .4em}.panel-note{color:#666;font-size:.9em}
#script-errors{color:#c62828;white-space:pre-wrap}#script-errors:empty{display:none}
.legend span{display:inline-block;margin-right:1em;font-size:.92em}.sw{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle}
.zoom{position:sticky;top:0;background:#fff;z-index:1;padding:.3em 0;border-bottom:1px solid #eee}
.zoom button{font:inherit;margin-right:.3em}.zoom .range{margin-left:.6em;color:#555}.zoom .hint{margin-left:.6em;color:#888;font-size:.9em}
</style>
</head>
<body class="cols{{len .Runs}}" data-charts-rendered="0">
<pre id="script-errors"></pre>
<script>
window.onerror = function (msg, src, line, col) {
  var e = document.getElementById('script-errors');
  e.textContent += 'script error: ' + msg + ' (line ' + line + ':' + col + ')\n';
  document.body.setAttribute('data-script-error', '1');
};
</script>
<h1>{{.Title}}</h1>
<div class="cols">{{range .Runs}}<div class="col">{{template "head" .}}</div>{{end}}</div>
{{with .Compare}}<h2>Side by side</h2>
{{template "table" .}}{{end}}
{{range .Groups}}<section class="arm" id="arm-{{.Index}}">
<h2>{{.Title}}</h2>
<div class="cols">{{range .Arms}}<div class="col">{{template "arm" .}}</div>{{end}}</div>
<div class="zoom" data-group="{{.Index}}"></div>
<div class="cols">{{range .Arms}}<div class="col"><div class="charts" data-group="{{.Group}}" data-column="{{.Column}}"></div></div>{{end}}</div>
<div class="cols">{{range .Arms}}<div class="col">{{with .Arm}}{{range .Notes}}<p>{{.}}</p>{{end}}{{end}}</div>{{end}}</div>
</section>
{{end}}
<div class="cols">{{range .Runs}}<div class="col">{{template "tail" .}}</div>{{end}}</div>
<script type="application/json" id="cbprobe-data">{{.Data}}</script>
<script>{{.Script}}</script>
</body>
</html>
{{define "icon"}}<svg class="icon" viewBox="0 0 16 16" aria-hidden="true"><circle cx="8" cy="8" r="7" fill="currentColor"/>{{if eq . "passed"}}<path d="M4.5 8.3l2.4 2.4 4.6-4.9" fill="none" stroke="#fff" stroke-width="1.8"/>{{else if eq . "failed"}}<path d="M5 5l6 6M11 5l-6 6" fill="none" stroke="#fff" stroke-width="1.8"/>{{else}}<path d="M8 4v5" stroke="#fff" stroke-width="1.8"/><circle cx="8" cy="11.6" r="1.1" fill="#fff"/>{{end}}</svg>{{end}}
{{define "table"}}<table class="{{.Class}}"><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if rowHead .}} class="head"{{end}}>{{range .}}<td{{with .Class}} class="{{.}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{define "head"}}{{with .Label}}<h2>{{.}}</h2>{{end}}
<div class="verdict {{.Verdict.Class}}" data-verdict="{{.Verdict.Word}}" role="status">{{template "icon" .Verdict.Word}}<span class="word">{{.Verdict.Word}}</span><span class="detail">{{.Verdict.Detail}}</span></div>
{{with .Run.Description}}<p>{{.}}</p>{{end}}
<p class="status">experiment <b>{{.Run.Experiment}}</b> · run {{.Status}}{{with .Run.Target}} · target <code>{{.}}</code>{{end}}{{with .Origin}} · started {{.}}{{end}} · times are seconds from the start</p>
{{with .Run.Expectations}}<h3>Expectations</h3>
<table class="left expectations"><tr><th>verdict</th><th>expectation</th><th>detail</th></tr>
{{range .}}<tr><td>{{if .Inconclusive}}<span class="badge b-inconclusive">inconclusive</span>{{else if .OK}}<span class="badge b-pass">pass</span>{{else}}<span class="badge b-fail">fail</span>{{end}}</td><td><code>{{.Expr}}</code></td><td>{{detail .}}</td></tr>
{{end}}</table>{{else}}<p>No expectations were set for this run.</p>{{end}}{{end}}
{{define "arm"}}{{if .Missing}}<p class="missing-note">This run has no arm at this position.</p>{{else}}{{with .Arm}}{{if $.Named}}<h3>{{.Name}}</h3>{{end}}{{with .Description}}<p>{{.}}</p>{{end}}{{end}}
{{with .Observation}}<div class="warn"><b>Inconclusive</b>: cbprobe could not observe this breaker well enough to judge it.<ul>{{range .}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
<p>{{firstOpen .Arm}} · {{firstRejected .Arm}}{{if .Arm.AttemptsPerRequest}} · attempts per request {{num .Arm.AttemptsPerRequest}}{{end}}{{with .Arm.Breaker}} · breaker <code>{{.}}</code>{{end}}</p>
{{template "table" .Phases}}
{{with .Trans}}{{template "table" .}}{{else}}<p>No breaker transitions were observed.</p>{{end}}
{{with .Latency}}{{template "table" .}}{{end}}
{{with .Compare}}{{template "table" .}}{{end}}{{end}}{{end}}
{{define "tail"}}{{with .Run.Findings}}<h2>Findings{{with $.Label}} ({{.}}){{end}}</h2><ul>
{{range .}}<li><span class="badge b-{{.Severity}}">{{.Severity}}</span> <b>{{.Title}}</b> (<code>{{.ID}}</code>{{with .Arm}}, arm {{.}}{{end}}){{with .Detail}}: {{.}}{{end}}
{{if .Evidence}}<ul>{{range .Evidence}}<li>{{.}}</li>{{end}}</ul>{{end}}{{with .Fix}}<div>Fix: {{.}}</div>{{end}}</li>
{{end}}</ul>{{end}}
{{if or .Run.Warnings .Notes}}<h2>Measurement warnings{{with .Label}} ({{.}}){{end}}</h2><ul>{{range .Run.Warnings}}<li>{{.}}</li>{{end}}{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}{{end}}
`
