package pgsim

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// warnCounter is a slog handler counting warnings whose message contains substr.
type warnCounter struct {
	substr string
	n      atomic.Int64
}

func (w *warnCounter) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.Contains(r.Message, w.substr) {
		w.n.Add(1)
	}
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

// blockingReceiver answers callbacks only once release is closed; every
// arrival is announced on arrived first.
type blockingReceiver struct {
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
	url     string
}

func newBlockingReceiver(t *testing.T) *blockingReceiver {
	t.Helper()
	r := &blockingReceiver{arrived: make(chan struct{}, 1024), release: make(chan struct{})}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.arrived <- struct{}{}
		<-r.release
	}))
	t.Cleanup(func() { r.open(); ts.Close() })
	r.url = ts.URL + "/cb"
	return r
}

func (r *blockingReceiver) open() { r.once.Do(func() { close(r.release) }) }

// waitFor polls cond until it holds; the test's own deadline bounds it (no
// timing is asserted).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 30 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func droppedMetric(t *testing.T, m *metrics, reason string) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.cbDropped.WithLabelValues(reason).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

func testJob(url string, i int) callbackJob {
	return callbackJob{url: url, due: time.Now(), body: callbackBody{TransactionKey: "20250816:TR:" + strings.Repeat("a", i%7), Status: StatusSuccess}}
}

// TestCallbackBacklogBound: with every worker held by a receiver that does not
// answer, the backlog holds exactly CallbackQueue callbacks; the rest are
// dropped, counted (Stats, pgsim_callbacks_dropped_total{reason="queue-full"},
// failed) and warned about once. After the receiver answers, every queued
// callback is delivered.
func TestCallbackBacklogBound(t *testing.T) {
	cases := []struct {
		name            string
		workers, queue  int
		n               int
		wantDropped     int
		wantWarnings    int64
		wantQueuedAtEnd int
	}{
		{name: "below the bound", workers: 2, queue: 3, n: 4, wantDropped: 0, wantWarnings: 0, wantQueuedAtEnd: 2},
		{name: "exactly at the bound", workers: 2, queue: 3, n: 5, wantDropped: 0, wantWarnings: 0, wantQueuedAtEnd: 3},
		{name: "over the bound", workers: 2, queue: 3, n: 9, wantDropped: 4, wantWarnings: 1, wantQueuedAtEnd: 3},
		{name: "queue of one, many over", workers: 1, queue: 1, n: 50, wantDropped: 48, wantWarnings: 1, wantQueuedAtEnd: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recv := newBlockingReceiver(t)
			warns := &warnCounter{substr: "callback backlog full"}
			m := newMetrics()
			p := newCallbackPool(tc.workers, tc.queue, 30*time.Second, m, slog.New(warns))
			defer p.close(context.Background())
			// Occupy every worker first, one at a time, so which callbacks
			// are in flight and which wait does not depend on scheduling.
			for i := range tc.workers {
				p.enqueue(testJob(recv.url, i))
				<-recv.arrived
			}
			for i := tc.workers; i < tc.n; i++ {
				p.enqueue(testJob(recv.url, i))
			}
			if got := p.depth(); got != tc.wantQueuedAtEnd {
				t.Errorf("backlog depth %d, want %d", got, tc.wantQueuedAtEnd)
			}
			if got := p.running(); got != tc.workers {
				t.Errorf("workers started %d, want %d", got, tc.workers)
			}
			_, failed, dropped, _ := p.counts()
			if dropped != int64(tc.wantDropped) || failed != int64(tc.wantDropped) {
				t.Errorf("dropped %d, failed %d; want %d each", dropped, failed, tc.wantDropped)
			}
			if got := droppedMetric(t, m, dropQueueFull); got != float64(tc.wantDropped) {
				t.Errorf("pgsim_callbacks_dropped_total{reason=queue-full} = %v, want %d", got, tc.wantDropped)
			}
			if got := warns.n.Load(); got != tc.wantWarnings {
				t.Errorf("%d backlog-full warnings, want %d", got, tc.wantWarnings)
			}
			recv.open()
			want := int64(tc.n - tc.wantDropped)
			waitFor(t, "queued callbacks to be delivered", func() bool { s, _, _, _ := p.counts(); return s == want })
			if got := p.depth(); got != 0 {
				t.Errorf("backlog depth %d after delivery, want 0", got)
			}
		})
	}
}

// TestCallbackBacklogWarningRearms: the warning is logged once per overflow;
// a backlog that drained to empty warns again at its next overflow.
func TestCallbackBacklogWarningRearms(t *testing.T) {
	warns := &warnCounter{substr: "callback backlog full"}
	m := newMetrics()
	p := newCallbackPool(1, 2, 30*time.Second, m, slog.New(warns))
	defer p.close(context.Background())
	for round := 1; round <= 2; round++ {
		recv := newBlockingReceiver(t)
		p.enqueue(testJob(recv.url, 0))
		<-recv.arrived
		for i := range 10 { // 2 wait, 8 are dropped
			p.enqueue(testJob(recv.url, i))
		}
		if got := warns.n.Load(); got != int64(round) {
			t.Fatalf("round %d: %d warnings, want %d", round, got, round)
		}
		recv.open()
		want := int64(3 * round)
		waitFor(t, "the backlog to drain", func() bool { s, _, _, _ := p.counts(); return s == want })
	}
	if got := droppedMetric(t, m, dropQueueFull); got != 16 {
		t.Errorf("dropped %v, want 16", got)
	}
}

// TestCallbackShutdownDrops: callbacks still queued at Close are dropped and
// counted with reason "shutdown", and later ones too.
func TestCallbackShutdownDrops(t *testing.T) {
	m := newMetrics()
	// No worker may start: everything stays queued.
	p := newCallbackPool(0, 10, time.Second, m, slog.New(slog.DiscardHandler))
	for i := range 4 {
		p.enqueue(testJob("http://127.0.0.1:1/cb", i))
	}
	p.close(context.Background())
	p.enqueue(testJob("http://127.0.0.1:1/cb", 9))
	if got := droppedMetric(t, m, dropShutdown); got != 5 {
		t.Errorf("dropped at shutdown %v, want 5", got)
	}
	if _, _, dropped, _ := p.counts(); dropped != 5 {
		t.Errorf("Stats dropped %d, want 5", dropped)
	}
}

// TestCallbacksReuseConnections: callbacks travel on keep-alive connections.
// One worker posts every callback on one connection (the transport puts a
// connection read to EOF back into its idle pool before the body's Close
// returns, so this is exact). With several workers a request can dial while
// another connection is being returned, and the dialled one stays if the
// idle pool has room, so the bound is 2 per worker; the old default transport
// (2 idle connections per host) dialled about one connection per callback
// beyond 2 concurrent ones.
func TestCallbacksReuseConnections(t *testing.T) {
	cases := []struct {
		name      string
		workers   int
		callbacks int
		maxConns  int64
	}{
		{name: "one worker", workers: 1, callbacks: 200, maxConns: 1},
		{name: "eight workers", workers: 8, callbacks: 2000, maxConns: 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			ts.Start()
			defer ts.Close()
			p := newCallbackPool(tc.workers, tc.callbacks, 30*time.Second, newMetrics(), slog.New(slog.DiscardHandler))
			defer p.close(context.Background())
			for i := range tc.callbacks {
				p.enqueue(testJob(ts.URL+"/cb", i))
			}
			waitFor(t, "every callback", func() bool { s, _, _, _ := p.counts(); return s == int64(tc.callbacks) })
			if got := conns.Load(); got < 1 || got > tc.maxConns {
				t.Errorf("%d connections for %d callbacks, want 1 to %d", got, tc.callbacks, tc.maxConns)
			}
			if got := p.running(); got < 1 || got > tc.workers {
				t.Errorf("%d workers started, want 1 to %d", got, tc.workers)
			}
		})
	}
}
