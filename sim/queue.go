package sim

import "time"

// eventKind says what an event does when it is popped.
type eventKind uint8

const (
	evArrival    eventKind = iota // an open-model arrival: a = phase index, b = arrival index in the phase
	evUserStart                   // a sequential user starts its next request: a = user
	evAttempt                     // request req asks the breaker for permission and calls the gateway
	evAttemptEnd                  // request req's gateway attempt completes (or times out)
	evRequestEnd                  // request req answers its client
)

// event is one entry of the virtual-time queue. Events are ordered by at,
// ties by seq (the order in which they were scheduled).
type event struct {
	at   time.Duration // virtual time since the start of the run
	seq  uint64
	kind eventKind
	req  int32 // index into the run's requests, -1 when unused
	a, b int32 // kind-specific payload
}

func (e *event) before(o *event) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.seq < o.seq
}

// queue is a binary min-heap of events. It is written out by hand instead of
// container/heap so that pushing and popping do not box events in interfaces.
type queue struct {
	items []event
	seq   uint64
}

// push schedules e (its seq is assigned here).
func (q *queue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.items = append(q.items, e)
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.items[i].before(&q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

// pop removes and returns the earliest event; ok is false when the queue is empty.
func (q *queue) pop() (e event, ok bool) {
	n := len(q.items)
	if n == 0 {
		return event{}, false
	}
	e = q.items[0]
	last := n - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && q.items[r].before(&q.items[l]) {
			m = r
		}
		if !q.items[m].before(&q.items[i]) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return e, true
}

// len returns the number of pending events.
func (q *queue) len() int { return len(q.items) }
