package pgsim

import (
	"fmt"
	"net/url"
	"strings"
)

// refusalKind names a kind of refused payment and says how to fix it; fix
// may use the request's callbackUrl.
func refusalKind(msg, callbackURL, prefix string) (kind, fix string) {
	switch {
	case msg == msgUserHeader:
		return "missing-user-header", "send the X-USER-ID header with every payment request"
	case msg == msgTooLarge:
		return "body-too-large", "send a payment body under 1 MiB"
	case msg == msgBodyUnreadable || msg == msgBadRequest:
		return "unreadable-body", "send a JSON object with orderId, cardType, cardNo, amount and callbackUrl"
	case msg == msgOrderID:
		return "order-id", "send an orderId of at least 6 characters"
	case msg == msgCardNo:
		return "card-no", "send a cardNo formatted xxxx-xxxx-xxxx-xxxx"
	case msg == msgAmount:
		return "amount", "send an amount that is a positive integer"
	case msg == msgCallbackPrefix(prefix):
		suggest := "the scheme, host and port your service's callbackUrl uses"
		if u, err := url.Parse(callbackURL); err == nil && u.Scheme != "" && u.Host != "" {
			suggest = u.Scheme + "://" + u.Host
		}
		return "callback-prefix", fmt.Sprintf("callbackUrl %q does not start with %q: start pgsim with --callback-prefix %s (or callbackPrefix in its config), or make the service send a callbackUrl under %s",
			clip(callbackURL), prefix, suggest, prefix)
	case strings.HasPrefix(msg, "필수 필드"):
		return "missing-field", "send every field: orderId, cardType, cardNo, amount, callbackUrl"
	}
	return "bad-field", "fix the field the message names (cardType is one of SAMSUNG, KB, HYUNDAI; amount a number)"
}

// isValidationMessage reports whether msg comes from body validation (those
// are noted with the request's callbackUrl by create).
func isValidationMessage(msg string) bool {
	return msg != msgUserHeader && msg != msgTooLarge && msg != msgBodyUnreadable && msg != msgBadRequest
}

// noteRefusal logs the first refused payment of each kind with its fix, at
// warning level; later ones of the same kind are only counted.
func (s *Server) noteRefusal(status int, msg, callbackURL string) {
	kind, fix := refusalKind(msg, callbackURL, s.cfg.CallbackPrefix)
	s.refusalsMu.Lock()
	if s.refusals == nil {
		s.refusals = map[string]bool{}
	}
	first := !s.refusals[kind]
	s.refusals[kind] = true
	s.refusalsMu.Unlock()
	if first {
		s.logger.Warn("pgsim refused a payment (first of this kind; later ones are only counted in /__pgsim/stats and /metrics)",
			"kind", kind, "status", status, "message", clip(msg), "fix", fix)
	}
}

// clip shortens s for a log line.
func clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	return s[:200] + "…"
}
