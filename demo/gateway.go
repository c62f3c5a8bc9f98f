package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"

	"github.com/cbprobe/cbprobe/breaker"
)

// FeignName is the breaker name Spring Cloud OpenFeign gives the payment call
// (DefaultCircuitBreakerNameResolver: Feign.configKey).
const FeignName = "PgPaymentClient#requestPayment(String,PaymentRequest)"

// GatewayError is a non-2xx answer of the gateway, rendered like the
// FeignException Spring's Feign client throws for it.
type GatewayError struct {
	// Status is the HTTP status code.
	Status int
	// URL is the request URL.
	URL string
	// Body is the answer's body (at most 4 KiB kept).
	Body string
}

// Error returns FeignException's message:
// "[500 Internal Server Error] during [POST] to [URL] [PgPaymentClient#...]: [body]".
func (e *GatewayError) Error() string {
	return fmt.Sprintf("[%d %s] during [POST] to [%s] [%s]: [%s]", e.Status, http.StatusText(e.Status), e.URL, FeignName, e.Body)
}

// JavaClass returns the FeignException subclass the status maps to, e.g.
// "feign.FeignException$InternalServerError" (springconf matches
// record-exceptions and ignore-exceptions against it).
func (e *GatewayError) JavaClass() string {
	names := map[int]string{400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
		405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Gone", 415: "UnsupportedMediaType",
		422: "UnprocessableEntity", 429: "TooManyRequests", 500: "InternalServerError", 501: "NotImplemented",
		502: "BadGateway", 503: "ServiceUnavailable", 504: "GatewayTimeout"}
	if n, ok := names[e.Status]; ok {
		return "feign.FeignException$" + n
	}
	if e.Status >= 500 {
		return "feign.FeignException$FeignServerException"
	}
	return "feign.FeignException$FeignClientException"
}

// TransportError is a failed exchange with the gateway (connection refused or
// reset, broken answer): Feign's RetryableException.
type TransportError struct {
	// URL is the request URL.
	URL string
	// Err is the cause.
	Err error
}

// Error returns RetryableException's message, e.g. "Connection reset executing POST URL".
func (e *TransportError) Error() string {
	cause := "I/O error"
	switch {
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		cause = "Connection refused"
	case errors.Is(e.Err, syscall.ECONNRESET), errors.Is(e.Err, io.EOF), errors.Is(e.Err, io.ErrUnexpectedEOF):
		cause = "Connection reset"
	case e.Err != nil:
		cause = e.Err.Error()
	}
	return cause + " executing POST " + e.URL
}

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }

// JavaClass returns "feign.RetryableException".
func (e *TransportError) JavaClass() string { return "feign.RetryableException" }

// javaThrowable renders err as Java's throwable.toString() of the exception the
// Spring service would have seen: "<FQCN>: <message>".
func javaThrowable(err error) string {
	var te *breaker.TimeoutError
	var cnp *breaker.CallNotPermittedError
	var ge *GatewayError
	var tr *TransportError
	var bf *BulkheadFullError
	switch {
	case errors.As(err, &bf):
		return bf.JavaClass() + ": " + bf.Error()
	case errors.As(err, &te):
		return "java.util.concurrent.TimeoutException: " + te.Error()
	case errors.As(err, &cnp):
		return "io.github.resilience4j.circuitbreaker.CallNotPermittedException: " + cnp.Error()
	case errors.As(err, &ge):
		return ge.JavaClass() + ": " + ge.Error()
	case errors.As(err, &tr):
		return "feign.RetryableException: " + tr.Error()
	case errors.Is(err, context.Canceled):
		return "java.util.concurrent.CancellationException"
	}
	return "java.lang.RuntimeException: " + err.Error()
}

// paymentRequest is the gateway's POST /api/v1/payments body.
type paymentRequest struct {
	OrderID     string `json:"orderId"`
	CardType    string `json:"cardType"`
	CardNo      string `json:"cardNo"`
	Amount      int64  `json:"amount"`
	CallbackURL string `json:"callbackUrl"`
}

// gatewayAnswer is the gateway's envelope with the transaction data.
type gatewayAnswer struct {
	Meta struct {
		Result    string `json:"result"`
		ErrorCode string `json:"errorCode"`
		Message   string `json:"message"`
	} `json:"meta"`
	Data struct {
		TransactionKey string `json:"transactionKey"`
		Status         string `json:"status"`
	} `json:"data"`
}

// requestPayment performs one gateway call (one attempt) and returns the data.
// Headers: X-USER-ID, and X-Request-Id carrying the order id.
func requestPayment(ctx context.Context, client *http.Client, base, userID string, req paymentRequest) (gatewayAnswer, error) {
	var ans gatewayAnswer
	url := strings.TrimSuffix(base, "/") + "/api/v1/payments"
	body, err := json.Marshal(req)
	if err != nil {
		return ans, fmt.Errorf("encode payment request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return ans, &TransportError{URL: url, Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("X-USER-ID", userID)
	// The order id, the same on every retry of this payment: `cbprobe fault` in
	// front of the gateway counts attempts per payment by it.
	hr.Header.Set("X-Request-Id", req.OrderID)
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return ans, ctx.Err()
		}
		return ans, &TransportError{URL: url, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		if ctx.Err() != nil {
			return ans, ctx.Err()
		}
		return ans, &TransportError{URL: url, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return ans, &GatewayError{Status: resp.StatusCode, URL: url, Body: string(raw)}
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return ans, &TransportError{URL: url, Err: fmt.Errorf("decode answer: %w", err)}
	}
	return ans, nil
}
