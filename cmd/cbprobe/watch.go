package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/experiments"
	"github.com/cbprobe/cbprobe/springconf"
	"github.com/spf13/cobra"
)

type watchOptions struct {
	metrics           metricsFlags
	timeout, duration time.Duration
	breakers          []string
	json              bool
	eventBuffer       int
}

func newWatchCommand(g *globalOptions) *cobra.Command {
	o := &watchOptions{}
	cmd := &cobra.Command{
		Use:   "watch (--actuator URL | --prometheus URL | --prom-api URL --selector SEL)",
		Short: "Live circuit breaker states, rates against thresholds and the cause of every OPEN",
		Long: `watch polls a service's Resilience4j metrics and shows one line per breaker: state,
failure and slow-call rates against their thresholds, calls in the window, and the last
transition with its cause. Every CLOSED->OPEN is labelled failure-rate, slow-call-rate or
both (from the FAILURE_RATE_EXCEEDED / SLOW_CALL_RATE_EXCEEDED events, else from the rates
of the first OPEN sample against the thresholds), HALF_OPEN->OPEN half-open-trial,
FORCED_OPEN forced, and unknown with the missing evidence named.

Sources: --actuator (Spring Boot actuator JSON, with events), --prometheus (a scrape of
/actuator/prometheus) or --prom-api (a Prometheus server that already scrapes the service;
one breaker per instance label). Prometheus does not export thresholds: give --config
application.yml to compare rates with them.

--breaker selects breakers by name: a glob (* ? [..], everything else literal) or, with a
"re:" prefix, an RE2 regular expression; both match the whole name; repeatable.

The view is redrawn in place only on a terminal; --json writes one JSON object a line
({"type":"sample"|"transition"|"event"|"gap"|"error"|"notice"|"warning"|"reset"|"lost"|"summary",
"data":{...}}); repeated errors and warnings are written once..
Ctrl-C prints a summary of transitions and causes. Exit 3 when the source cannot be read
at start.`,
		Example: `  cbprobe watch --actuator http://127.0.0.1:8080
  cbprobe watch --prometheus http://127.0.0.1:8080/actuator/prometheus --config application.yml
  cbprobe watch --prom-api http://prometheus:9090 --selector 'job="shop"' --breaker 'pg*' --json
  cbprobe watch --actuator https://shop.example --header 'Authorization: Bearer $TOKEN' --interval 250ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWatch(cmd.Context(), g, o) },
	}
	f := cmd.Flags()
	o.metrics.register(cmd, "application.yml/.properties giving thresholds the source does not export")
	f.DurationVar(&o.timeout, "timeout", collect.DefaultTimeout, "per-request timeout")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	f.StringArrayVar(&o.breakers, "breaker", nil, "breaker name pattern (glob, or re:REGEXP; repeatable)")
	f.BoolVar(&o.json, "json", false, "one JSON object a line instead of the live view")
	f.IntVar(&o.eventBuffer, "event-buffer", 0, "the service's event-consumer-buffer-size (default: from --config, else 100)")
	cmd.MarkFlagsMutuallyExclusive("actuator", "prometheus", "prom-api")
	cmd.MarkFlagsOneRequired("actuator", "prometheus", "prom-api")
	return cmd
}

func parseHeaders(hs []string) (http.Header, error) {
	h := http.Header{}
	for _, s := range hs {
		n, v, err := collect.ParseHeader(s)
		if err != nil {
			return nil, err
		}
		h.Add(n, v)
	}
	return h, nil
}

func runWatch(ctx context.Context, g *globalOptions, o *watchOptions) error {
	if err := o.metrics.check(); err != nil {
		return err
	}
	interval := o.metrics.pollInterval(collect.DefaultInterval)
	if o.timeout <= 0 {
		return usageErr(errors.New("--timeout must be positive"))
	}
	if o.duration < 0 {
		return usageErr(fmt.Errorf("--duration %v: must be positive, or 0 to watch until Ctrl-C", o.duration))
	}
	filter, err := collect.NewNameFilter(o.breakers...)
	if err != nil {
		return usageErr(err)
	}
	var th collect.Thresholds
	if o.metrics.config != "" {
		f, err := springconf.Load(o.metrics.config)
		if err != nil {
			return usageErr(err)
		}
		th = experiments.ConfigThresholds(f)
		if o.eventBuffer == 0 {
			if r, err := f.Resolve(springconf.DefaultBreakerName); err == nil && r.EventConsumerBufferSize > 0 {
				o.eventBuffer = r.EventConsumerBufferSize
			}
		}
	}
	opt := collect.HTTPOptions{Timeout: o.timeout, Logger: g.logger, EventBufferSize: o.eventBuffer}
	src, err := o.metrics.source(opt)
	if err != nil {
		return err
	}
	// Reach the source once before anything else: exit 3 with the reason.
	if _, err := src.Poll(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return infraErr(fmt.Errorf("watch: cannot read %s: %w", src.Name(), err))
	}
	// The probe consumed the event history; a fresh source replays it.
	src, _ = o.metrics.source(opt)
	s, err := collect.NewSampler(collect.SamplerConfig{Source: src, Interval: interval, Logger: g.logger, Filter: filter, Thresholds: th})
	if err != nil {
		return usageErr(err)
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	v := &watchView{w: g.stdout, json: o.json, tty: !o.json && isTerminal(g.stdout), interval: interval, width: terminalWidth(),
		latest: map[collect.BreakerKey]collect.BreakerSample{}, last: map[collect.BreakerKey]collect.Transition{}}
	s.Run(ctx, v.update)
	v.summary(s.Tracker().Transitions())
	return nil
}

type watchView struct {
	w      io.Writer
	json   bool
	tty    bool
	drawn  int
	latest map[collect.BreakerKey]collect.BreakerSample
	last   map[collect.BreakerKey]collect.Transition
	status string
	warned map[string]bool
	// interval is the poll interval, for reconciling consecutive samples.
	interval time.Duration
	// hist is the last transition per breaker that predates the watch, and
	// histN the number of such transitions (shown with their date, never counted).
	hist  map[collect.BreakerKey]collect.Event
	histN int
	// width is the terminal's width in columns: each redrawn line fits it,
	// so the in-place redraw never wraps (0: no limit).
	width int
}

func (v *watchView) emit(typ string, x any) {
	b, err := json.Marshal(x)
	if err != nil {
		b, _ = json.Marshal(err.Error())
	}
	fmt.Fprintf(v.w, "{\"type\":%q,\"data\":%s}\n", typ, b)
}

func (v *watchView) line(s string) {
	v.clear()
	fmt.Fprintln(v.w, s)
}

func (v *watchView) clear() {
	if v.tty && v.drawn > 0 {
		fmt.Fprint(v.w, eraseLinesAbove(v.drawn))
		v.drawn = 0
	}
}

func (v *watchView) update(u collect.Update) {
	if u.Err != "" {
		if v.json {
			v.emit("error", map[string]any{"error": u.Err, "first": u.FirstOfKind})
		} else if u.FirstOfKind {
			v.line("poll failed: " + u.Err)
		}
		v.status = "polling fails: " + u.Err
	}
	if u.Gap != nil {
		if v.json {
			v.emit("gap", u.Gap)
		} else {
			v.line(fmt.Sprintf("polling works again after %d failed polls (%s)", u.Gap.Polls, strings.Join(u.Gap.Reasons, "; ")))
		}
	}
	if s := u.Snapshot; s != nil {
		v.status = ""
		for _, n := range s.Notices {
			if v.json {
				v.emit("notice", n)
			} else {
				v.line("note: " + n)
			}
		}
		for _, w := range s.Warnings {
			v.warn(w)
		}
		for _, l := range s.Lost {
			if v.json {
				v.emit("lost", l)
			} else {
				v.line(fmt.Sprintf("events of %s may have been dropped by the ring buffer (%d) between %s and %s (at least %d proven)",
					l.Name, l.BufferSize, l.After.Format("15:04:05.000"), l.Before.Format("15:04:05.000"), l.AtLeast))
			}
		}
		v.history(s.History)
		for _, b := range s.Breakers {
			prev, seen := v.latest[b.Key()]
			v.latest[b.Key()] = b
			if v.json {
				v.emit("sample", b)
			}
			if seen {
				v.reconcile(prev, b, u.Transitions)
			}
		}
		if v.json {
			for _, e := range s.Events {
				v.emit("event", e)
			}
		}
	}
	for _, r := range u.Resets {
		if v.json {
			v.emit("reset", r)
		} else {
			v.line(fmt.Sprintf("%s: metrics reset: %s", r.Breaker, r.Reason))
		}
	}
	for _, t := range u.Transitions {
		v.last[t.Breaker] = t
		if v.json {
			v.emit("transition", t)
		} else {
			v.line(describeTransition(t))
		}
	}
	if !v.json && v.tty {
		v.redraw()
	}
}

// warn prints a warning once: a JSON object, or a "warning:" line.
func (v *watchView) warn(w string) {
	if v.warned == nil {
		v.warned = map[string]bool{}
	}
	if v.warned[w] {
		return
	}
	v.warned[w] = true
	if v.json {
		v.emit("warning", w)
	} else {
		v.line("warning: " + w)
	}
}

// reconcile checks each new sample against the one before it with the same
// rules an arm's evidence is checked by (collect.Reconcile): calls recorded
// while both samples said OPEN are a HALF_OPEN trial the polls missed, a poll
// that took several intervals to answer is a gap. Each finding is a warning.
func (v *watchView) reconcile(prev, cur collect.BreakerSample, trs []collect.Transition) {
	var own []collect.Transition
	for _, t := range trs {
		if t.Breaker == cur.Key() {
			own = append(own, t)
		}
	}
	r := collect.Reconcile(collect.ReconcileInput{Breaker: cur.Key(), Samples: []collect.BreakerSample{prev, cur},
		Transitions: own, Interval: v.interval})
	for _, reason := range r.Reasons {
		v.warn(fmt.Sprintf("%s: %s", cur.Key(), reason))
	}
	for _, t := range r.Inferred {
		if v.json {
			v.emit("transition", t)
		} else {
			v.line(describeTransition(t) + " (inferred)")
		}
	}
}

// historyShown is how many of a breaker's past transitions are printed.
const historyShown = 5

// history shows the events the service had buffered before the watch began:
// each state transition with its date in the service's own time zone (the
// last historyShown of each breaker), and one line a breaker saying how much
// history there is. They are never counted as transitions of the watch.
func (v *watchView) history(evs []collect.Event) {
	if len(evs) == 0 {
		return
	}
	if v.hist == nil {
		v.hist = map[collect.BreakerKey]collect.Event{}
	}
	type span struct {
		n, transitions int
		first, last    collect.Event
		shown          []collect.Event
	}
	per := map[string]*span{}
	var order []string
	for _, e := range evs {
		if v.json {
			v.emit("history", e)
		}
		key := e.Kind + " " + e.Name
		sp := per[key]
		if sp == nil {
			sp = &span{first: e}
			per[key] = sp
			order = append(order, key)
		}
		sp.n++
		sp.last = e
		if e.Kind == collect.KindCircuitBreaker && e.Type == "STATE_TRANSITION" {
			sp.transitions++
			v.histN++
			v.hist[collect.BreakerKey{Name: e.Name, Instance: e.Instance}] = e
			sp.shown = append(sp.shown, e)
			if len(sp.shown) > historyShown {
				sp.shown = sp.shown[1:]
			}
		}
	}
	if v.json {
		return
	}
	for _, key := range order {
		sp := per[key]
		kind, name, _ := strings.Cut(key, " ")
		what := map[string]string{collect.KindCircuitBreaker: "breaker", collect.KindTimeLimiter: "time limiter", collect.KindRetry: "retry"}[kind]
		line := fmt.Sprintf("history: %s %s: %d buffered events from %s to %s predate this watch and are not counted",
			what, name, sp.n, historyTime(sp.first.CreationTime), historyTime(sp.last.CreationTime))
		if sp.transitions > 0 {
			line += fmt.Sprintf("; %d state transitions", sp.transitions)
			if sp.transitions > len(sp.shown) {
				line += fmt.Sprintf(" (last %d shown)", len(sp.shown))
			}
		}
		v.line(line)
		for _, e := range sp.shown {
			from, to, _ := strings.Cut(e.StateTransition, "_TO_")
			v.line(fmt.Sprintf("history: %s %s  %s -> %s  (before this watch)", historyTime(e.CreationTime), name, from, to))
		}
	}
}

// historyTime writes a past event's time with its date, in the zone the
// service wrote it in.
func historyTime(t time.Time) string { return t.Format("2006-01-02 15:04:05.000 Z07:00") }

func describeTransition(t collect.Transition) string {
	when := t.Time.Local().Format("15:04:05.000")
	if t.TimeSource == collect.TimeFromPoll {
		when += fmt.Sprintf(" ±%s", (t.Latest.Sub(t.Earliest) / 2).Round(time.Millisecond))
	}
	s := fmt.Sprintf("%s %s  %s -> %s", when, t.Breaker, t.From, t.To)
	if t.Inferred {
		s += " (inferred)"
	}
	if t.Cause != "" {
		s += "  cause " + string(t.Cause) + ": " + t.Reason
	}
	if t.Note != "" {
		s += "  (" + t.Note + ")"
	}
	return s
}

func pctOrDash(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case v < 0:
		return "-"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// stateOrUnknown shows a state the source did not give (a notice says why) as "?".
func stateOrUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// countOrUnknown writes a count, "?" when unknown.
func countOrUnknown(v float64) string {
	if math.IsNaN(v) {
		return "?"
	}
	return fmt.Sprintf("%v", v)
}

func (v *watchView) redraw() {
	v.clear()
	keys := make([]collect.BreakerKey, 0, len(v.latest))
	for k := range v.latest {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		b := v.latest[k]
		line := fmt.Sprintf(" %-11s failure %s/%s  slow %s/%s  calls %s", stateOrUnknown(b.State),
			pctOrDash(b.FailureRate), pctOrDash(b.FailureRateThreshold), pctOrDash(b.SlowCallRate), pctOrDash(b.SlowCallRateThreshold), countOrUnknown(b.Buffered))
		if t, ok := v.last[k]; ok {
			line += fmt.Sprintf("  last %s->%s %s", t.From, t.To, t.Time.Local().Format("15:04:05"))
			if t.Cause != "" {
				line += " (" + string(t.Cause) + ")"
			}
		} else if e, ok := v.hist[k]; ok {
			from, to, _ := strings.Cut(e.StateTransition, "_TO_")
			line += fmt.Sprintf("  last %s->%s %s (before this watch)", from, to, historyTime(e.CreationTime))
		}
		fmt.Fprintln(v.w, fitLine(k.String(), 30, line, v.width))
		v.drawn++
	}
	if v.status != "" {
		fmt.Fprintln(v.w, fitLine("", 0, v.status, v.width))
		v.drawn++
	}
}

func (v *watchView) summary(ts []collect.Transition) {
	v.clear()
	causes := map[string]int{}
	opens := 0
	for _, t := range ts {
		if t.Cause != "" {
			causes[string(t.Cause)]++
			opens++
		}
	}
	if v.json {
		v.emit("summary", map[string]any{"transitions": len(ts), "opens": opens, "causes": causes, "historyTransitions": v.histN})
		return
	}
	fmt.Fprintf(v.w, "\n%d transitions during the watch, %d into OPEN/FORCED_OPEN\n", len(ts), opens)
	if v.histN > 0 {
		fmt.Fprintf(v.w, "(%d earlier transitions from the service's event buffer were shown as history, not counted)\n", v.histN)
	}
	for _, t := range ts {
		fmt.Fprintln(v.w, "  "+describeTransition(t))
	}
	names := make([]string, 0, len(causes))
	for c := range causes {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		fmt.Fprintf(v.w, "  %-16s %d\n", c, causes[c])
	}
}
