package results

// reportScript draws the charts from #cbprobe-data with plain DOM and SVG
// calls, and zooms and pans the time axis. It is the report's own code: no
// library, no network.
//
// Every arm is drawn as a column of panels sharing one time view; the arms
// of a group (one arm in a report, the pair of arms at the same position in
// a comparison) share that view as an offset from each arm's start. A view
// change (buttons, drag, double-click, Ctrl/Alt+wheel, #view=A-B in the
// address) redraws the group's panels. Each panel is a <figure
// class="panel" data-panel=ID data-state=drawn|empty|missing> whose
// data-series lists the colours of the series with data in view and whose
// data-box is its plot area in page pixels (for the screenshot test).
const reportScript = `
(function () {
  'use strict';
  var NS = 'http:/' + '/www.w3.org/2000/svg';
  var STATE = {CLOSED: '#2e7d32', OPEN: '#c62828', HALF_OPEN: '#f9a825', FORCED_OPEN: '#6a1b9a', DISABLED: '#9e9e9e', METRICS_ONLY: '#607d8b'};
  var KINDS = ['#c62828', '#ef6c00', '#6a1b9a', '#00838f', '#8d6e63', '#ad1457'];
  var M = {l: 56, r: 14, t: 24, b: 26};
  var W = 900;
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
  function html(name, cls, parent, txt) {
    var e = document.createElement(name);
    if (cls) { e.className = cls; }
    if (txt !== undefined) { e.textContent = txt; }
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
  function step(span) {
    if (!(span > 0)) { return 1; }
    var raw = span / 6, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function fmt(v) { return Math.abs(v) >= 100 ? v.toFixed(0) : String(Math.round(v * 10) / 10); }

  // Chart is one panel: a figure with caption, legend and an SVG whose plot
  // area is a nested <svg> (it clips what lies outside the view). x maps
  // seconds from the run start in [v.x0, v.x1], y values in [0, ymax].
  function Chart(box, id, title, arm, v, h, ymax, yunit, legend) {
    var fig = html('figure', 'panel', box);
    fig.setAttribute('data-panel', id);
    html('figcaption', '', fig, title);
    if (legend && legend.length) {
      var lg = html('div', 'legend', fig);
      legend.forEach(function (l) {
        var s = html('span', '', lg), sw = html('i', 'sw', s);
        sw.style.background = l[1];
        if (l[2]) { sw.style.height = '3px'; }
        s.appendChild(document.createTextNode(l[0]));
      });
    }
    var svg = el('svg', {viewBox: '0 0 ' + W + ' ' + h, width: W, height: h, 'class': 'chart', role: 'img', 'aria-label': title}, fig);
    var pw = W - M.l - M.r, ph = h - M.t - M.b;
    this.fig = fig; this.svg = svg; this.pw = pw; this.ph = ph; this.v = v; this.ymax = ymax;
    this.series = {};
    this.x = function (t) { return (t - v.x0) / (v.x1 - v.x0) * pw; };
    this.y = function (val) { return ph - ph * Math.max(0, Math.min(val, ymax)) / ymax; };
    this.inView = function (a, b) { return b >= v.x0 && a <= v.x1; };
    var plot = el('svg', {x: M.l, y: M.t, width: pw, height: ph, 'class': 'plot', overflow: 'hidden'}, svg);
    this.plot = plot;
    this.phases(arm);
    var xs = step(v.x1 - v.x0);
    for (var t = Math.ceil(v.x0 / xs - 1e-9) * xs; t <= v.x1 + 1e-9; t += xs) {
      el('line', {x1: this.x(t), x2: this.x(t), y1: 0, y2: ph, stroke: '#e4e4e4'}, plot);
      text(svg, M.l + this.x(t), h - M.b + 14, fmt(t) + 's', {'text-anchor': 'middle'});
    }
    if (yunit !== null) {
      var ys = step(ymax);
      for (var y = 0; y <= ymax + 1e-9; y += ys) {
        el('line', {x1: 0, x2: pw, y1: this.y(y), y2: this.y(y), stroke: '#e4e4e4'}, plot);
        text(svg, M.l - 4, M.t + this.y(y) + 4, fmt(y) + yunit, {'text-anchor': 'end'});
      }
    }
    el('line', {x1: M.l, y1: h - M.b, x2: W - M.r, y2: h - M.b, stroke: '#666'}, svg);
    el('line', {x1: M.l, y1: M.t, x2: M.l, y2: h - M.b, stroke: '#666'}, svg);
    rendered++;
  }
  // phases shades every other phase, hatches pauses and names each phase above the plot.
  Chart.prototype.phases = function (arm) {
    var c = this;
    (arm.phases || []).forEach(function (p, i) {
      if (!c.inView(p.from, p.to) || p.to <= p.from) { return; }
      var x0 = Math.max(c.x(p.from), 0), x1 = Math.min(c.x(p.to), c.pw);
      var g = el('g', {'class': p.pause ? 'phase pause' : 'phase'}, c.plot);
      if (p.pause) {
        var hs = el('svg', {x: x0, y: 0, width: Math.max(x1 - x0, 1), height: c.ph, overflow: 'hidden'}, g);
        el('rect', {x: 0, y: 0, width: Math.max(x1 - x0, 1), height: c.ph, fill: '#f3f3f3'}, hs);
        for (var d = -c.ph; d < x1 - x0; d += 9) {
          el('line', {x1: d, y1: c.ph, x2: d + c.ph, y2: 0, stroke: '#d6d6d6', 'stroke-width': 1}, hs);
        }
      } else if (i % 2 === 0) {
        el('rect', {x: x0, y: 0, width: Math.max(x1 - x0, 1), height: c.ph, fill: '#f2f5fa'}, g);
      }
      el('line', {x1: c.x(p.from), x2: c.x(p.from), y1: 0, y2: c.ph, stroke: '#9aa5b1', 'stroke-dasharray': '2 3'}, g);
      tip(g, 'phase ' + p.name + (p.pause ? ' (pause)' : p.rate ? ' at ' + fmt(p.rate) + '/s' : '') + ': ' + fmt(p.from) + 's to ' + fmt(p.to) + 's');
      if (x1 - x0 > 36) {
        var label = p.name + (p.pause && p.name.toLowerCase().indexOf('pause') < 0 ? ' (pause)' : '');
        var lt = text(c.svg, M.l + x0 + 3, M.t - 7, label, {'class': 'phase-label', fill: '#52606d'});
        tip(lt, label);
      }
    });
  };
  Chart.prototype.mark = function (color) { this.series[color] = true; };
  Chart.prototype.message = function (msg) {
    text(this.plot, this.pw / 2, this.ph / 2 + 4, msg, {'text-anchor': 'middle', fill: '#777'});
  };
  Chart.prototype.done = function (state) {
    this.fig.setAttribute('data-state', state || (Object.keys(this.series).length ? 'drawn' : 'empty'));
    this.fig.setAttribute('data-series', Object.keys(this.series).join(' '));
  };
  Chart.prototype.opens = function (arm, label) {
    var c = this;
    arm.opens.forEach(function (o) {
      if (!c.inView(o.t, o.t)) { return; }
      var g = el('g', {'class': 'open-mark'}, c.plot);
      el('line', {x1: c.x(o.t), x2: c.x(o.t), y1: 0, y2: c.ph, stroke: '#b71c1c', 'stroke-width': 1.5, 'stroke-dasharray': '4 3'}, g);
      if (label) { text(g, c.x(o.t) + 3, 12, o.cause || 'unknown', {fill: '#b71c1c', 'font-weight': 'bold', 'class': 'cause'}); }
      tip(g, o.from + ' → ' + o.to + ' at ' + fmt(o.t) + 's: ' + (o.cause || 'unknown') + (o.evidence ? ' (' + o.evidence + ')' : '') + (o.uncertainty ? '; uncertain: ' + o.uncertainty : ''));
    });
  };
  // line draws [[t, v], ...]; a negative or null v (unknown) or a time gap
  // above gap seconds breaks it; a lone point is a dot.
  Chart.prototype.line = function (pts, color, width, dash, gap, cls) {
    var c = this, seg = [], last = null;
    function flush() {
      if (seg.length === 1) {
        var xy = seg[0].split(',');
        el('circle', {cx: xy[0], cy: xy[1], r: Math.max(width, 2), fill: color, 'class': cls}, c.plot);
      } else if (seg.length) {
        var a = {points: seg.join(' '), fill: 'none', stroke: color, 'stroke-width': width, 'stroke-linejoin': 'round', 'class': cls};
        if (dash) { a['stroke-dasharray'] = dash; }
        el('polyline', a, c.plot);
      }
      seg = [];
    }
    var margin = (c.v.x1 - c.v.x0) * 0.05 + (gap || 0);
    pts.forEach(function (p) {
      if (p[0] < c.v.x0 - margin || p[0] > c.v.x1 + margin) { flush(); last = null; return; }
      if (gap && last !== null && p[0] - last > gap) { flush(); }
      last = p[0];
      if (p[1] === null || p[1] < 0) { flush(); return; }
      seg.push(c.x(p[0]).toFixed(1) + ',' + c.y(p[1]).toFixed(1));
      if (p[0] >= c.v.x0 && p[0] <= c.v.x1) { c.mark(color); }
    });
    flush();
  };
  // bars stacks counts per time bin: rows [{from, to, v: [n...]}], colors per key.
  Chart.prototype.bars = function (rows, keys, colors, cls) {
    var c = this;
    rows.forEach(function (s) {
      if (!c.inView(s.from, s.to)) { return; }
      var x = c.x(s.from), w = Math.max(c.x(s.to) - x - 1, 1), base = 0;
      s.v.forEach(function (n, i) {
        if (!n) { return; }
        var r = el('rect', {x: x + 0.5, y: c.y(base + n), width: w, height: Math.max(c.y(base) - c.y(base + n), 1), fill: colors[i], 'class': cls || 'bar'}, c.plot);
        tip(r, fmt(s.from) + 's to ' + fmt(s.to) + 's: ' + n + ' ' + keys[i]);
        c.mark(colors[i]);
        base += n;
      });
    });
  };

  function stackMax(rows, v) {
    var m = 1;
    rows.forEach(function (s) {
      if (s.to < v.x0 || s.from > v.x1) { return; }
      var sum = 0;
      s.v.forEach(function (n) { sum += n; });
      m = Math.max(m, sum);
    });
    return m;
  }
  // note is a panel without a chart: state 'missing' (the run directory
  // holds nothing to draw it from) or 'empty' (recorded, and nothing happened).
  function note(box, id, title, msg, state) {
    var fig = html('figure', 'panel', box);
    fig.setAttribute('data-panel', id);
    fig.setAttribute('data-state', state);
    html('figcaption', '', fig, title);
    html('p', 'missing-note', fig, msg);
    rendered++;
  }
  function missing(box, id, title, why) { note(box, id, title, 'Not recorded: ' + why, 'missing'); }
  // stackPanel draws a recorded htmlStack, or says why it is missing.
  function stackPanel(box, arm, v, id, title, st, colorOf, emptyMsg) {
    if (!st.recorded) { missing(box, id, title, st.missing); return; }
    if (!st.seconds.length) { note(box, id, title, emptyMsg + ' in this arm.', 'empty'); return; }
    var colors = st.keys.map(colorOf);
    var c = new Chart(box, id, title, arm, v, 170, stackMax(st.seconds, v), '', st.keys.map(function (k, i) { return [k, colors[i]]; }));
    c.bars(st.seconds, st.keys, colors);
    c.opens(arm, false);
    c.done();
    if (st.note) { html('div', 'panel-note', c.fig, st.note); }
  }
  function kindColor(fixed) {
    var n = 0, seen = {};
    return function (k) {
      if (fixed[k]) { return fixed[k]; }
      if (!seen[k]) { seen[k] = KINDS[n++ % KINDS.length]; }
      return seen[k];
    };
  }

  // statePanel draws the breaker state as bands with the cause of each OPEN.
  function statePanel(box, arm, v) {
    var title = 'Breaker state' + (arm.breaker ? ' (' + arm.breaker + ')' : '') + ' and the cause of each OPEN';
    if (!arm.states.length) {
      missing(box, 'state', title, 'no breaker state was polled or seen in an event for this arm (samples.csv and events.jsonl hold none)');
      return;
    }
    var c = new Chart(box, 'state', title, arm, v, 100, 1, null,
      [['CLOSED', STATE.CLOSED], ['OPEN', STATE.OPEN], ['HALF_OPEN', STATE.HALF_OPEN], ['not observed', '#bdbdbd']]);
    arm.states.forEach(function (b) {
      if (!c.inView(b.from, b.to)) { return; }
      var x0 = c.x(b.from), x1 = c.x(b.to), col = STATE[b.state] || '#9e9e9e';
      var r = el('rect', {x: x0, y: 18, width: Math.max(x1 - x0, 1), height: c.ph - 18, fill: col, 'class': 'band'}, c.plot);
      tip(r, b.state + ' ' + fmt(b.from) + 's to ' + fmt(b.to) + 's');
      c.mark(col);
      var vx0 = Math.max(x0, 0), vx1 = Math.min(x1, c.pw);
      if (vx1 - vx0 > 70) { text(c.plot, vx0 + 4, c.ph - 8, b.state, {fill: '#fff'}); }
    });
    (arm.gaps || []).forEach(function (g) {
      if (!c.inView(g.from, g.to)) { return; }
      var r = el('rect', {x: c.x(g.from), y: 18, width: Math.max(c.x(g.to) - c.x(g.from), 2), height: 10, fill: '#bdbdbd', 'class': 'gap'}, c.plot);
      tip(r, 'breaker not observed ' + fmt(g.from) + 's to ' + fmt(g.to) + 's: ' + g.note);
    });
    c.opens(arm, true);
    c.done();
  }

  // ratesPanel draws the failure and slow-call rates against their thresholds.
  function ratesPanel(box, arm, v) {
    if (!arm.rates.length) {
      missing(box, 'rates', 'Failure and slow-call rate (%) against thresholds', 'the breaker\'s failure and slow-call rates were not polled for this arm (samples.csv holds none)');
      return;
    }
    var c = new Chart(box, 'rates', 'Failure and slow-call rate (%) against thresholds (dashed)', arm, v, 170, 100, '%',
      [['failure rate', '#c62828'], ['slow-call rate', '#1565c0']]);
    [['failureRate', '#c62828'], ['slowCallRate', '#1565c0']].forEach(function (k) {
      var th = arm.thresholds[k[0]];
      if (th > 0) { el('line', {x1: 0, x2: c.pw, y1: c.y(th), y2: c.y(th), stroke: k[1], 'stroke-dasharray': '6 4', 'class': 'threshold'}, c.plot); }
    });
    c.line(arm.rates.map(function (p) { return [p.t, p.fail]; }), '#c62828', 1.8, null, 0, 'rate');
    c.line(arm.rates.map(function (p) { return [p.t, p.slow]; }), '#1565c0', 1.8, null, 0, 'rate');
    c.opens(arm, false);
    c.done();
  }

  function drawArm(box, arm, v) {
    // 1. and 2. breaker state; failure and slow-call rates.
    statePanel(box, arm, v);
    ratesPanel(box, arm, v);

    // 3. request outcomes per bin, stacked.
    var per = arm.bin === 1 ? 'second' : fmt(arm.bin) + ' s';
    stackPanel(box, arm, v, 'outcomes', 'Requests per ' + per + ' by outcome', arm.outcomes,
      kindColor({'succeeded': '#2e7d32', 'rejected by the breaker': '#ef6c00', 'failed': '#c62828'}), 'No request was sent');

    // 4. failed requests per bin by kind.
    stackPanel(box, arm, v, 'failures', 'Failed requests per ' + per + ' by kind (step and HTTP status, or no answer)', arm.failures,
      kindColor({}), 'No request failed');

    // 5. the breaker's calls: gateway attempts by outcome and error kind, calls refused.
    stackPanel(box, arm, v, 'calls', 'Gateway attempts per ' + per + ' (calls the breaker let through, by outcome) and calls it refused', arm.calls,
      kindColor({'gateway call succeeded': '#2e7d32', 'refused (not permitted)': '#9e9e9e'}), 'No call was recorded');

    // 6. the breaker's window as polled.
    if (!arm.window.recorded) {
      missing(box, 'window', 'Breaker window: buffered, failed and slow calls; not-permitted calls', arm.window.missing);
    } else {
      var wcol = ['#1565c0', '#c62828', '#ef6c00', '#616161'], wmax = 1;
      arm.window.points.forEach(function (p) { p.v.forEach(function (x) { wmax = Math.max(wmax, x); }); });
      c = new Chart(box, 'window', 'Breaker window: buffered, failed and slow calls; not-permitted calls (as polled)', arm, v, 170, wmax * 1.1, '',
        arm.window.keys.map(function (k, i) { return [k, wcol[i], true]; }));
      arm.window.keys.forEach(function (k, i) {
        c.line(arm.window.points.map(function (p) { return [p.t, p.v[i]]; }), wcol[i], i === 3 ? 1.4 : 1.8, i === 3 ? '5 3' : null, 0, 'window');
      });
      c.opens(arm, false);
      c.done();
    }

    // 7. and 8. Retry and TimeLimiter events.
    stackPanel(box, arm, v, 'retry', 'Retry events per ' + per, arm.retry,
      kindColor({'retry scheduled': '#ef6c00', 'succeeded after retrying': '#2e7d32', 'failed after every attempt': '#c62828', 'not retried (ignored error)': '#9e9e9e'}), 'No Retry event was recorded');
    stackPanel(box, arm, v, 'limiter', 'TimeLimiter events per ' + per, arm.limiter,
      kindColor({'finished in time': '#2e7d32', 'timed out': '#6a1b9a', 'failed in time': '#c62828'}), 'No TimeLimiter event was recorded');

    // 9. latency percentiles per bin: widest first, so none hides another.
    var ltitle = 'Latency per ' + per + ' (ms): p50, p90, p95, p99 (where few requests fall in one, the upper percentiles coincide: the wider line lies under the narrower)';
    if (!arm.latency.length) { note(box, 'latency', ltitle, 'No request was sent in this arm.', 'empty'); return; }
    var lmax = 1;
    arm.latency.forEach(function (s) { if (s.to >= v.x0 && s.from <= v.x1) { lmax = Math.max(lmax, s.p99); } });
    var pcs = [['p99', '#c62828', 6], ['p95', '#ef6c00', 4], ['p90', '#1565c0', 2.4], ['p50', '#2e7d32', 1.3]];
    var c = new Chart(box, 'latency', ltitle, arm, v, 190, lmax * 1.1, 'ms',
      pcs.slice().reverse().map(function (p) { return [p[0], p[1]]; }));
    pcs.forEach(function (p) {
      c.line(arm.latency.map(function (s) { return [(s.from + s.to) / 2, s[p[0]]]; }), p[1], p[2], null, 1.5 * arm.bin, 'lat-' + p[0]);
    });
    c.opens(arm, false);
    c.done();
  }

  // Group is one row of arms sharing a view [a, b] in seconds from each arm's start.
  function Group(index, members) {
    this.index = index;
    this.members = members;
    var span = 1;
    members.forEach(function (m) { if (m.arm) { span = Math.max(span, m.arm.end - m.arm.start); } });
    this.span = span;
    this.a = 0;
    this.b = span;
  }
  Group.prototype.set = function (a, b) {
    var w = Math.min(Math.max(b - a, Math.min(0.5, this.span)), this.span);
    a = Math.max(0, Math.min(a, this.span - w));
    this.a = a;
    this.b = a + w;
    this.draw();
  };
  Group.prototype.zoom = function (f, at) {
    var w = this.b - this.a, c = at === undefined ? this.a + w / 2 : at;
    this.set(c - (c - this.a) * f, c + (this.b - c) * f);
  };
  Group.prototype.pan = function (d) { this.set(this.a + d, this.b + d); };
  Group.prototype.draw = function () {
    var g = this;
    g.members.forEach(function (m) {
      m.box.textContent = '';
      if (!m.arm) { return; }
      try {
        drawArm(m.box, m.arm, {x0: m.arm.start + g.a, x1: m.arm.start + g.b});
      } catch (e) { report('arm ' + m.arm.name + ': ' + e); }
    });
    if (g.label) { g.label.textContent = 'showing ' + fmt(g.a) + 's to ' + fmt(g.b) + 's of ' + fmt(g.span) + 's from the arm\'s start'; }
    if (g.index === 0) { document.body.setAttribute('data-view', fmt(g.a) + '-' + fmt(g.b)); }
  };
  Group.prototype.controls = function (bar) {
    var g = this;
    function button(label, title, f) {
      var b = html('button', '', bar, label);
      b.type = 'button';
      b.title = title;
      b.addEventListener('click', f);
    }
    button('zoom in', 'show half the time span', function () { g.zoom(0.5); });
    button('zoom out', 'show twice the time span', function () { g.zoom(2); });
    button('earlier', 'move the view back by half its width', function () { g.pan(-(g.b - g.a) / 2); });
    button('later', 'move the view forward by half its width', function () { g.pan((g.b - g.a) / 2); });
    button('reset', 'show the whole arm', function () { g.set(0, g.span); });
    g.label = html('span', 'range', bar);
    html('span', 'hint', bar, 'drag a chart to pan, double-click to zoom in (Shift: out), Ctrl or Alt + wheel to zoom');
  };
  // listen wires drag, double-click and wheel on a chart box (the box stays; its charts are redrawn).
  Group.prototype.listen = function (box, m) {
    var g = this, drag = null;
    function plotX(ev) {
      var svg = ev.target.closest && ev.target.closest('svg.chart');
      if (!svg) { return null; }
      var r = svg.getBoundingClientRect(), k = r.width / W;
      var px = (ev.clientX - r.left) / k - M.l, pw = W - M.l - M.r;
      return {f: Math.max(0, Math.min(1, px / pw)), pw: pw * k};
    }
    box.addEventListener('pointerdown', function (ev) {
      var p = plotX(ev);
      if (!p || ev.button !== 0) { return; }
      drag = {x: ev.clientX, a: g.a, b: g.b, pw: p.pw};
      try { box.setPointerCapture(ev.pointerId); } catch (e) { /* a pointer the page cannot capture: drag without it */ }
    });
    box.addEventListener('pointermove', function (ev) {
      if (!drag) { return; }
      // Chrome and Firefox deliver pointermove at most once a frame: redraw directly.
      var d = -(ev.clientX - drag.x) / drag.pw * (drag.b - drag.a);
      g.set(drag.a + d, drag.b + d);
    });
    function end() { drag = null; }
    box.addEventListener('pointerup', end);
    box.addEventListener('pointercancel', end);
    box.addEventListener('dblclick', function (ev) {
      var p = plotX(ev);
      if (!p) { return; }
      g.zoom(ev.shiftKey ? 2 : 0.5, g.a + p.f * (g.b - g.a));
    });
    box.addEventListener('wheel', function (ev) {
      if (!(ev.ctrlKey || ev.altKey)) { return; }
      var p = plotX(ev);
      if (!p) { return; }
      ev.preventDefault();
      g.zoom(ev.deltaY > 0 ? 1.25 : 0.8, g.a + p.f * (g.b - g.a));
    }, {passive: false});
  };

  // boxes writes each panel's plot area (and each verdict banner's box) in page pixels on it.
  function boxes() {
    document.querySelectorAll('figure.panel, .verdict').forEach(function (f) {
      var p = f.querySelector('svg.plot') || f.querySelector('.missing-note') || f;
      if (!p) { return; }
      var r = p.getBoundingClientRect();
      f.setAttribute('data-box', [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height].map(Math.round).join(','));
    });
    document.body.setAttribute('data-page-height', String(Math.ceil(document.documentElement.scrollHeight)));
  }

  try {
    var data = JSON.parse(document.getElementById('cbprobe-data').textContent);
    W = data.width || W;
    var byGroup = {};
    data.arms.forEach(function (arm) {
      (byGroup[arm.group] = byGroup[arm.group] || [])[arm.column] = arm;
      // Bins are indexes: place them on the time axis.
      [arm.outcomes.seconds, arm.failures.seconds, arm.calls.seconds, arm.retry.seconds, arm.limiter.seconds, arm.latency].forEach(function (rows) {
        rows.forEach(function (s) { s.from = s.t * arm.bin; s.to = (s.t + 1) * arm.bin; });
      });
    });
    var groups = [];
    document.querySelectorAll('.zoom[data-group]').forEach(function (bar) {
      var gi = bar.getAttribute('data-group'), arms = byGroup[gi] || [], members = [];
      for (var col = 0; col < (data.columns || 1); col++) {
        var box = document.querySelector('.charts[data-group="' + gi + '"][data-column="' + col + '"]');
        if (!box) { report('no chart box for arm group ' + gi + ' column ' + col); continue; }
        members.push({box: box, arm: arms[col] || null});
      }
      var g = new Group(Number(gi), members);
      g.controls(bar);
      members.forEach(function (m) { g.listen(m.box, m); });
      groups.push(g);
    });
    var hv = /view=([0-9.]+)-([0-9.]+)/.exec(window.location.hash);
    groups.forEach(function (g) {
      if (hv) { g.set(Number(hv[1]), Number(hv[2])); } else { g.draw(); }
    });
    boxes();
  } catch (e) {
    report('report data: ' + e);
  }
  document.body.setAttribute('data-charts-rendered', String(rendered));
})();
`
