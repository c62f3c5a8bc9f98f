package pgsim

import (
	"sync/atomic"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// Stats is a JSON-able snapshot of the simulator.
type Stats struct {
	// Started is when the server was built.
	Started time.Time `json:"started"`
	// Seed is the seed in use.
	Seed int64 `json:"seed"`
	// Behavior is the current behaviour.
	Behavior behavior.Behavior `json:"behavior"`
	// Requests counts answered requests by endpoint ("create", "get", "list",
	// "control", "other") and outcome ("success", "error", "hang", "reset",
	// "rejected-4xx"), since the last reset.
	Requests map[string]map[string]int64 `json:"requests"`
	// Attempts summarises the payment attempt log.
	Attempts AttemptStats `json:"attempts"`
	// InFlight is the number of payment API requests being served.
	InFlight int64 `json:"inFlight"`
	// Transactions is the number of transactions stored.
	Transactions int `json:"transactions"`
	// CallbackQueue is the number of callbacks waiting for a worker.
	CallbackQueue int `json:"callbackQueue"`
	// CallbacksSent and CallbacksFailed count callbacks since start;
	// CallbacksDropped (part of CallbacksFailed) were never posted because the
	// queue was full or the server closed.
	CallbacksSent    int64 `json:"callbacksSent"`
	CallbacksFailed  int64 `json:"callbacksFailed"`
	CallbacksDropped int64 `json:"callbacksDropped"`
	// CallbackWorkers is the number of callback workers started so far (they
	// start on demand, up to Config.CallbackWorkers).
	CallbackWorkers int `json:"callbackWorkers"`
	// CallbackLagMaxMs is the longest time, in milliseconds, from a
	// transaction's settlement to its callback answered with a 2xx status.
	CallbackLagMaxMs float64 `json:"callbackLagMaxMs"`
}

// Stats returns a snapshot.
func (s *Server) Stats() Stats {
	sent, failed, dropped, lagMax := s.callbacks.counts()
	return Stats{
		Started:          s.started,
		Seed:             s.seed,
		Behavior:         s.Behavior(),
		Requests:         s.requests.snapshot(),
		Attempts:         s.log.Stats(),
		InFlight:         s.inFlight.Load(),
		Transactions:     s.store.len(),
		CallbackQueue:    s.callbacks.depth(),
		CallbacksSent:    sent,
		CallbacksFailed:  failed,
		CallbacksDropped: dropped,
		CallbackWorkers:  s.callbacks.running(),
		CallbackLagMaxMs: float64(lagMax) / float64(time.Millisecond),
	}
}

// requestCounters counts requests by endpoint and outcome with atomic cells.
type requestCounters struct {
	cells [numEndpoints][numOutcomes]atomic.Int64
}

const numEndpoints = 5

func endpointIndex(e string) int {
	switch e {
	case EndpointCreate:
		return 0
	case EndpointGet:
		return 1
	case EndpointList:
		return 2
	case EndpointControl:
		return 3
	}
	return 4
}

func newRequestCounters() *requestCounters { return &requestCounters{} }

func (c *requestCounters) add(endpoint, outcome string) {
	c.cells[endpointIndex(endpoint)][outcomeCode(outcome)].Add(1)
}

func (c *requestCounters) reset() {
	for e := range c.cells {
		for o := range c.cells[e] {
			c.cells[e][o].Store(0)
		}
	}
}

func (c *requestCounters) snapshot() map[string]map[string]int64 {
	out := make(map[string]map[string]int64)
	for ei, e := range endpoints() {
		for o := range numOutcomes {
			v := c.cells[ei][o].Load()
			if v == 0 {
				continue
			}
			if out[e] == nil {
				out[e] = make(map[string]int64)
			}
			out[e][outcomeName(uint8(o))] = v
		}
	}
	return out
}
