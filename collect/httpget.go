package collect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// DefaultMaxBody is the largest response body a source reads: 8 MiB.
const DefaultMaxBody = 8 << 20

// DefaultTimeout is the per-request timeout when HTTPOptions.Timeout is 0.
const DefaultTimeout = 2 * time.Second

// HTTPOptions configures how a source talks HTTP.
type HTTPOptions struct {
	// Headers are added to every request (e.g. Authorization). Their values are
	// secrets: they are replaced by "REDACTED" in every message a source produces.
	Headers http.Header
	// Insecure skips TLS certificate verification (only when asked for explicitly).
	Insecure bool
	// Timeout bounds each request, body included; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxBody is the body size limit in bytes; 0 means DefaultMaxBody.
	MaxBody int64
	// Client replaces the HTTP client (tests); Insecure is then ignored.
	Client *http.Client
	// Clock stamps Sent and Received; nil means the system clock.
	Clock Clock
	// Logger receives debug messages; nil discards them.
	Logger *slog.Logger
	// EventBufferSize is the service's event ring size per breaker
	// (event-consumer-buffer-size); 0 means Resilience4j's default, 100.
	EventBufferSize int
	// InstanceLabel is, for the prom-api source, the label that names a replica
	// (BreakerSample.Instance); "" means Prometheus' own "instance".
	InstanceLabel string
}

// ParseHeader parses a "Name: value" flag into its parts.
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return "", "", fmt.Errorf("header %q: want \"Name: value\"", redactAll(s))
	}
	return name, strings.TrimSpace(value), nil
}

// redactAll hides everything after the colon (used before we know the value).
func redactAll(s string) string {
	if n, _, ok := strings.Cut(s, ":"); ok {
		return n + ": REDACTED"
	}
	return "REDACTED"
}

// httpGetter performs bounded GETs with redacted errors.
type httpGetter struct {
	client  *http.Client
	headers http.Header
	timeout time.Duration
	maxBody int64
	secrets []string
	clock   Clock
	logger  *slog.Logger
	bufSize int
	sizes   map[string]int // URL -> size of its last body, a read buffer hint
}

// readAllHint is io.ReadAll starting with buf, or a new buffer when buf has
// less than hint bytes (plus room to see EOF without growing).
func readAllHint(r io.Reader, hint int, buf []byte) ([]byte, error) {
	b := buf[:0]
	if cap(b) < hint+512 {
		b = make([]byte, 0, hint+512)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func newGetter(opt HTTPOptions) *httpGetter {
	g := &httpGetter{headers: opt.Headers.Clone(), timeout: opt.Timeout, maxBody: opt.MaxBody, clock: opt.Clock, logger: opt.Logger, bufSize: opt.EventBufferSize,
		sizes: map[string]int{}}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxBody
	}
	if g.clock == nil {
		g.clock = SystemClock()
	}
	if g.logger == nil {
		g.logger = slog.New(slog.DiscardHandler)
	}
	if g.bufSize <= 0 {
		g.bufSize = 100
	}
	for _, vs := range g.headers {
		for _, v := range vs {
			if len(v) >= 1 {
				g.secrets = append(g.secrets, v)
				// "Bearer abc": hide the token alone too, in case a server echoes it.
				if _, tok, ok := strings.Cut(v, " "); ok && len(tok) >= 4 {
					g.secrets = append(g.secrets, tok)
				}
			}
		}
	}
	g.client = opt.Client
	if g.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 4
		if opt.Insecure {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // explicit --insecure
		}
		g.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return g
}

// redact replaces secrets and URL passwords in s.
func (g *httpGetter) redact(s string) string {
	for _, sec := range g.secrets {
		s = strings.ReplaceAll(s, sec, "REDACTED")
	}
	return s
}

// FetchError is a failed request: what was asked, what kind of failure, why.
// Its message never contains header values.
type FetchError struct {
	// URL is the requested URL without credentials.
	URL string
	// Kind is one of "refused", "timeout", "http-status", "too-large", "network", "body".
	Kind string
	// Status is the HTTP status for Kind "http-status".
	Status int
	// Msg is the redacted explanation.
	Msg string
}

// Error implements error.
func (e *FetchError) Error() string { return fmt.Sprintf("GET %s: %s", e.URL, e.Msg) }

// Key identifies the class of failure, for reporting each distinct error once.
func (e *FetchError) Key() string { return fmt.Sprintf("%s %d %s", e.Kind, e.Status, e.URL) }

// ExitCode marks fetch failures as infrastructure errors (3).
func (e *FetchError) ExitCode() int { return 3 }

func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Redacted()
}

// get fetches u and returns the body (at most maxBody bytes) and the
// Content-Type. accept may be empty.
func (g *httpGetter) get(ctx context.Context, u, accept string) ([]byte, string, error) {
	return g.getInto(ctx, u, accept, nil)
}

// getInto is get reading the body into buf's memory when it is big enough
// (the caller must no longer use buf's contents).
func (g *httpGetter) getInto(ctx context.Context, u, accept string, buf []byte) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	su := safeURL(u)
	fail := func(kind string, status int, format string, a ...any) error {
		return &FetchError{URL: su, Kind: kind, Status: status, Msg: g.redact(fmt.Sprintf(format, a...))}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", fail("network", 0, "bad request: %v", err)
	}
	for k, vs := range g.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, "", g.classify(ctx, su, err)
	}
	defer resp.Body.Close()
	// Size the buffer from the Content-Length or this URL's previous answer,
	// so a poll reads each body into one allocation.
	hint := g.sizes[u]
	if resp.ContentLength > 0 {
		hint = int(min(resp.ContentLength, g.maxBody))
	}
	body, err := readAllHint(io.LimitReader(resp.Body, g.maxBody+1), hint, buf)
	g.sizes[u] = len(body)
	if err != nil {
		return nil, "", g.classify(ctx, su, err)
	}
	if int64(len(body)) > g.maxBody {
		return nil, "", fail("too-large", 0, "body larger than the %d MiB limit", g.maxBody>>20)
	}
	if resp.StatusCode != http.StatusOK {
		hint := ""
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			hint = " (check --header, e.g. 'Authorization: Bearer …')"
		case http.StatusNotFound:
			hint = " (endpoint not exposed? see management.endpoints.web.exposure.include)"
		}
		return body, resp.Header.Get("Content-Type"), fail("http-status", resp.StatusCode, "HTTP %s%s: %q", resp.Status, hint, snippet([]byte(strings.TrimSpace(string(body))), 120))
	}
	return body, resp.Header.Get("Content-Type"), nil
}

func (g *httpGetter) classify(ctx context.Context, su string, err error) error {
	kind, msg := "network", err.Error()
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		kind, msg = "refused", "connection refused"
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		kind, msg = "timeout", fmt.Sprintf("no answer within %v", g.timeout)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		kind, msg = "network", "connection closed before the whole answer arrived"
	}
	// url.Error repeats the URL; keep the message short.
	var ue *url.Error
	if kind == "network" && errors.As(err, &ue) {
		msg = ue.Err.Error()
	}
	return &FetchError{URL: su, Kind: kind, Msg: g.redact(msg)}
}

// bodyError wraps a parse failure of a good HTTP answer.
func (g *httpGetter) bodyError(u string, err error) error {
	return &FetchError{URL: safeURL(u), Kind: "body", Msg: g.redact(err.Error())}
}
