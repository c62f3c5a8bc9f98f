package pgsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Settlement timing and mix of the original: 1–5 s after acceptance, r in 1..100:
// 1–20 FAILED (limit), 21–30 FAILED (invalid card), 31–100 SUCCESS.
const (
	settleMin = 1000 * time.Millisecond
	settleMax = 5000 * time.Millisecond
)

// callbackBody is the original TransactionInfo, posted to callbackUrl.
type callbackBody struct {
	TransactionKey string `json:"transactionKey"`
	OrderID        string `json:"orderId"`
	CardType       string `json:"cardType"`
	CardNo         string `json:"cardNo"`
	Amount         int64  `json:"amount"`
	Status         string `json:"status"`
	Reason         string `json:"reason"`
}

// drawSettlement returns the settlement delay (model time), status and reason.
func (s *Server) drawSettlement() (time.Duration, string, string) {
	s.settleMu.Lock()
	defer s.settleMu.Unlock()
	delay := settleMin + time.Duration(s.settleRng.Int64N(int64(settleMax-settleMin)/int64(time.Millisecond)+1))*time.Millisecond
	switch r := s.settleRng.IntN(100) + 1; {
	case r <= 20:
		return delay, StatusFailed, ReasonLimit
	case r <= 30:
		return delay, StatusFailed, ReasonInvalid
	}
	return delay, StatusSuccess, ReasonOK
}

// scheduleSettlement settles t after its delay and queues the callback.
func (s *Server) scheduleSettlement(t Transaction) {
	delay, status, reason := s.drawSettlement()
	key, url := t.TransactionKey, t.callbackURL
	wait := s.scaled(delay)
	due := time.Now().Add(wait)
	time.AfterFunc(wait, func() {
		if s.closed.Load() {
			return
		}
		settled, ok := s.store.settle(key, status, reason)
		if !ok {
			return
		}
		reasonLabel := "approved"
		switch reason {
		case ReasonLimit:
			reasonLabel = "limit"
		case ReasonInvalid:
			reasonLabel = "invalid-card"
		}
		s.metrics.settled.WithLabelValues(status, reasonLabel).Inc()
		s.callbacks.enqueue(callbackJob{url: url, due: due, body: callbackBody{
			TransactionKey: settled.TransactionKey, OrderID: settled.OrderID, CardType: settled.CardType,
			CardNo: settled.CardNo, Amount: settled.Amount, Status: settled.Status, Reason: settled.Reason,
		}})
	})
}

// callbackJob is one settlement callback: where, what, and when the
// settlement was due (the callback's lag counts from then).
type callbackJob struct {
	url  string
	due  time.Time
	body callbackBody
}

// Reasons a callback is dropped (label of pgsim_callbacks_dropped_total).
const (
	dropQueueFull = "queue-full" // the backlog was at Config.CallbackQueue
	dropShutdown  = "shutdown"   // the server closed before a worker took it
)

// callbackPool posts callbacks from a bounded backlog with at most maxWorkers
// goroutines. Workers start on demand (when the backlog holds more callbacks
// than idle workers), so the number running follows the rate times the
// receiver's latency (Little's law) up to maxWorkers, and each keeps one
// keep-alive connection: the transport keeps maxWorkers idle connections per
// host, so at a steady rate no callback dials.
type callbackPool struct {
	mu         sync.Mutex
	cond       *sync.Cond
	queue      []callbackJob
	head       int
	max        int  // backlog bound (Config.CallbackQueue)
	maxWorkers int  // Config.CallbackWorkers
	workers    int  // started
	idle       int  // waiting for a job
	full       bool // the backlog overflowed since it was last empty (warning logged)
	closing    bool
	wg         sync.WaitGroup

	ctx       context.Context
	cancel    context.CancelFunc
	client    *http.Client
	transport *http.Transport
	metrics   *metrics
	logger    *slog.Logger

	statsMu sync.Mutex
	sent    int64
	failed  int64
	dropped int64
	lagMax  time.Duration
}

// newCallbackTransport is the callbacks' connection pool: one idle keep-alive
// connection per worker and host, HTTP/1.1, no proxy (callbacks go to the
// service under test, usually on loopback).
func newCallbackTransport(workers int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        workers,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     90 * time.Second,
	}
}

func newCallbackPool(workers, maxQueue int, timeout time.Duration, m *metrics, logger *slog.Logger) *callbackPool {
	ctx, cancel := context.WithCancel(context.Background())
	tr := newCallbackTransport(workers)
	p := &callbackPool{
		max: maxQueue, maxWorkers: workers, ctx: ctx, cancel: cancel, metrics: m, logger: logger,
		transport: tr, client: &http.Client{Timeout: timeout, Transport: tr},
	}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// enqueue queues job, starting a worker when none is free and fewer than
// maxWorkers run. A full backlog drops the job, counts it and logs a warning
// the first time in each overflow (re-armed when the backlog empties).
func (p *callbackPool) enqueue(job callbackJob) {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		p.drop(dropShutdown, 1)
		return
	}
	if len(p.queue)-p.head >= p.max {
		warn := !p.full
		p.full = true
		workers := p.workers
		p.mu.Unlock()
		p.drop(dropQueueFull, 1)
		if warn {
			p.logger.Warn("pgsim callback backlog full: dropping callbacks until it drains (counted in pgsim_callbacks_dropped_total); the receiver is slower than the settlement rate: raise --callback-workers or callbackQueue, or lower the rate",
				"queue", p.max, "workers", workers, "maxWorkers", p.maxWorkers)
		}
		return
	}
	p.queue = append(p.queue, job)
	p.metrics.cbQueued.Inc()
	if len(p.queue)-p.head > p.idle && p.workers < p.maxWorkers {
		p.workers++
		p.wg.Add(1)
		go p.work()
	}
	p.mu.Unlock()
	p.cond.Signal()
}

func (p *callbackPool) depth() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue) - p.head
}

// running returns the number of workers started so far.
func (p *callbackPool) running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.workers
}

func (p *callbackPool) next() (callbackJob, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue)-p.head == 0 && !p.closing {
		p.idle++
		p.cond.Wait()
		p.idle--
	}
	if p.closing {
		return callbackJob{}, false
	}
	job := p.queue[p.head]
	p.queue[p.head] = callbackJob{}
	p.head++
	if p.head == len(p.queue) {
		p.queue, p.head = p.queue[:0], 0
		p.full = false
	} else if p.head > 1024 && p.head*2 > len(p.queue) {
		p.queue = append(p.queue[:0], p.queue[p.head:]...)
		p.head = 0
	}
	p.metrics.cbQueued.Dec()
	return job, true
}

func (p *callbackPool) work() {
	defer p.wg.Done()
	for {
		job, ok := p.next()
		if !ok {
			return
		}
		err := p.post(job)
		if err != nil {
			p.logger.Debug("pgsim callback failed", "url", job.url, "transactionKey", job.body.TransactionKey, "err", err)
		}
		p.done(err == nil, time.Since(job.due))
	}
}

func (p *callbackPool) post(job callbackJob) error {
	data, err := json.Marshal(job.body)
	if err != nil {
		return fmt.Errorf("encode callback: %w", err)
	}
	req, err := http.NewRequestWithContext(p.ctx, http.MethodPost, job.url, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("callback %s: %w", job.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("callback %s: %w", job.url, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("callback %s: status %s", job.url, resp.Status)
	}
	return nil
}

// done counts one posted callback; lag is the time from its settlement to
// the end of the post.
func (p *callbackPool) done(ok bool, lag time.Duration) {
	p.statsMu.Lock()
	if ok {
		p.sent++
		p.lagMax = max(p.lagMax, lag)
	} else {
		p.failed++
	}
	p.statsMu.Unlock()
	if ok {
		p.metrics.cbSent.Inc()
		p.metrics.cbLag.Observe(lag.Seconds())
	} else {
		p.metrics.cbFailed.Inc()
	}
}

// drop counts n callbacks never posted (also counted as failed).
func (p *callbackPool) drop(reason string, n int) {
	p.statsMu.Lock()
	p.failed += int64(n)
	p.dropped += int64(n)
	p.statsMu.Unlock()
	p.metrics.cbFailed.Add(float64(n))
	p.metrics.cbDropped.WithLabelValues(reason).Add(float64(n))
}

func (p *callbackPool) counts() (sent, failed, dropped int64, lagMax time.Duration) {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	return p.sent, p.failed, p.dropped, p.lagMax
}

// close stops the workers; queued callbacks are dropped (counted as failed)
// and in-flight posts are cancelled at ctx's deadline.
func (p *callbackPool) close(ctx context.Context) {
	p.mu.Lock()
	p.closing = true
	left := len(p.queue) - p.head
	p.queue, p.head = nil, 0
	p.mu.Unlock()
	p.cond.Broadcast()
	p.metrics.cbQueued.Sub(float64(left))
	if left > 0 {
		p.drop(dropShutdown, left)
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		p.cancel()
		<-done
	}
	p.cancel()
	p.transport.CloseIdleConnections()
}
