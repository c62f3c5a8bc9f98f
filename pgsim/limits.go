package pgsim

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/netutil"
)

// Bounds on what a configuration or a client can make pgsim hold (docs/limits.md).
const (
	// MaxCallbackWorkers is the most callback goroutines a Config may ask for.
	MaxCallbackWorkers = 1024
	// MaxCallbackQueue is the most callbacks a Config may let wait for a worker.
	MaxCallbackQueue = 1_000_000
	// MaxTrackedEntries is the most orders or attempts a Config may keep in memory
	// (MaxOrders, MaxAttempts); the byte budget below usually binds first.
	MaxTrackedEntries = 10_000_000
	// DefaultMaxLogBytes is the default byte budget of the in-memory attempt log
	// (orders and attempts together, ids counted at their stored length).
	DefaultMaxLogBytes = 128 << 20
	// DefaultMaxStoreBytes is the default byte budget of the transaction store;
	// beyond it the oldest transactions are forgotten (GET answers 404 for them
	// and their settlement posts no callback).
	DefaultMaxStoreBytes = 128 << 20
	// MaxStoredIDBytes is the longest orderId or X-USER-ID the attempt log stores
	// as it is; a longer one is stored as its first bytes and a hash of the whole,
	// so distinct ids stay distinct (pgsim's answers and callbacks carry the full id).
	MaxStoredIDBytes = 64
)

// ControlTokenHeader carries Config.ControlToken on control API requests.
const ControlTokenHeader = "X-Pgsim-Token"

// ServerLimits bounds what clients can hold on an HTTP server: time to send a
// request, idle keep-alive time and simultaneous connections. pgsim and the
// demo service use them; the zero value of a field means its default.
type ServerLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 5 s).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included (default 15 s):
	// a client trickling its body is cut then.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long (default 60 s).
	IdleTimeout time.Duration
	// MaxConns bounds simultaneous connections (default 4096); further
	// connections wait in the kernel's accept queue until one closes.
	MaxConns int
}

// Defaults of ServerLimits.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxConns          = 4096
)

// WithDefaults returns l with every zero field set to its default.
func (l ServerLimits) WithDefaults() ServerLimits {
	if l.ReadHeaderTimeout == 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.ReadTimeout == 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	return l
}

// Validate reports a negative field.
func (l ServerLimits) Validate() error {
	switch {
	case l.ReadHeaderTimeout < 0, l.ReadTimeout < 0, l.IdleTimeout < 0:
		return fmt.Errorf("server timeouts must not be negative (read-header %v, read %v, idle %v)", l.ReadHeaderTimeout, l.ReadTimeout, l.IdleTimeout)
	case l.MaxConns < 0:
		return fmt.Errorf("max connections %d: want >= 1", l.MaxConns)
	}
	return nil
}

// Server returns an http.Server for h with l's timeouts (defaults applied);
// its error log goes to logger at debug level.
func (l ServerLimits) Server(h http.Handler, logger *slog.Logger) *http.Server {
	l = l.WithDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
}

// Serve serves h on ln in the background with l's connection cap and timeouts,
// logging a failure other than the server being closed as "<name> serve". It
// returns the capped listener and the server, for the caller to close.
func (l ServerLimits) Serve(ln net.Listener, h http.Handler, logger *slog.Logger, name string) (net.Listener, *http.Server) {
	ln = l.Listener(ln)
	srv := l.Server(h, logger)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(name+" serve", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return ln, srv
}

// WaitOrCut sleeps d; false when the client of r went away first, or cut was
// closed (the server cutting in-flight delays on Close).
func WaitOrCut(r *http.Request, d time.Duration, cut <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-cut:
		return false
	}
}

// Listener wraps ln so that at most l.MaxConns connections are open at once.
func (l ServerLimits) Listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, l.WithDefaults().MaxConns)
}

// IsLoopback reports whether addr (a listener's address) is a loopback address.
func IsLoopback(addr net.Addr) bool {
	if t, ok := addr.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// controlAllowed reports whether a control API request may proceed: with a
// token configured it must carry it; without one, the API is open only while
// the server listens on loopback.
func (s *Server) controlAllowed(r *http.Request) (bool, string) {
	if s.cfg.ControlToken != "" {
		got := r.Header.Get(ControlTokenHeader)
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.ControlToken)) == 1 {
			return true, ""
		}
		return false, "control API: missing or wrong " + ControlTokenHeader + " header"
	}
	if s.exposed.Load() {
		return false, "control API refused: pgsim listens on a non-loopback address; restart it with --control-token TOKEN and send the header " + ControlTokenHeader + ": TOKEN"
	}
	return true, ""
}

// storedID returns id as the attempt log stores it: as it is up to
// MaxStoredIDBytes, else a prefix and an FNV-1a hash of the whole id.
func storedID(id string) string {
	if len(id) <= MaxStoredIDBytes {
		return id
	}
	prefix := MaxStoredIDBytes - 20 // "…" (3 bytes), "#" and 16 hex digits follow
	for prefix > 0 && !utf8.RuneStart(id[prefix]) {
		prefix--
	}
	var h uint64 = 14695981039346656037
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	var b strings.Builder
	b.Grow(MaxStoredIDBytes)
	b.WriteString(id[:prefix])
	fmt.Fprintf(&b, "…#%016x", h)
	return b.String()
}

// Memory cost estimates behind the byte budgets (bytes; Go's map and slice
// overheads included).
const (
	attemptRecBytes = 56 + MaxStoredIDBytes // a record, and the id bytes it may keep alive after its order was evicted
	orderEntryBytes = MaxStoredIDBytes + 160
	txOverheadBytes = 256 // a Transaction, its map entries and queue slot, besides its strings
)

// LogCaps returns how many orders and attempts the in-memory attempt log keeps
// for c (defaults applied): MaxOrders and MaxAttempts, lowered so that each
// half of MaxLogBytes holds its worst case.
func (c Config) LogCaps() (orders, attempts int) {
	c = c.withDefaults()
	orders = min(c.MaxOrders, max(1, c.MaxLogBytes/2/orderEntryBytes))
	attempts = min(c.MaxAttempts, max(1, c.MaxLogBytes/2/attemptRecBytes))
	return orders, attempts
}

// txBytes is what the store accounts for one transaction.
func txBytes(t *Transaction) int {
	return txOverheadBytes + len(t.TransactionKey) + len(t.OrderID) + len(t.CardType) + len(t.CardNo) + len(t.userID) + len(t.callbackURL)
}
