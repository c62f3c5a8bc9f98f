package pgsim

import (
	"io"
	"sync"
	"time"
)

// Attempt is one payment attempt (one POST /api/v1/payments) as the gateway saw it.
type Attempt struct {
	Time     time.Time     `json:"time"`     // arrival time
	UserID   string        `json:"userId"`   // X-USER-ID ("" when missing)
	OrderID  string        `json:"orderId"`  // "" when the body could not be read
	Outcome  string        `json:"outcome"`  // "success", "error", "hang", "reset" or "rejected-4xx"
	Injected time.Duration `json:"injected"` // latency the behaviour decided, in nanoseconds, before division by Config.Speed
	N        int           `json:"n"`        // attempt number for that orderId, 1-based; 0 when OrderID is ""
}

// Attempt outcomes as logged.
const (
	OutcomeSuccess  = "success"      // answered 200, transaction created
	OutcomeError    = "error"        // answered 500 (injected failure)
	OutcomeHang     = "hang"         // held without an answer
	OutcomeReset    = "reset"        // connection reset, no answer
	OutcomeRejected = "rejected-4xx" // refused by header or body validation, no delay
)

// numOutcomes is the number of attempt outcomes; codes keep records small.
const numOutcomes = 5

func outcomeName(code uint8) string {
	switch code {
	case 0:
		return OutcomeSuccess
	case 1:
		return OutcomeError
	case 2:
		return OutcomeHang
	case 3:
		return OutcomeReset
	}
	return OutcomeRejected
}

func outcomeCode(s string) uint8 {
	switch s {
	case OutcomeSuccess:
		return 0
	case OutcomeError:
		return 1
	case OutcomeHang:
		return 2
	case OutcomeReset:
		return 3
	}
	return 4
}

// AttemptStats summarises the attempt log.
type AttemptStats struct {
	// Orders is the number of distinct orderIds tracked (at most Config.MaxOrders).
	Orders int `json:"orders"`
	// Attempts is the number of attempts on the tracked orders.
	Attempts int `json:"attempts"`
	// Mean is Attempts / Orders (0 when no order is tracked).
	Mean float64 `json:"mean"`
	// Histogram maps an attempt count k to the number of orders with exactly k attempts.
	Histogram map[int]int `json:"histogram"`
	// DroppedOrders counts orders evicted (oldest first) to stay within MaxOrders.
	DroppedOrders int `json:"droppedOrders"`
	// Total counts every attempt since the last reset, including those without an
	// orderId and those on dropped orders.
	Total int `json:"total"`
	// Logged is the number of attempts held in memory; DroppedAttempts the number
	// evicted (oldest first) to stay within Config.MaxAttempts.
	Logged          int `json:"logged"`
	DroppedAttempts int `json:"droppedAttempts"`
	// Outcomes counts attempts by outcome.
	Outcomes map[string]int `json:"outcomes"`
}

// attemptRec is the compact in-memory form of an Attempt (56 bytes; the strings
// share their bytes with the order table).
type attemptRec struct {
	unixNano int64
	user     string
	order    string
	injected time.Duration
	n        int32
	outcome  uint8
}

type orderEntry struct {
	key   string // the orderId; records point at these bytes
	count int
}

// attemptLog records attempts and per-order counts. All methods are safe for
// concurrent use; counts are exact because every update holds one mutex.
type attemptLog struct {
	mu          sync.Mutex
	maxOrders   int
	maxAttempts int

	recs    []attemptRec // ring once len == maxAttempts
	recHead int          // index of the oldest record when the ring is full

	orders     map[string]*orderEntry
	orderFIFO  []string // ring of tracked orderIds, oldest at fifoHead
	fifoHead   int
	hist       map[int]int
	attempts   int
	dropOrders int
	dropRecs   int
	total      int
	outcomes   [numOutcomes]int
	users      map[string]string // interned user ids

	lines *JSONLines // the attempt file, nil when not logging to one
}

func newAttemptLog(maxOrders, maxAttempts int, w io.Writer) *attemptLog {
	l := &attemptLog{maxOrders: maxOrders, maxAttempts: maxAttempts}
	l.lines = NewJSONLines(w)
	l.resetLocked()
	return l
}

func (l *attemptLog) resetLocked() {
	l.recs = nil
	l.recHead = 0
	l.orders = make(map[string]*orderEntry)
	l.orderFIFO = nil
	l.fifoHead = 0
	l.hist = make(map[int]int)
	l.attempts, l.dropOrders, l.dropRecs, l.total = 0, 0, 0, 0
	l.outcomes = [numOutcomes]int{}
	l.users = make(map[string]string)
}

// Reset forgets every attempt and count (the file log, if any, keeps its lines).
func (l *attemptLog) Reset() {
	l.mu.Lock()
	l.resetLocked()
	l.mu.Unlock()
}

// Record adds one attempt and returns its number for the orderId (0 when the
// orderId is empty).
func (l *attemptLog) Record(at time.Time, user, order, outcome string, injected time.Duration) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	order, user = storedID(order), storedID(user)
	if order != "" {
		e, ok := l.orders[order]
		if !ok {
			if l.maxOrders > 0 && len(l.orders) >= l.maxOrders {
				l.evictOldestOrderLocked()
			}
			e = &orderEntry{key: order}
			l.orders[order] = e
			l.pushFIFOLocked(order)
		}
		order = e.key // share the stored string's bytes
		if e.count > 0 {
			l.hist[e.count]--
			if l.hist[e.count] == 0 {
				delete(l.hist, e.count)
			}
		}
		e.count++
		l.hist[e.count]++
		l.attempts++
		n = e.count
	}
	if u, ok := l.users[user]; ok {
		user = u
	} else if len(l.users) < 100000 {
		l.users[user] = user
	}
	code := outcomeCode(outcome)
	l.total++
	l.outcomes[code]++
	rec := attemptRec{unixNano: at.UnixNano(), user: user, order: order, injected: injected, n: int32(n), outcome: code}
	switch {
	case l.maxAttempts <= 0 || len(l.recs) < l.maxAttempts:
		l.recs = append(l.recs, rec)
	default:
		l.recs[l.recHead] = rec
		l.recHead = (l.recHead + 1) % len(l.recs)
		l.dropRecs++
	}
	l.lines.Append(rec.attempt())
	return n
}

func (l *attemptLog) pushFIFOLocked(order string) {
	if l.maxOrders > 0 && len(l.orderFIFO) == l.maxOrders {
		// The ring is full only after an eviction freed the head slot.
		l.orderFIFO[l.fifoHead] = order
		l.fifoHead = (l.fifoHead + 1) % len(l.orderFIFO)
		return
	}
	l.orderFIFO = append(l.orderFIFO, order)
}

func (l *attemptLog) evictOldestOrderLocked() {
	oldest := l.orderFIFO[l.fifoHead]
	e := l.orders[oldest]
	delete(l.orders, oldest)
	l.hist[e.count]--
	if l.hist[e.count] == 0 {
		delete(l.hist, e.count)
	}
	l.attempts -= e.count
	l.dropOrders++
	// The head slot is overwritten by pushFIFOLocked right after.
}

func (r attemptRec) attempt() Attempt {
	return Attempt{
		Time:     time.Unix(0, r.unixNano),
		UserID:   r.user,
		OrderID:  r.order,
		Outcome:  outcomeName(r.outcome),
		Injected: r.injected,
		N:        int(r.n),
	}
}

// Attempts returns a copy of the in-memory log, oldest first.
func (l *attemptLog) Attempts() []Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Attempt, 0, len(l.recs))
	for i := range l.recs {
		out = append(out, l.recs[(l.recHead+i)%len(l.recs)].attempt())
	}
	return out
}

// Stats returns the summary.
func (l *attemptLog) Stats() AttemptStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := AttemptStats{
		Orders:          len(l.orders),
		Attempts:        l.attempts,
		Histogram:       make(map[int]int, len(l.hist)),
		DroppedOrders:   l.dropOrders,
		Total:           l.total,
		Logged:          len(l.recs),
		DroppedAttempts: l.dropRecs,
		Outcomes:        make(map[string]int, numOutcomes),
	}
	if s.Orders > 0 {
		s.Mean = float64(s.Attempts) / float64(s.Orders)
	}
	for k, v := range l.hist {
		s.Histogram[k] = v
	}
	for i, n := range l.outcomes {
		if n > 0 {
			s.Outcomes[outcomeName(uint8(i))] = n
		}
	}
	return s
}

// Flush writes buffered JSON lines out and reports the first write error.
func (l *attemptLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines.Flush()
}
