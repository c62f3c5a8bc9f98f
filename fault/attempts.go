package fault

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/pgsim"
)

// Attempt outcomes: what the client got for one request.
const (
	OutcomeSuccess       = "success"        // the upstream's (or stub's) answer, whatever its status
	OutcomeError         = "error"          // an injected error status
	OutcomeHang          = "hang"           // held without an answer, then closed
	OutcomeReset         = "reset"          // connection reset, no answer
	OutcomeTruncate      = "truncate"       // answer cut short of its Content-Length
	OutcomeMalformed     = "malformed"      // bytes that are not HTTP
	OutcomeUpstreamError = "upstream-error" // the upstream could not be reached or failed mid-answer: 502
	OutcomeRejected      = "rejected"       // refused by fault itself: body over the cap (413), no stub route (404)
	OutcomeCancelled     = "cancelled"      // the client gave up before an answer was sent
)

// Outcomes lists every outcome, in a stable order.
func Outcomes() []string {
	return []string{OutcomeSuccess, OutcomeError, OutcomeHang, OutcomeReset, OutcomeTruncate, OutcomeMalformed,
		OutcomeUpstreamError, OutcomeRejected, OutcomeCancelled}
}

// Attempt is one request that reached fault, as logged.
type Attempt struct {
	Time     time.Time     `json:"time"`            // arrival time
	Method   string        `json:"method"`          // request method
	Path     string        `json:"path"`            // request path (no query)
	Route    string        `json:"route"`           // matching rule's name, or "default"; in stub mode the stub route's name
	Outcome  string        `json:"outcome"`         // one of the Outcome* constants
	Fault    string        `json:"fault,omitempty"` // injected fault kind, "" for none
	Status   int           `json:"status"`          // HTTP status sent to the client, 0 when none was sent
	Injected time.Duration `json:"injected"`        // injected latency, in nanoseconds
	Key      string        `json:"key,omitempty"`   // correlation key (trace id), "" when the request carried none
	N        int           `json:"n"`               // attempt number for Key, 1-based; 0 when Key is ""
	Upstream time.Duration `json:"upstream"`        // time to the upstream's response headers, in nanoseconds; 0 when not forwarded
}

// AttemptStats summarises the attempt log the way pgsim's does per orderId,
// here per correlation key (one logical request of the caller).
type AttemptStats struct {
	// Keys is the number of distinct correlation keys tracked (at most Config.MaxKeys).
	Keys int `json:"keys"`
	// Attempts is the number of attempts carrying a tracked key.
	Attempts int `json:"attempts"`
	// Mean is Attempts / Keys (0 when no key is tracked).
	Mean float64 `json:"mean"`
	// Histogram maps an attempt count k to the number of keys with exactly k attempts.
	Histogram map[int]int `json:"histogram"`
	// DroppedKeys counts keys evicted (oldest first) to stay within MaxKeys.
	DroppedKeys int `json:"droppedKeys"`
	// Unkeyed counts attempts that carried no correlation header.
	Unkeyed int `json:"unkeyed"`
	// Total counts every attempt since the last reset.
	Total int `json:"total"`
	// Logged is the number held in memory; DroppedAttempts the number evicted
	// (oldest first) to stay within Config.MaxAttempts.
	Logged          int `json:"logged"`
	DroppedAttempts int `json:"droppedAttempts"`
	// Outcomes counts attempts by outcome.
	Outcomes map[string]int `json:"outcomes"`
	// Routes counts attempts by route and outcome.
	Routes map[string]map[string]int `json:"routes"`
}

type keyEntry struct {
	key   string
	count int
}

// attemptLog records attempts; every method is safe for concurrent use.
type attemptLog struct {
	mu          sync.Mutex
	maxKeys     int
	maxAttempts int
	recs        []Attempt
	head        int
	keys        map[string]*keyEntry
	fifo        []string
	fifoHead    int
	hist        map[int]int
	attempts    int
	dropKeys    int
	dropRecs    int
	unkeyed     int
	total       int
	routes      map[string]map[string]int
	lines       *pgsim.JSONLines // the attempt file, nil when not logging to one
}

func newAttemptLog(maxKeys, maxAttempts int, w io.Writer) *attemptLog {
	l := &attemptLog{maxKeys: maxKeys, maxAttempts: maxAttempts}
	l.lines = pgsim.NewJSONLines(w)
	l.resetLocked()
	return l
}

func (l *attemptLog) resetLocked() {
	l.recs, l.head = nil, 0
	l.keys = make(map[string]*keyEntry)
	l.fifo, l.fifoHead = nil, 0
	l.hist = make(map[int]int)
	l.attempts, l.dropKeys, l.dropRecs, l.unkeyed, l.total = 0, 0, 0, 0, 0
	l.routes = make(map[string]map[string]int)
}

func (l *attemptLog) Reset() {
	l.mu.Lock()
	l.resetLocked()
	l.mu.Unlock()
}

// Record adds a and returns its attempt number for its key (0 without a key).
func (l *attemptLog) Record(a Attempt) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.Key != "" {
		e, ok := l.keys[a.Key]
		if !ok {
			if len(l.keys) >= l.maxKeys {
				l.evictLocked()
			}
			e = &keyEntry{key: a.Key}
			l.keys[a.Key] = e
			if len(l.fifo) == l.maxKeys {
				l.fifo[l.fifoHead] = a.Key
				l.fifoHead = (l.fifoHead + 1) % len(l.fifo)
			} else {
				l.fifo = append(l.fifo, a.Key)
			}
		}
		a.Key = e.key
		if e.count > 0 {
			if l.hist[e.count]--; l.hist[e.count] == 0 {
				delete(l.hist, e.count)
			}
		}
		e.count++
		l.hist[e.count]++
		l.attempts++
		a.N = e.count
	} else {
		l.unkeyed++
	}
	l.total++
	byRoute := l.routes[a.Route]
	if byRoute == nil {
		byRoute = make(map[string]int)
		l.routes[a.Route] = byRoute
	}
	byRoute[a.Outcome]++
	if len(l.recs) < l.maxAttempts {
		l.recs = append(l.recs, a)
	} else {
		l.recs[l.head] = a
		l.head = (l.head + 1) % len(l.recs)
		l.dropRecs++
	}
	l.lines.Append(a)
	return a.N
}

func (l *attemptLog) evictLocked() {
	oldest := l.fifo[l.fifoHead]
	e := l.keys[oldest]
	delete(l.keys, oldest)
	if l.hist[e.count]--; l.hist[e.count] == 0 {
		delete(l.hist, e.count)
	}
	l.attempts -= e.count
	l.dropKeys++
}

// Attempts returns a copy of the in-memory log, oldest first.
func (l *attemptLog) Attempts() []Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Attempt, 0, len(l.recs))
	for i := range l.recs {
		out = append(out, l.recs[(l.head+i)%len(l.recs)])
	}
	return out
}

// Stats returns the summary.
func (l *attemptLog) Stats() AttemptStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := AttemptStats{
		Keys: len(l.keys), Attempts: l.attempts, Histogram: make(map[int]int, len(l.hist)),
		DroppedKeys: l.dropKeys, Unkeyed: l.unkeyed, Total: l.total, Logged: len(l.recs),
		DroppedAttempts: l.dropRecs, Outcomes: map[string]int{}, Routes: map[string]map[string]int{},
	}
	if s.Keys > 0 {
		s.Mean = float64(s.Attempts) / float64(s.Keys)
	}
	for k, v := range l.hist {
		s.Histogram[k] = v
	}
	for route, m := range l.routes {
		cp := make(map[string]int, len(m))
		for o, n := range m {
			cp[o] = n
			s.Outcomes[o] += n
		}
		s.Routes[route] = cp
	}
	return s
}

// Flush writes buffered JSON lines out and reports the first write error.
func (l *attemptLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines.Flush()
}

// maxKeyLen bounds a correlation key taken from a header.
const maxKeyLen = 128

// CorrelationKey returns the correlation key of a request: the first of
// headers that is present and usable. For "traceparent" (W3C Trace Context)
// the key is the 32-hex trace-id, so every attempt and retry a service makes
// while serving one incoming request shares it; a malformed traceparent is
// skipped. Any other header's value is used as sent, cut to 128 bytes.
func CorrelationKey(h http.Header, headers []string) string {
	for _, name := range headers {
		v := strings.TrimSpace(h.Get(name))
		if v == "" {
			continue
		}
		if strings.EqualFold(name, "traceparent") {
			if id, ok := traceID(v); ok {
				return id
			}
			continue
		}
		if len(v) > maxKeyLen {
			v = v[:maxKeyLen]
		}
		return v
	}
	return ""
}

// traceID extracts the trace-id of a traceparent "VV-TRACEID32-SPANID16-FF".
func traceID(v string) (string, bool) {
	parts := strings.Split(v, "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return "", false
	}
	id := parts[1]
	if !isLowerHex(id) || !isLowerHex(parts[2]) || id == strings.Repeat("0", 32) {
		return "", false
	}
	return id, true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
