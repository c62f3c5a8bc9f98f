package collect

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// FleetSource reads several replicas of a service, one Source each (for example
// each replica's actuator), and merges their polls into one Snapshot in which
// every breaker sample, event and counter carries its replica's instance name.
//
// A replica that cannot be read does not fail the poll while another one
// answers: its breakers are simply absent from that snapshot (so the replica is
// unobserved for that stretch, which reconciliation reports per instance), and a
// warning names it. The poll fails only when no replica answers.
type FleetSource struct {
	instances []string
	sources   []Source
}

// NewFleet returns a FleetSource polling sources[i] as instance instances[i].
// Instance names must be distinct and non-empty.
func NewFleet(instances []string, sources []Source) (*FleetSource, error) {
	if len(instances) != len(sources) || len(sources) == 0 {
		return nil, fmt.Errorf("fleet: %d instance names for %d sources", len(instances), len(sources))
	}
	seen := map[string]bool{}
	for _, n := range instances {
		if n == "" || seen[n] {
			return nil, fmt.Errorf("fleet: instance name %q is empty or repeated", n)
		}
		seen[n] = true
	}
	return &FleetSource{instances: instances, sources: sources}, nil
}

// InstanceName is the instance name of a replica read at rawURL: its host:port,
// as Prometheus names a scrape target.
func InstanceName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return rawURL
	}
	return u.Host
}

// Name implements Source.
func (f *FleetSource) Name() string {
	return "fleet of " + fmt.Sprint(len(f.sources)) + " (" + strings.Join(f.instances, ", ") + ")"
}

// Instances returns the replicas' instance names in the order given.
func (f *FleetSource) Instances() []string { return append([]string(nil), f.instances...) }

// Poll implements Source: it polls every replica at once.
func (f *FleetSource) Poll(ctx context.Context) (Snapshot, error) {
	snaps := make([]Snapshot, len(f.sources))
	errs := make([]error, len(f.sources))
	var wg sync.WaitGroup
	for i, s := range f.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snaps[i], errs[i] = s.Poll(ctx)
		}()
	}
	wg.Wait()
	out := Snapshot{Source: f.Name(), EventsOK: true}
	answered := 0
	for i, s := range snaps {
		inst := f.instances[i]
		if errs[i] != nil {
			out.EventsOK = false
			out.Warnings = append(out.Warnings, fmt.Sprintf("instance %s: %v", inst, errs[i]))
			continue
		}
		answered++
		if out.Sent.IsZero() || s.Sent.Before(out.Sent) {
			out.Sent = s.Sent
		}
		if s.Received.After(out.Received) {
			out.Received = s.Received
		}
		out.EventsOK = out.EventsOK && s.EventsOK
		out.Breakers = appendTagged(out.Breakers, s.Breakers, func(b *BreakerSample) *string { return &b.Instance }, inst)
		out.Events = appendTagged(out.Events, s.Events, func(e *Event) *string { return &e.Instance }, inst)
		out.History = appendTagged(out.History, s.History, func(e *Event) *string { return &e.Instance }, inst)
		out.Lost = appendTagged(out.Lost, s.Lost, func(l *LostEvents) *string { return &l.Instance }, inst)
		out.Limiters = appendTagged(out.Limiters, s.Limiters, func(l *LimiterSample) *string { return &l.Instance }, inst)
		out.Retries = appendTagged(out.Retries, s.Retries, func(r *RetrySample) *string { return &r.Instance }, inst)
		out.Restarts = appendTagged(out.Restarts, s.Restarts, func(r *Reset) *string { return &r.Breaker.Instance }, inst)
		for _, n := range s.Notices {
			out.Notices = append(out.Notices, "instance "+inst+": "+n)
		}
		for _, w := range s.Warnings {
			out.Warnings = append(out.Warnings, "instance "+inst+": "+w)
		}
	}
	if answered == 0 {
		return Snapshot{}, fmt.Errorf("fleet: no instance answered: %w", errors.Join(errs...))
	}
	return out, nil
}

// appendTagged appends src to dst, naming inst as the instance of every item
// that does not name one (field points at the item's instance field).
func appendTagged[T any](dst, src []T, field func(*T) *string, inst string) []T {
	for _, x := range src {
		if f := field(&x); *f == "" {
			*f = inst
		}
		dst = append(dst, x)
	}
	return dst
}
