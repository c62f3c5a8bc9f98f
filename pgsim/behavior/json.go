package behavior

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
)

// wireBehavior is the JSON form of Behavior: durations and distributions as strings.
type wireBehavior struct {
	ErrorRate   float64 `json:"errorRate"`
	Latency     string  `json:"latency"`
	ErrorTiming string  `json:"errorTiming"`
	Slow        bool    `json:"slow"`
	SlowLatency string  `json:"slowLatency"`
	HangRate    float64 `json:"hangRate"`
	HangMax     string  `json:"hangMax"`
	ResetRate   float64 `json:"resetRate"`
}

// Fields lists the JSON field names of Behavior, in document order.
func Fields() []string {
	return []string{"errorRate", "latency", "errorTiming", "slow", "slowLatency", "hangRate", "hangMax", "resetRate"}
}

// MarshalJSON writes the behaviour with durations and distributions as strings:
//
//	{"errorRate":0.4,"latency":"100ms-500ms","errorTiming":"immediate","slow":false,
//	 "slowLatency":"150ms-300ms","hangRate":0,"hangMax":"30s","resetRate":0}
func (b Behavior) MarshalJSON() ([]byte, error) {
	str := func(d Distribution) string {
		if d == nil {
			return ""
		}
		return d.String()
	}
	return json.Marshal(wireBehavior{
		ErrorRate:   b.ErrorRate,
		Latency:     str(b.Latency),
		ErrorTiming: b.ErrorTiming.String(),
		Slow:        b.Slow,
		SlowLatency: str(b.SlowLatency),
		HangRate:    b.HangRate,
		HangMax:     b.HangMax.String(),
		ResetRate:   b.ResetRate,
	})
}

// UnmarshalJSON reads the form MarshalJSON writes. Fields absent from the
// document keep the receiver's current values (decode into DefaultBehavior()
// to fill gaps with defaults); unknown fields, nulls, wrong types and bad
// values are rejected with a *FieldError naming the field. The result is
// validated as a whole; on any error the receiver is left unchanged.
func (b *Behavior) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return fieldErr("", "want a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fieldErr("", "malformed JSON: %v", err)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	next := *b
	for _, k := range keys {
		if err := next.setField(k, raw[k]); err != nil {
			return err
		}
	}
	if err := next.Validate(); err != nil {
		return err
	}
	*b = next
	return nil
}

func (b *Behavior) setField(name string, v json.RawMessage) error {
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return fieldErr(name, "must not be null")
	}
	switch name {
	case "errorRate":
		return decodeRate(name, v, &b.ErrorRate)
	case "hangRate":
		return decodeRate(name, v, &b.HangRate)
	case "resetRate":
		return decodeRate(name, v, &b.ResetRate)
	case "slow":
		if err := json.Unmarshal(v, &b.Slow); err != nil {
			return fieldErr(name, "want true or false, got %s", clip(v))
		}
	case "latency", "slowLatency":
		s, err := decodeString(name, v)
		if err != nil {
			return err
		}
		d, err := ParseDistribution(s)
		if err != nil {
			return fieldErr(name, "%v", err)
		}
		if name == "latency" {
			b.Latency = d
		} else {
			b.SlowLatency = d
		}
	case "errorTiming":
		s, err := decodeString(name, v)
		if err != nil {
			return err
		}
		t, err := ParseErrorTiming(s)
		if err != nil {
			return fieldErr(name, "%v", err)
		}
		b.ErrorTiming = t
	case "hangMax":
		s, err := decodeString(name, v)
		if err != nil {
			return err
		}
		d, err := parseNonNegative(s)
		if err != nil {
			return fieldErr(name, "%v", err)
		}
		b.HangMax = d
	default:
		return fieldErr(name, "unknown field (known: errorRate, latency, errorTiming, slow, slowLatency, hangRate, hangMax, resetRate)")
	}
	return nil
}

func decodeRate(name string, v json.RawMessage, dst *float64) error {
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return fieldErr(name, "want a number in [0, 1], got %s", clip(v))
	}
	if math.IsNaN(f) || f < 0 || f > 1 {
		return fieldErr(name, "%v is not a probability in [0, 1]", f)
	}
	*dst = f
	return nil
}

func decodeString(name string, v json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fieldErr(name, "want a string such as \"150ms\", got %s", clip(v))
	}
	return s, nil
}

// clip shortens a raw JSON value for an error message.
func clip(v json.RawMessage) string {
	const max = 40
	r := []rune(string(bytes.TrimSpace(v)))
	if len(r) > max {
		return string(r[:max]) + "..."
	}
	return string(r)
}
