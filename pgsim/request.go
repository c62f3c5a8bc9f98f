package pgsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Korean messages of the original pg-simulator (ErrorType defaults, validate(),
// UserInfoArgumentResolver, ApiControllerAdvice), reproduced exactly.
const (
	msgInternal       = "일시적인 오류가 발생했습니다."
	msgBadRequest     = "잘못된 요청입니다."
	msgNotFound       = "존재하지 않는 요청입니다."
	msgUserHeader     = "유저 ID 헤더는 필수입니다."
	msgUnstable       = "현재 서버가 불안정합니다. 잠시 후 다시 시도해주세요."
	msgBodyUnreadable = "요청 본문을 처리하는 중 오류가 발생했습니다. JSON 메세지 규격을 확인해주세요."
	msgOrderID        = "주문 ID는 6자리 이상 문자열이어야 합니다."
	msgCardNo         = "카드 번호는 xxxx-xxxx-xxxx-xxxx 형식이어야 합니다."
	msgAmount         = "결제금액은 양의 정수여야 합니다."
	// Added by pgsim (the original answers these with a 500 or not at all).
	msgTooLarge = "요청 본문이 너무 큽니다. (최대 1048576 바이트)"
)

// reason phrases used as errorCode.
const (
	codeBadRequest       = "Bad Request"
	codeNotFound         = "Not Found"
	codeInternal         = "Internal Server Error"
	codeNotAllowed       = "Method Not Allowed"
	codeTooLarge         = "Payload Too Large"
	maxBodyBytes   int64 = 1 << 20
)

func msgMissingField(path string) string {
	return "필수 필드 '" + path + "'이(가) 누락되었습니다."
}

// msgTypeMismatch follows ApiControllerAdvice's InvalidFormatException text,
// including the space before the (possibly empty) allowed-values part.
func msgTypeMismatch(field, value, typ, allowed string) string {
	return "필드 '" + field + "'의 값 '" + value + "'이(가) 예상 타입(" + typ + ")과 일치하지 않습니다. " + allowed
}

func msgCallbackPrefix(prefix string) string {
	return "콜백 URL 은 " + prefix + " 로 시작해야 합니다."
}

func msgTxNotFound(key string) string {
	return "(transactionKey: " + key + ") 결제건이 존재하지 않습니다."
}

func msgOrderNotFound(id string) string {
	return "(orderId: " + id + ") 에 해당하는 결제건이 존재하지 않습니다."
}

func msgMissingParam(name string) string {
	return "필수 요청 파라미터 '" + name + "' (타입: String)가 누락되었습니다."
}

func msgMethod(method string) string {
	return "지원하지 않는 요청 메서드입니다: " + method
}

// Card types the gateway accepts, in the enum's order.
const allowedCardTypes = "사용 가능한 값 : [SAMSUNG, KB, HYUNDAI]"

// PaymentRequest is a decoded and validated POST /api/v1/payments body.
type PaymentRequest struct {
	OrderID     string `json:"orderId"`     // the caller's order id, at least 6 characters
	CardType    string `json:"cardType"`    // SAMSUNG, KB or HYUNDAI
	CardNo      string `json:"cardNo"`      // xxxx-xxxx-xxxx-xxxx
	Amount      int64  `json:"amount"`      // whole currency units, > 0
	CallbackURL string `json:"callbackUrl"` // where the final status is POSTed
}

// wirePayment keeps every field raw so each can be checked the way Jackson would.
type wirePayment struct {
	OrderID     json.RawMessage `json:"orderId"`
	CardType    json.RawMessage `json:"cardType"`
	CardNo      json.RawMessage `json:"cardNo"`
	Amount      json.RawMessage `json:"amount"`
	CallbackURL json.RawMessage `json:"callbackUrl"`
}

// RequestError is a 4xx answer: the HTTP status and the envelope's message.
type RequestError struct {
	Status  int    // HTTP status code, 400..499
	Message string // the envelope's meta.message
	// OrderID is the orderId read from the body, if it could be read.
	OrderID string
}

// Error returns the message.
func (e *RequestError) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Message) }

func badRequest(msg string) *RequestError { return &RequestError{Status: 400, Message: msg} }

// DecodePayment reads and validates a payment body the way the original
// does: parse (400 with the Jackson-style message), then validate() in its order
// (orderId, cardNo, amount, callbackUrl prefix). It never panics.
func DecodePayment(body []byte, callbackPrefix string) (PaymentRequest, error) {
	// Fast path: a hand scanner for the usual flat body; anything unusual (a
	// number as a string, an escape, a missing field, a bad card type) takes the
	// careful path, which gives the exact Jackson-style message.
	if p, ok := scanPayment(body); ok {
		return p, validatePayment(p, callbackPrefix)
	}
	return decodePaymentCarefully(body, callbackPrefix)
}

func decodePaymentCarefully(body []byte, callbackPrefix string) (PaymentRequest, error) {
	var p PaymentRequest
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return p, badRequest(msgBodyUnreadable)
	}
	var w wirePayment
	if err := json.Unmarshal(body, &w); err != nil {
		return p, badRequest(msgBodyUnreadable)
	}
	// Binding, in declaration order: type errors first, then the first missing field.
	var missing string
	noteMissing := func(name string) {
		if missing == "" {
			missing = name
		}
	}
	var err *RequestError
	var ok bool
	if p.OrderID, ok, err = stringField("orderId", w.OrderID); err != nil {
		return p, err
	} else if !ok {
		noteMissing("orderId")
	}
	if ok, err = cardTypeField(w.CardType, &p.CardType); err != nil {
		err.OrderID = p.OrderID
		return p, err
	} else if !ok {
		noteMissing("cardType")
	}
	if p.CardNo, ok, err = stringField("cardNo", w.CardNo); err != nil {
		err.OrderID = p.OrderID
		return p, err
	} else if !ok {
		noteMissing("cardNo")
	}
	if ok, err = amountField(w.Amount, &p.Amount); err != nil {
		err.OrderID = p.OrderID
		return p, err
	} else if !ok {
		noteMissing("amount")
	}
	if p.CallbackURL, ok, err = stringField("callbackUrl", w.CallbackURL); err != nil {
		err.OrderID = p.OrderID
		return p, err
	} else if !ok {
		noteMissing("callbackUrl")
	}
	if missing != "" {
		e := badRequest(msgMissingField(missing))
		e.OrderID = p.OrderID
		return p, e
	}
	return p, validatePayment(p, callbackPrefix)
}

// validatePayment is the original validate(), in its order.
func validatePayment(p PaymentRequest, callbackPrefix string) error {
	fail := func(msg string) error {
		e := badRequest(msg)
		e.OrderID = p.OrderID
		return e
	}
	if isBlank(p.OrderID) || utf16Len(p.OrderID) < 6 {
		return fail(msgOrderID)
	}
	if !validCardNo(p.CardNo) {
		return fail(msgCardNo)
	}
	if p.Amount <= 0 {
		return fail(msgAmount)
	}
	if !strings.HasPrefix(p.CallbackURL, callbackPrefix) {
		return fail(msgCallbackPrefix(callbackPrefix))
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// stringField reads a String property: a JSON string, or any scalar coerced to
// its text as Jackson does (123456 -> "123456"); null or absent is missing.
func stringField(name string, raw json.RawMessage) (string, bool, *RequestError) {
	if isNull(raw) {
		return "", false, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false, badRequest(msgBodyUnreadable)
		}
		return s, true, nil
	case '{', '[':
		return "", false, badRequest(msgTypeMismatch(name, clipValue(string(raw)), "String", ""))
	}
	return string(raw), true, nil // number, true or false
}

func cardTypeField(raw json.RawMessage, dst *string) (bool, *RequestError) {
	if isNull(raw) {
		return false, nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return false, badRequest(msgTypeMismatch("cardType", clipValue(string(raw)), "CardTypeDto", allowedCardTypes))
	}
	switch s {
	case "":
		return false, nil // ACCEPT_EMPTY_STRING_AS_NULL_OBJECT: "" binds as null
	case "SAMSUNG", "KB", "HYUNDAI":
		*dst = s
		return true, nil
	}
	return false, badRequest(msgTypeMismatch("cardType", clipValue(s), "CardTypeDto", allowedCardTypes))
}

// amountField reads a long: a JSON integer, a float (truncated, as Jackson's
// ACCEPT_FLOAT_AS_INT does) or a string holding an integer ("5000").
func amountField(raw json.RawMessage, dst *int64) (bool, *RequestError) {
	if isNull(raw) {
		return false, nil
	}
	mismatch := func(v string) (bool, *RequestError) {
		return false, badRequest(msgTypeMismatch("amount", clipValue(v), "long", ""))
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return false, badRequest(msgBodyUnreadable)
		}
		if s == "" {
			return false, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return mismatch(s)
		}
		*dst = n
		return true, nil
	case c == '-' || (c >= '0' && c <= '9'):
		text := string(raw)
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			*dst = n
			return true, nil
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || f >= 9.2e18 || f <= -9.2e18 {
			return mismatch(text)
		}
		*dst = int64(f)
		return true, nil
	}
	return mismatch(string(raw))
}

func clipValue(s string) string {
	const max = 64
	r := []rune(s)
	if len(r) > max {
		return string(r[:max]) + "..."
	}
	return s
}

// isBlank is Kotlin's String.isBlank: empty or only whitespace.
func isBlank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// utf16Len is Kotlin's String.length: UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r) // 1 or 2: range yields valid runes or U+FFFD
	}
	return n
}

// validCardNo matches ^\d{4}-\d{4}-\d{4}-\d{4}$ (ASCII digits, as Java's \d).
func validCardNo(s string) bool {
	if len(s) != 19 {
		return false
	}
	for i := 0; i < 19; i++ {
		c := s[i]
		if i == 4 || i == 9 || i == 14 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
