package attack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// TargetError says the target cannot be reached. ExitCode is 3 (infrastructure).
type TargetError struct {
	// Target is the URL that was checked.
	Target string
	// Err is the reason.
	Err error
}

// Error implements error.
func (e *TargetError) Error() string { return fmt.Sprintf("check target %s: %v", e.Target, e.Err) }

// Unwrap returns the reason.
func (e *TargetError) Unwrap() error { return e.Err }

// ExitCode is 3: an unreachable target is an infrastructure error.
func (e *TargetError) ExitCode() int { return 3 }

// CheckTarget sends GET target and succeeds when any HTTP answer comes back
// (a 404 or 500 still proves the target is up). A malformed URL is a
// *ConfigError (exit code 2); a refused connection, DNS failure or timeout is
// a *TargetError (exit code 3) carrying the reason. client nil uses a client
// with DefaultTimeout.
func CheckTarget(ctx context.Context, target string, client *http.Client) error {
	u, err := url.Parse(strings.TrimSpace(target))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &ConfigError{Field: "Target", Msg: fmt.Sprintf("%q is not an http(s) base URL (want e.g. http://127.0.0.1:8080)", target)}
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return &TargetError{Target: target, Err: err}
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if d := time.Since(start); d >= 100*time.Millisecond {
			return &TargetError{Target: target, Err: fmt.Errorf("no answer after %s: %w", d.Round(time.Millisecond), err)}
		}
		return &TargetError{Target: target, Err: fmt.Errorf("no answer: %w", err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}
