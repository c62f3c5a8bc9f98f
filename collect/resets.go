package collect

import "fmt"

// resetReason reports why the breaker's metrics were reset, or "".
func (t *Tracker) resetReason(b *btrack, smp *BreakerSample, restarted string) string {
	if restarted != "" {
		return restarted
	}
	if smp == nil || b.last == nil {
		return ""
	}
	for _, c := range []struct {
		name     string
		old, new float64
	}{
		{"not_permitted_calls", b.last.NotPermittedTotal, smp.NotPermittedTotal},
		{"calls{kind=successful}", b.last.CallsSuccessful, smp.CallsSuccessful},
		{"calls{kind=failed}", b.last.CallsFailed, smp.CallsFailed},
		{"calls{kind=ignored}", b.last.CallsIgnored, smp.CallsIgnored},
	} {
		if c.new < c.old { // NaN compares false
			return fmt.Sprintf("counter %s went down from %v to %v (service restarted)", c.name, c.old, c.new)
		}
	}
	return ""
}

// restart handles a reset of breaker k found in snapshot s: it settles every
// pending transition without a sample, forgets the window, and records the
// state change the restart caused (if the sample shows one) as a poll-based
// transition noted "service restart".
func (t *Tracker) restart(k BreakerKey, b *btrack, smp *BreakerSample, s Snapshot, reason string) []Transition {
	var out []Transition
	for _, p := range b.pending {
		out = append(out, t.settle(k, p, nil))
	}
	b.pending, b.outcomes, b.exceeded, b.hasBase = nil, nil, nil, false
	if smp != nil && b.state != "" && smp.State != "" && smp.State != b.state {
		tr := t.pollTransition(k, b, smp, s, b.state, smp.State)
		tr.Note = "service restart: " + reason
		out = append(out, t.settle(k, tr, smp))
		b.state = smp.State
	}
	b.last = smp
	return out
}
