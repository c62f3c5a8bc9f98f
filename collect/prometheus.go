package collect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// PromAccept is the Accept header of a scrape: the classic text format only.
// OpenMetrics is slower to parse by orders of magnitude and rejects
// Micrometer's trailing commas.
const PromAccept = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// PrometheusSource scrapes a /actuator/prometheus page.
type PrometheusSource struct {
	url       string
	g         *httpGetter
	said      map[string]bool
	lastStart float64
}

// NewPrometheus returns a source scraping url (the full page URL, e.g.
// http://host:8080/actuator/prometheus).
func NewPrometheus(url string, opt HTTPOptions) Source {
	return &PrometheusSource{url: url, g: newGetter(opt), said: map[string]bool{}, lastStart: math.NaN()}
}

// Name implements Source.
func (p *PrometheusSource) Name() string { return "prometheus " + safeURL(p.url) }

// Poll implements Source.
func (p *PrometheusSource) Poll(ctx context.Context) (Snapshot, error) {
	s := Snapshot{Source: p.Name(), Sent: p.g.clock.Now()}
	body, ctype, err := p.g.get(ctx, p.url, PromAccept)
	if err != nil {
		return s, err
	}
	s.Received = p.g.clock.Now()
	ct := strings.ToLower(ctype)
	switch {
	case strings.HasPrefix(ct, "text/html"):
		return s, p.g.bodyError(p.url, fmt.Errorf("Content-Type %s: an HTML page, not Prometheus text", ctype))
	case strings.HasPrefix(ct, "application/json"):
		return s, p.g.bodyError(p.url, fmt.Errorf("Content-Type %s: JSON, not Prometheus text", ctype))
	case strings.HasPrefix(ct, "application/openmetrics-text") && !p.said["om"]:
		p.said["om"] = true
		s.Notices = append(s.Notices, fmt.Sprintf("%s answered OpenMetrics although text 0.0.4 was asked for; parsed with the text parser", safeURL(p.url)))
	}
	res, err := ParsePrometheusText(body)
	if errors.Is(err, ErrNoSeries) {
		// Reachable and well-formed, just no breaker yet: not a failed poll.
		if !p.said["none"] {
			p.said["none"] = true
			s.Notices = append(s.Notices, fmt.Sprintf("%s: %v", safeURL(p.url), err))
		}
		return s, nil
	}
	if err != nil {
		return s, p.g.bodyError(p.url, err)
	}
	if res.DroppedLines > 0 && !p.said["dedup"] {
		p.said["dedup"] = true
		s.Notices = append(s.Notices, fmt.Sprintf("%s repeats # HELP/# TYPE lines; %d repeated declaration lines were dropped before parsing", safeURL(p.url), res.DroppedLines))
	}
	for _, n := range promNotices(safeURL(p.url), res) {
		if !p.said[n.key] {
			p.said[n.key] = true
			s.Notices = append(s.Notices, n.text)
		}
	}
	fillSnapshot(&s, res)
	if !math.IsNaN(p.lastStart) && !math.IsNaN(res.ProcessStart) && res.ProcessStart != p.lastStart {
		s.Restarts = append(s.Restarts, Reset{Received: s.Received, Reason: fmt.Sprintf("process_start_time_seconds changed from %v to %v", p.lastStart, res.ProcessStart)})
	}
	if !math.IsNaN(res.ProcessStart) {
		p.lastStart = res.ProcessStart
	}
	return s, nil
}

type promNotice struct{ key, text string }

// promNotices are the remarks a parsed page deserves, each with a key so a
// source says it once: old metric generations read, gauges reading NaN, a
// page with retries or time limiters but no circuit breaker.
func promNotices(where string, res PromResult) []promNotice {
	var out []promNotice
	for _, gen := range res.Legacy {
		out = append(out, promNotice{"legacy " + gen, fmt.Sprintf("%s uses the names of %s: read; the failure rate is derived by the 0.x rule "+
			"(-1 until the ring buffer is full, then failed calls / ring size); slow calls, thresholds and events are not exported (resilience4j 1.0 and later export the current names)", where, gen)})
	}
	for _, n := range res.NaN {
		out = append(out, promNotice{"nan " + n.Breaker.String(), fmt.Sprintf("%s: breaker %s: %s read NaN, so those values are unknown: Micrometer reports NaN for a gauge whose "+
			"watched object was garbage-collected (the breaker or its registry was replaced or is no longer referenced by the application; resilience4j issue #1330); "+
			"restart the service or keep the registry referenced", where, n.Breaker, strings.Join(n.Families, ", "))})
	}
	if len(res.Breakers) == 0 && (len(res.Retries) > 0 || len(res.Limiters) > 0) {
		var names []string
		for _, r := range res.Retries {
			names = append(names, "retry "+BreakerKey{Name: r.Name, Instance: r.Instance}.String())
		}
		for _, l := range res.Limiters {
			names = append(names, "time limiter "+BreakerKey{Name: l.Name, Instance: l.Instance}.String())
		}
		out = append(out, promNotice{"no breakers", fmt.Sprintf("%s has no circuit breaker series, only %s: no breaker state to watch "+
			"(a breaker's series appear once it is registered; lazily created ones after their first call)", where, strings.Join(names, ", "))})
	}
	return out
}

func fillSnapshot(s *Snapshot, res PromResult) {
	s.Breakers, s.Limiters, s.Retries = res.Breakers, res.Limiters, res.Retries
	for i := range s.Breakers {
		s.Breakers[i].Sent, s.Breakers[i].Received = s.Sent, s.Received
		if s.Breakers[i].ObservedAt.IsZero() {
			s.Breakers[i].ObservedAt = s.Received
		}
	}
	for i := range s.Limiters {
		s.Limiters[i].Received = s.Received
	}
	for i := range s.Retries {
		s.Retries[i].Received = s.Received
	}
}

// PromAPISource reads breaker series from a Prometheus server's query API, for
// services Prometheus already scrapes. Each replica (instance label) is a
// separate breaker sample.
type PromAPISource struct {
	url      string
	selector string
	instance model.LabelName // the label naming a replica
	api      v1.API
	g        *httpGetter
	said     map[string]bool
}

// NewPromAPI returns a source querying the Prometheus server at url. selector is
// a label matcher list such as `job="shop"` or `{job="shop",instance=~"10.0.*"}`;
// "" selects every resilience4j series.
func NewPromAPI(url, selector string, opt HTTPOptions) (Source, error) {
	sel := strings.TrimSpace(selector)
	sel = strings.TrimSuffix(strings.TrimPrefix(sel, "{"), "}")
	g := newGetter(opt)
	client, err := api.NewClient(api.Config{Address: url, Client: g.client, RoundTripper: nil})
	if err != nil {
		return nil, fmt.Errorf("prom-api %s: %w", safeURL(url), err)
	}
	src := &PromAPISource{url: url, selector: sel, g: g, said: map[string]bool{}, instance: model.LabelName(cmp.Or(opt.InstanceLabel, "instance"))}
	src.api = v1.NewAPI(headerClient{client, g})
	return src, nil
}

// headerClient adds the configured headers and the body limit to API calls.
type headerClient struct {
	api.Client
	g *httpGetter
}

func (h headerClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	for k, vs := range h.g.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, body, err := h.Client.Do(ctx, req)
	if err == nil && int64(len(body)) > h.g.maxBody {
		return resp, nil, fmt.Errorf("body larger than the %d MiB limit", h.g.maxBody>>20)
	}
	return resp, body, err
}

// Name implements Source.
func (p *PromAPISource) Name() string {
	return fmt.Sprintf("prom-api %s {%s}", safeURL(p.url), p.selector)
}

func (p *PromAPISource) query(ctx context.Context, q string, at time.Time) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, p.g.timeout)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, q, at)
	if err != nil {
		fe := p.g.classify(ctx, safeURL(p.url), err).(*FetchError)
		if fe.Kind == "network" {
			fe.Msg = p.g.redact(fmt.Sprintf("query %s: %v", q, err))
		}
		return nil, fe
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, &FetchError{URL: safeURL(p.url), Kind: "body", Msg: fmt.Sprintf("query %s: got %s, want a vector", q, v.Type())}
	}
	return vec, nil
}

// Poll implements Source.
func (p *PromAPISource) Poll(ctx context.Context) (Snapshot, error) {
	s := Snapshot{Source: p.Name(), Sent: p.g.clock.Now()}
	sel := ""
	if p.selector != "" {
		sel = "," + p.selector
	}
	q := fmt.Sprintf(`{__name__=~"resilience4j_(circuitbreaker|timelimiter|retry)_.+"%s}`, sel)
	vec, err := p.query(ctx, q, s.Sent)
	if err != nil {
		return s, err
	}
	// The scrape time of each breaker's state series: when the values were read.
	ts, err := p.query(ctx, fmt.Sprintf(`timestamp(resilience4j_circuitbreaker_state{state="closed"%s})`, sel), s.Sent)
	if err != nil {
		return s, err
	}
	s.Received = p.g.clock.Now()
	acc := newPromAcc(0, 0)
	for _, smp := range vec {
		ps := promSeries{metric: promKindOf(string(smp.Metric[model.MetricNameLabel])), value: float64(smp.Value)}
		if ps.metric == pkNone {
			continue
		}
		for k, v := range smp.Metric {
			switch {
			case k == p.instance:
				k = "instance"
			case k == "instance":
				continue // another label names the replicas
			}
			ps.setLabel(string(k), string(v))
		}
		acc.add(&ps)
	}
	res := acc.finish()
	if len(res.Breakers) == 0 && len(res.Limiters) == 0 && len(res.Retries) == 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("no resilience4j series match {%s} (not scraped yet, or wrong selector)", p.selector))
	}
	observed := map[BreakerKey]time.Time{}
	for _, smp := range ts {
		k := BreakerKey{Name: string(smp.Metric["name"]), Instance: string(smp.Metric[p.instance])}
		sec, frac := math.Modf(float64(smp.Value))
		t := time.Unix(int64(sec), int64(frac*1e9))
		if t.After(observed[k]) {
			observed[k] = t
		}
	}
	for i := range res.Breakers {
		res.Breakers[i].ObservedAt = observed[res.Breakers[i].Key()]
	}
	for _, n := range promNotices(p.Name(), res) {
		if !p.said[n.key] {
			p.said[n.key] = true
			s.Notices = append(s.Notices, n.text)
		}
	}
	fillSnapshot(&s, res)
	return s, nil
}
