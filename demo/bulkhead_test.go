package demo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/springconf"
)

func TestResolveBulkhead(t *testing.T) {
	for _, tc := range []struct {
		name, yml string
		cpus      int
		want      BulkheadSettings
		errKey    string
	}{
		{name: "unset on 2 CPUs is one core thread", yml: "a: 1\n", cpus: 2,
			want: BulkheadSettings{Enabled: true, CoreThreads: 1, MaxThreads: 2, QueueCapacity: 100}},
		{name: "unset on 1 CPU", yml: "a: 1\n", cpus: 1,
			want: BulkheadSettings{Enabled: true, CoreThreads: 1, MaxThreads: 1, QueueCapacity: 100}},
		{name: "pinned", yml: "resilience4j.thread-pool-bulkhead.configs.default:\n  core-thread-pool-size: 20\n  max-thread-pool-size: 20\n  queue-capacity: 5\n", cpus: 2,
			want: BulkheadSettings{Enabled: true, CoreThreads: 20, MaxThreads: 20, QueueCapacity: 5}},
		{name: "disabled", yml: "spring.cloud.circuitbreaker.bulkhead.resilience4j.enabled: false\n", cpus: 4,
			want: BulkheadSettings{Enabled: false, CoreThreads: 3, MaxThreads: 4, QueueCapacity: 100}},
		{name: "core above max", yml: "resilience4j.thread-pool-bulkhead.configs.default.core-thread-pool-size: 3\n", cpus: 2,
			errKey: "resilience4j.thread-pool-bulkhead.configs.default.core-thread-pool-size"},
		{name: "negative queue", yml: "resilience4j.thread-pool-bulkhead.configs.default.queue-capacity: -1\n", cpus: 2,
			errKey: "resilience4j.thread-pool-bulkhead.configs.default.queue-capacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := springconf.Parse("application.yml", []byte(tc.yml), springconf.YAML)
			if err != nil {
				t.Fatal(err)
			}
			got, err := resolveBulkhead(f, tc.cpus)
			if tc.errKey != "" {
				var ce *springconf.Error
				if !errors.As(err, &ce) || ce.Key != tc.errKey {
					t.Fatalf("error %v, want one naming %s", err, tc.errKey)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestThreadPoolAdmission checks ThreadPoolExecutor's order: core threads, then the
// queue, then threads up to max, then refusal; a queued caller that gives up never runs.
// Every call blocks until released, so the test does not depend on timing or load.
func TestThreadPoolAdmission(t *testing.T) {
	p := newThreadPool("pg", BulkheadSettings{Enabled: true, CoreThreads: 1, MaxThreads: 2, QueueCapacity: 1})
	release := make(chan struct{})
	ran := make(chan int, 8)
	results := make(chan error, 8)
	call := func(ctx context.Context, id int) {
		results <- p.run(ctx, func(context.Context) error { ran <- id; <-release; return nil })
	}
	waitView := func(want BulkheadView) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for p.view() != want {
			if time.Now().After(deadline) {
				t.Fatalf("pool %+v, want %+v", p.view(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	base := BulkheadView{Name: "pg", CoreThreads: 1, MaxThreads: 2, QueueCapacity: 1}
	go call(context.Background(), 1) // core thread
	if id := <-ran; id != 1 {
		t.Fatalf("ran %d first", id)
	}
	queued, giveUp := context.WithCancel(context.Background())
	go call(queued, 2) // queued: the core thread is busy
	w := base
	w.ActiveThreads, w.AvailableThreads, w.Threads, w.QueueDepth = 1, 1, 1, 1
	waitView(w)
	go call(context.Background(), 3) // queue full: a second thread up to max
	if id := <-ran; id != 3 {
		t.Fatalf("ran %d, want 3 on a new thread", id)
	}
	if err := p.run(context.Background(), func(context.Context) error { return nil }); !errors.As(err, new(*BulkheadFullError)) {
		t.Fatalf("fourth call: %v, want BulkheadFullError", err)
	}
	giveUp() // the TimeLimiter gives up on the queued call: it leaves the queue
	if err := <-results; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued call: %v, want context.Canceled", err)
	}
	w.ActiveThreads, w.AvailableThreads, w.Threads, w.QueueDepth = 2, 0, 2, 0
	waitView(w)
	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	w.ActiveThreads, w.AvailableThreads, w.Threads = 0, 2, 1 // the thread above core leaves
	waitView(w)
	select {
	case id := <-ran:
		t.Fatalf("call %d ran after its caller gave up", id)
	default:
	}
}
