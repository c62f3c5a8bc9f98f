package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"
)

// DefaultInterval is the sampler's default poll interval.
const DefaultInterval = 100 * time.Millisecond

// Update is what the sampler streams after each poll. Exactly one of a good
// poll (Snapshot non-nil) or a failed one (Err non-empty) is reported.
type Update struct {
	// Snapshot is the poll's result, filtered to the selected breakers.
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	// Transitions became final in this poll (evidence complete).
	Transitions []Transition `json:"transitions,omitempty"`
	// Resets are service restarts revealed in this poll.
	Resets []Reset `json:"resets,omitempty"`
	// Err is the failed poll's error (redacted); FirstOfKind says it is the first
	// error of its kind (report it), later identical errors are not repeated.
	Err string `json:"error,omitempty"`
	// FirstOfKind is true for the first occurrence of a distinct error.
	FirstOfKind bool `json:"firstOfKind,omitempty"`
	// Gap is set when polling works again after failures.
	Gap *Gap `json:"gap,omitempty"`
}

// SamplerConfig configures a Sampler.
type SamplerConfig struct {
	// Source is polled; required.
	Source Source
	// Interval between poll starts; 0 means DefaultInterval. Polls never
	// overlap: a slow poll delays the next (missed ticks are skipped).
	Interval time.Duration
	// Clock drives the schedule; nil means the system clock.
	Clock Clock
	// Logger receives each distinct error once; nil discards.
	Logger *slog.Logger
	// Filter selects breakers by name; nil selects all.
	Filter *NameFilter
	// Thresholds complete what the source does not export (nil: none).
	Thresholds Thresholds
}

// Sampler polls a source on its own clock and streams updates.
type Sampler struct {
	cfg     SamplerConfig
	tracker *Tracker
}

// NewSampler checks cfg and returns a sampler.
func NewSampler(cfg SamplerConfig) (*Sampler, error) {
	if cfg.Source == nil {
		return nil, errors.New("sampler: no source")
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("sampler: negative interval %v", cfg.Interval)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sampler{cfg: cfg, tracker: NewTracker(cfg.Thresholds)}, nil
}

// Tracker returns the sampler's transition tracker (read it after Run returns).
func (s *Sampler) Tracker() *Tracker { return s.tracker }

// Run polls until ctx is done, calling emit after every poll from Run's own
// goroutine. Errors never stop it: each failed poll is reported (distinct
// errors once with FirstOfKind) and a Gap is reported when polling recovers.
// On return, pending transitions are flushed in a last Update.
func (s *Sampler) Run(ctx context.Context, emit func(Update)) {
	clk := s.cfg.Clock
	seen := map[string]bool{}
	var gap *Gap
	var lastGood time.Time
	next := clk.Now()
	for {
		snap, err := s.cfg.Source.Poll(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			msg := err.Error()
			key := msg
			var fe *FetchError
			if errors.As(err, &fe) {
				key = fe.Key()
			}
			first := !seen[key]
			seen[key] = true
			if first {
				s.cfg.Logger.Warn("poll failed", "source", s.cfg.Source.Name(), "err", msg)
			}
			if gap == nil {
				gap = &Gap{From: lastGood}
			}
			gap.Polls++
			if first || !contains(gap.Reasons, msg) && len(gap.Reasons) < 20 {
				gap.Reasons = appendOnce(gap.Reasons, msg)
			}
			emit(Update{Err: msg, FirstOfKind: first})
		} else {
			u := Update{}
			if gap != nil {
				gap.To = snap.Sent
				u.Gap = gap
				gap = nil
			}
			lastGood = snap.Received
			for _, n := range snap.Notices {
				s.cfg.Logger.Info("source", "source", s.cfg.Source.Name(), "notice", n)
			}
			s.cfg.Filter.apply(&snap)
			u.Snapshot = &snap
			u.Transitions, u.Resets = s.tracker.Observe(snap)
			emit(u)
		}
		next = next.Add(s.cfg.Interval)
		now := clk.Now()
		if !next.After(now) { // missed ticks: start again from now
			next = now.Add(s.cfg.Interval)
		}
		if !s.wait(ctx, next.Sub(now)) {
			break
		}
	}
	if tr := s.tracker.Flush(); len(tr) > 0 || gap != nil {
		emit(Update{Transitions: tr, Gap: gap})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Sampler) wait(ctx context.Context, d time.Duration) bool {
	ch := make(chan struct{})
	t := s.cfg.Clock.AfterFunc(d, func() { close(ch) })
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-ch:
		return true
	}
}

// NameFilter selects breakers by name. Each pattern is a glob (* any run of
// characters, ? one character, [abc] a class; everything else literal, so Feign
// names like "Client#pay(String)" match themselves) unless it starts with "re:",
// which makes the rest an RE2 regular expression. Both match the whole name. A
// name is selected when any pattern matches.
type NameFilter struct {
	res []*regexp.Regexp
}

// NewNameFilter compiles patterns; no patterns selects everything (nil filter).
func NewNameFilter(patterns ...string) (*NameFilter, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	f := &NameFilter{}
	for _, p := range patterns {
		expr := ""
		if rest, ok := strings.CutPrefix(p, "re:"); ok {
			expr = "^(?:" + rest + ")$"
		} else {
			expr = "^" + globToRegexp(p) + "$"
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("breaker pattern %q: %w", p, err)
		}
		f.res = append(f.res, re)
	}
	return f, nil
}

func globToRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		switch c := g[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			if j := strings.IndexByte(g[i+1:], ']'); j > 0 {
				cls := g[i+1 : i+1+j]
				if strings.HasPrefix(cls, "!") {
					cls = "^" + cls[1:]
				}
				b.WriteString("[" + strings.ReplaceAll(cls, `\`, `\\`) + "]")
				i += j + 1
			} else {
				b.WriteString(regexp.QuoteMeta("["))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// Match reports whether name is selected (a nil filter selects everything).
func (f *NameFilter) Match(name string) bool {
	if f == nil {
		return true
	}
	for _, re := range f.res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func (f *NameFilter) apply(s *Snapshot) {
	if f == nil {
		return
	}
	bs := s.Breakers[:0:0]
	for _, b := range s.Breakers {
		if f.Match(b.Name) {
			bs = append(bs, b)
		}
	}
	s.Breakers = bs
	es := s.Events[:0:0]
	for _, e := range s.Events {
		if e.Kind != KindCircuitBreaker || f.Match(e.Name) {
			es = append(es, e)
		}
	}
	s.Events = es
	ls := s.Lost[:0:0]
	for _, l := range s.Lost {
		if l.Kind != KindCircuitBreaker || f.Match(l.Name) {
			ls = append(ls, l)
		}
	}
	s.Lost = ls
}
