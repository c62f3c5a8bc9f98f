package results

import (
	"sort"
	"time"
)

// Fleet is the view of a run over several replicas of the service, each with
// its own breaker (the same name on every instance).
type Fleet struct {
	// Instances is one entry per replica, by breaker key ("name@instance").
	Instances []FleetInstance `json:"instances"`
	// Open is how many replicas' breakers were OPEN (or FORCED_OPEN) over time:
	// one step per change, oldest first.
	Open []OpenCount `json:"open"`
	// MaxOpen is the largest number of replicas OPEN at once.
	MaxOpen int `json:"maxOpen"`
	// RefusedShare is the share in [0, 1] of the arm's requests refused at the
	// entry point (the load balancer's answer), whichever replica refused them.
	RefusedShare float64 `json:"refusedShare"`
}

// FleetInstance is one replica's breaker in a fleet run.
type FleetInstance struct {
	// Breaker is the key "name@instance".
	Breaker string `json:"breaker"`
	// FirstOpenRequest is the request (in the fleet's send order) in flight when
	// this replica's breaker first went from CLOSED to OPEN; 0 if it never did.
	FirstOpenRequest int `json:"firstOpenRequest"`
	// FirstOpenCause is that transition's cause ("" if none).
	FirstOpenCause string `json:"firstOpenCause,omitempty"`
	// Opens counts this replica's transitions into OPEN.
	Opens int `json:"opens"`
	// Observation is this replica's own reconciliation.
	Observation *Observation `json:"observation,omitempty"`
}

// OpenCount is the number of replicas OPEN from At on.
type OpenCount struct {
	// At is when the count changed (wall clock, UTC).
	At time.Time `json:"at"`
	// Open is the number of replicas OPEN or FORCED_OPEN from At.
	Open int `json:"open"`
}

// SetFleet fills a.Fleet from the arm's transitions (already marked with their
// requests by MarkRequests) for the given replica keys, each with its own
// observation (nil when unknown). It is a no-op for fewer than two replicas.
func (a *Arm) SetFleet(keys []string, obs map[string]*Observation) {
	if len(keys) < 2 {
		a.Fleet = nil
		return
	}
	f := &Fleet{}
	type change struct {
		at   time.Time
		key  string
		open bool
	}
	var changes []change
	for _, k := range keys {
		in := FleetInstance{Breaker: k, Observation: obs[k]}
		for _, t := range a.Transitions {
			if t.Breaker != k {
				continue
			}
			if t.To == "OPEN" {
				in.Opens++
			}
			if t.From == "CLOSED" && t.To == "OPEN" && in.FirstOpenRequest == 0 {
				in.FirstOpenRequest = t.Request
				in.FirstOpenCause = t.Cause
				if in.FirstOpenCause == "" {
					in.FirstOpenCause = CauseUnknown
				}
			}
			changes = append(changes, change{t.At, k, t.To == "OPEN" || t.To == "FORCED_OPEN"})
		}
		f.Instances = append(f.Instances, in)
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].at.Before(changes[j].at) })
	open := map[string]bool{}
	for _, c := range changes {
		open[c.key] = c.open
		n := 0
		for _, o := range open {
			if o {
				n++
			}
		}
		if len(f.Open) > 0 && f.Open[len(f.Open)-1].Open == n {
			continue
		}
		f.Open = append(f.Open, OpenCount{At: c.at, Open: n})
		f.MaxOpen = max(f.MaxOpen, n)
	}
	tot := a.Totals()
	f.RefusedShare = tot.Share(tot.Rejected)
	a.Fleet = f
}
