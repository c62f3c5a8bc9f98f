package pgsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	time.AfterFunc(s.scaled(delay), func() {
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
		s.callbacks.enqueue(url, callbackBody{
			TransactionKey: settled.TransactionKey, OrderID: settled.OrderID, CardType: settled.CardType,
			CardNo: settled.CardNo, Amount: settled.Amount, Status: settled.Status, Reason: settled.Reason,
		})
	})
}

type callbackJob struct {
	url  string
	body callbackBody
}

// callbackPool posts callbacks with a fixed number of workers and a bounded queue.
type callbackPool struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []callbackJob
	head    int
	max     int
	closing bool
	wg      sync.WaitGroup

	ctx     context.Context
	cancel  context.CancelFunc
	client  *http.Client
	metrics *metrics
	logger  *slog.Logger

	statsMu sync.Mutex
	sent    int64
	failed  int64
	dropped int64
}

func newCallbackPool(workers, maxQueue int, timeout time.Duration, m *metrics, logger *slog.Logger) *callbackPool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &callbackPool{
		max: maxQueue, ctx: ctx, cancel: cancel, metrics: m, logger: logger,
		client: &http.Client{Timeout: timeout},
	}
	p.cond = sync.NewCond(&p.mu)
	for range workers {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

func (p *callbackPool) enqueue(url string, body callbackBody) {
	p.mu.Lock()
	if p.closing || len(p.queue)-p.head >= p.max {
		p.mu.Unlock()
		p.count(false, true)
		return
	}
	p.queue = append(p.queue, callbackJob{url: url, body: body})
	p.metrics.cbQueued.Inc()
	p.mu.Unlock()
	p.cond.Signal()
}

func (p *callbackPool) depth() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue) - p.head
}

func (p *callbackPool) next() (callbackJob, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue)-p.head == 0 && !p.closing {
		p.cond.Wait()
	}
	if p.closing {
		return callbackJob{}, false
	}
	job := p.queue[p.head]
	p.queue[p.head] = callbackJob{}
	p.head++
	if p.head == len(p.queue) {
		p.queue, p.head = p.queue[:0], 0
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
		p.count(err == nil, false)
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

func (p *callbackPool) count(ok, dropped bool) {
	p.statsMu.Lock()
	if ok {
		p.sent++
	} else {
		p.failed++
		if dropped {
			p.dropped++
		}
	}
	p.statsMu.Unlock()
	if ok {
		p.metrics.cbSent.Inc()
	} else {
		p.metrics.cbFailed.Inc()
	}
}

func (p *callbackPool) counts() (sent, failed, dropped int64) {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	return p.sent, p.failed, p.dropped
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
	for range left {
		p.metrics.cbQueued.Dec()
		p.count(false, true)
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
}
