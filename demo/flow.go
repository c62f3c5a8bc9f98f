package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// Order statuses.
const (
	OrderCreated          = "CREATED"
	OrderPaymentRequested = "PAYMENT_REQUESTED"
	OrderPaymentPending   = "PAYMENT_PENDING"
	OrderPaid             = "PAID"
	OrderPaymentFailed    = "PAYMENT_FAILED"
)

// Order is one order of the in-memory store.
type Order struct {
	// OrderID is "ORD-" and an 8-digit sequence number.
	OrderID string `json:"orderId"`
	// UserID is the X-USER-ID that created the order; only it can read and pay it.
	UserID string `json:"userId"`
	// Amount is in won.
	Amount int64 `json:"amount"`
	// Status is one of the Order* constants.
	Status string `json:"status"`
	// TransactionKey is the gateway's key once a payment was accepted.
	TransactionKey string `json:"transactionKey,omitempty"`
	// Reason is the gateway's settlement reason from the callback.
	Reason string `json:"reason,omitempty"`
}

// OrderStore holds the service's orders (its simulated database); safe for
// concurrent use.
type OrderStore struct {
	mu     sync.Mutex
	next   int64
	orders map[string]*Order
}

// NewOrderStore returns an empty order store. Replicas of one service share
// their database: give the same store to each (Config.Orders).
func NewOrderStore() *OrderStore { return &OrderStore{orders: map[string]*Order{}} }

func (o *OrderStore) create(user string, amount int64) Order {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next++
	ord := &Order{OrderID: fmt.Sprintf("ORD-%08d", o.next), UserID: user, Amount: amount, Status: OrderCreated}
	o.orders[ord.OrderID] = ord
	return *ord
}

// get returns a copy of the order; user "" matches any owner.
func (o *OrderStore) get(id, user string) (Order, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ord, ok := o.orders[id]
	if !ok || (user != "" && ord.UserID != user) {
		return Order{}, false
	}
	return *ord, true
}

func (o *OrderStore) update(id string, f func(*Order)) (Order, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ord, ok := o.orders[id]
	if !ok {
		return Order{}, false
	}
	f(ord)
	return *ord, true
}

// apiError is the JSON error body of the service's API.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes of a failed payment (HTTP 503) and of bad requests.
const (
	CodeCircuitOpen = "CIRCUIT_OPEN"
	CodePGError     = "PG_ERROR"
	CodePGTimeout   = "PG_TIMEOUT"
	CodeBadRequest  = "BAD_REQUEST"
	CodeNotFound    = "NOT_FOUND"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"code":"INTERNAL_ERROR","message":"encode answer"}`)
	}
	_, _ = w.Write(append(b, '\n'))
}

func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Code: code, Message: msg})
}

// decodeBody reads a JSON object of at most 64 KiB into v.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(body) > 64<<10 {
		return errors.New("body larger than 64 KiB")
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return errors.New("empty body: want a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("body is not the expected JSON object: %w", err)
	}
	return nil
}

func userID(r *http.Request) (string, bool) {
	u := strings.TrimSpace(r.Header.Get("X-USER-ID"))
	return u, u != ""
}

func (s *Service) handleCreateOrder(w http.ResponseWriter, r *http.Request) {
	user, ok := userID(r)
	if !ok {
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, "header X-USER-ID is required")
		return
	}
	var req struct {
		Amount *json.Number `json:"amount"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	if req.Amount == nil {
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, "field amount is required")
		return
	}
	amount, err := req.Amount.Int64()
	if err != nil || amount <= 0 {
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("amount %s: want a whole number > 0", req.Amount.String()))
		return
	}
	if err := s.dbWork(r.Context()); err != nil {
		writeAPIError(w, http.StatusServiceUnavailable, "DB_ERROR", err.Error())
		return
	}
	ord := s.orders.create(user, amount)
	writeJSON(w, http.StatusOK, map[string]string{"orderId": ord.OrderID})
}

func (s *Service) handleGetOrder(w http.ResponseWriter, r *http.Request) {
	user, _ := userID(r)
	id := r.PathValue("id")
	ord, ok := s.orders.get(id, user)
	if !ok {
		writeAPIError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("order %q not found", id))
		return
	}
	writeJSON(w, http.StatusOK, ord)
}

// validCardNo checks the gateway's pattern ^\d{4}-\d{4}-\d{4}-\d{4}$.
func validCardNo(s string) bool {
	if len(s) != 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i%5 == 4 {
			if s[i] != '-' {
				return false
			}
		} else if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// paymentAnswer is the 200 answer of POST /api/v1/payments.
type paymentAnswer struct {
	OrderID        string `json:"orderId"`
	TransactionKey string `json:"transactionKey"`
	Status         string `json:"status"`
}

func (s *Service) handlePay(w http.ResponseWriter, r *http.Request) {
	user, ok := userID(r)
	if !ok {
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, "header X-USER-ID is required")
		return
	}
	var req struct {
		OrderID  string `json:"orderId"`
		CardType string `json:"cardType"`
		CardNo   string `json:"cardNo"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	switch {
	case req.OrderID == "":
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, "field orderId is required")
		return
	case req.CardType != "SAMSUNG" && req.CardType != "KB" && req.CardType != "HYUNDAI":
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("cardType %q: want SAMSUNG, KB or HYUNDAI", req.CardType))
		return
	case !validCardNo(req.CardNo):
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("cardNo %q: want xxxx-xxxx-xxxx-xxxx", req.CardNo))
		return
	}
	ord, ok := s.orders.get(req.OrderID, user)
	if !ok {
		writeAPIError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("order %q not found", req.OrderID))
		return
	}
	// A servlet request keeps running when its client goes away.
	ctx := context.WithoutCancel(r.Context())
	ans, err := s.pay(ctx, user, ord, req.CardType, req.CardNo)
	if err != nil {
		code, msg := classifyFailure(err)
		writeAPIError(w, http.StatusServiceUnavailable, code, msg)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// classifyFailure names a failed payment: CIRCUIT_OPEN, PG_TIMEOUT or PG_ERROR.
func classifyFailure(err error) (code, msg string) {
	var te *breaker.TimeoutError
	switch {
	case breaker.IsCallNotPermitted(err):
		return CodeCircuitOpen, err.Error()
	case errors.As(err, &te):
		return CodePGTimeout, "payment gateway timed out: " + err.Error()
	}
	return CodePGError, "payment gateway failed: " + err.Error()
}

// pay runs TX1 (order -> PAYMENT_REQUESTED), the protected gateway call and
// the closing transaction (PAYMENT_PENDING on success, PAYMENT_FAILED otherwise).
func (s *Service) pay(ctx context.Context, user string, ord Order, cardType, cardNo string) (paymentAnswer, error) {
	if err := s.dbWork(ctx); err != nil {
		return paymentAnswer{}, err
	}
	s.orders.update(ord.OrderID, func(o *Order) { o.Status = OrderPaymentRequested })
	call, err := s.paymentCall()
	if err != nil {
		return paymentAnswer{}, err
	}
	s.mu.Lock()
	base, cb := s.pgURL, s.callbackURL
	s.mu.Unlock()
	req := paymentRequest{OrderID: ord.OrderID, CardType: cardType, CardNo: cardNo, Amount: ord.Amount, CallbackURL: cb}
	var mu sync.Mutex
	var got gatewayAnswer
	err = call(ctx, func(ctx context.Context) error {
		a, err := requestPayment(ctx, s.client, base, user, req)
		if err == nil {
			mu.Lock()
			got = a
			mu.Unlock()
		}
		return err
	})
	dbErr := s.dbWork(ctx)
	if err != nil {
		s.orders.update(ord.OrderID, func(o *Order) { o.Status = OrderPaymentFailed })
		return paymentAnswer{}, err
	}
	if dbErr != nil {
		return paymentAnswer{}, dbErr
	}
	mu.Lock()
	key, st := got.Data.TransactionKey, got.Data.Status
	mu.Unlock()
	if st == "" {
		st = "PENDING"
	}
	s.orders.update(ord.OrderID, func(o *Order) {
		if o.Status == OrderPaymentRequested { // a fast callback may have settled it already
			o.Status = OrderPaymentPending
		}
		o.TransactionKey = key
	})
	return paymentAnswer{OrderID: ord.OrderID, TransactionKey: key, Status: st}, nil
}

// paymentCall returns the decorated call, creating the breaker, the time
// limiter and the retry on first use as Spring does.
func (s *Service) paymentCall() (func(context.Context, func(context.Context) error) error, error) {
	type decorated = func(context.Context, func(context.Context) error) error
	s.flowOnce.Do(func() {
		cb, err := s.reg.breaker(FeignName)
		if err != nil {
			s.flowErr = err
			return
		}
		tl, err := s.reg.timeLimiter(FeignName)
		if err != nil {
			s.flowErr = err
			return
		}
		rt, err := s.reg.retry(FeignName, s.retryAdj)
		if err != nil {
			s.flowErr = err
			return
		}
		// Spring Cloud: CircuitBreaker( TimeLimiter( ThreadPoolBulkhead( Feign call ))), so the
		// time a call waits for a thread counts against the TimeLimiter; Retry is the service's own.
		if b := s.settings.Bulkhead; b.Enabled {
			s.mu.Lock()
			s.pool = newThreadPool(FeignName, b)
			s.mu.Unlock()
		}
		s.flowCall = func(ctx context.Context, fn func(context.Context) error) error {
			call := fn
			if s.pool != nil {
				call = func(ctx context.Context) error { return s.pool.run(ctx, fn) }
			}
			return breaker.Decorate(rt.r, cb.cb, tl.tl, call)(ctx)
		}
	})
	var f decorated = s.flowCall
	return f, s.flowErr
}

// dbWork simulates one database transaction: a pool connection held for the
// configured latency in service time.
func (s *Service) dbWork(ctx context.Context) error {
	if s.dbLatency <= 0 {
		return nil
	}
	select {
	case s.db <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("database: %w", ctx.Err())
	}
	defer func() { <-s.db }()
	return sleepOn(ctx, s.clock, s.dbLatency)
}

// sleepOn waits d of clock time.
func sleepOn(ctx context.Context, c breaker.Clock, d time.Duration) error {
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// callbackBody is the gateway's TransactionInfo callback.
type callbackBody struct {
	TransactionKey string `json:"transactionKey"`
	OrderID        string `json:"orderId"`
	Status         string `json:"status"`
	Reason         string `json:"reason"`
}

func (s *Service) handleCallback(w http.ResponseWriter, r *http.Request) {
	var cb callbackBody
	if err := decodeBody(r, &cb); err != nil {
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	if cb.OrderID == "" || (cb.Status != "SUCCESS" && cb.Status != "FAILED" && cb.Status != "PENDING") {
		writeAPIError(w, http.StatusBadRequest, CodeBadRequest, "callback needs orderId and status SUCCESS, FAILED or PENDING")
		return
	}
	ord, ok := s.orders.update(cb.OrderID, func(o *Order) {
		switch cb.Status {
		case "SUCCESS":
			o.Status = OrderPaid
		case "FAILED":
			o.Status = OrderPaymentFailed
		}
		if cb.TransactionKey != "" {
			o.TransactionKey = cb.TransactionKey
		}
		o.Reason = cb.Reason
	})
	if !ok {
		writeAPIError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("order %q not found", cb.OrderID))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"orderId": ord.OrderID, "status": ord.Status})
}
