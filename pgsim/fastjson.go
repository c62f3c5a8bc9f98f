package pgsim

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// scanPayment is the fast path of DecodePayment for the usual body: one flat
// JSON object whose values are plain strings (no escapes) and integers. It
// returns ok=false for anything else (escapes, nested values, literals,
// non-integer numbers, keys that differ from the field names only in case,
// missing fields, bad UTF-8), and the careful path then decides. When ok is
// true the result equals what the careful path would bind.
func scanPayment(b []byte) (p PaymentRequest, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return p, false
	}
	i++
	var seen uint8
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return p, false
		}
		if b[i] == '}' && seen == 0 {
			return p, false // {} : missing fields, careful path
		}
		key, next, ok := scanString(b, i)
		if !ok {
			return p, false
		}
		i = skipWS(b, next)
		if i >= len(b) || b[i] != ':' {
			return p, false
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return p, false
		}
		var str string
		var num int64
		isNum := false
		switch c := b[i]; {
		case c == '"':
			if str, next, ok = scanString(b, i); !ok {
				return p, false
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(b) && (b[j] == '-' || (b[j] >= '0' && b[j] <= '9')) {
				j++
			}
			n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
			if err != nil || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) ||
				(b[i] == '0' && j-i > 1) || (b[i] == '-' && (j-i == 1 || (b[i+1] == '0' && j-i > 2))) {
				return p, false
			}
			num, isNum, next = n, true, j
		default:
			return p, false
		}
		switch key {
		case "orderId", "cardType", "cardNo", "callbackUrl":
			if isNum {
				return p, false
			}
			switch key {
			case "orderId":
				p.OrderID, seen = str, seen|1
			case "cardType":
				p.CardType, seen = str, seen|2
			case "cardNo":
				p.CardNo, seen = str, seen|4
			default:
				p.CallbackURL, seen = str, seen|16
			}
		case "amount":
			if !isNum {
				return p, false
			}
			p.Amount, seen = num, seen|8
		default:
			for _, f := range []string{"orderId", "cardType", "cardNo", "amount", "callbackUrl"} {
				if strings.EqualFold(key, f) {
					return p, false // Go's decoder would bind it: leave it to the careful path
				}
			}
		}
		i = skipWS(b, next)
		if i >= len(b) {
			return p, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '}' {
			return p, false
		}
		if skipWS(b, i+1) != len(b) || seen != 31 {
			return p, false
		}
		switch p.CardType {
		case "SAMSUNG", "KB", "HYUNDAI":
			return p, true
		}
		return p, false
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString reads a JSON string without escapes starting at b[i] == '"'.
func scanString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	j := i + 1
	for j < len(b) {
		c := b[j]
		if c == '"' {
			s := b[i+1 : j]
			if !utf8.Valid(s) {
				return "", j, false
			}
			return string(s), j + 1, true
		}
		if c == '\\' || c < 0x20 {
			return "", j, false
		}
		j++
	}
	return "", j, false
}
