package collect

import (
	"encoding/json"
	"time"
)

// breakerSampleJSON mirrors BreakerSample with NaN-safe floats.
type breakerSampleJSON struct {
	Name                  string    `json:"breaker"`
	Instance              string    `json:"instance,omitempty"`
	Sent                  time.Time `json:"sent"`
	Received              time.Time `json:"received"`
	ObservedAt            time.Time `json:"observedAt"`
	State                 string    `json:"state"`
	FailureRate           jsonFloat `json:"failureRate"`
	SlowCallRate          jsonFloat `json:"slowCallRate"`
	FailureRateThreshold  jsonFloat `json:"failureRateThreshold"`
	SlowCallRateThreshold jsonFloat `json:"slowCallRateThreshold"`
	Buffered              jsonFloat `json:"buffered"`
	Failed                jsonFloat `json:"failed"`
	Slow                  jsonFloat `json:"slow"`
	SlowFailed            jsonFloat `json:"slowFailed"`
	NotPermitted          jsonFloat `json:"notPermitted"`
	NotPermittedTotal     jsonFloat `json:"notPermittedTotal"`
	CallsSuccessful       jsonFloat `json:"callsSuccessful"`
	CallsFailed           jsonFloat `json:"callsFailed"`
	CallsIgnored          jsonFloat `json:"callsIgnored"`
	ProcessStart          jsonFloat `json:"processStart"`
}

// MarshalJSON writes unknown (NaN) values as null.
func (s BreakerSample) MarshalJSON() ([]byte, error) {
	return json.Marshal(breakerSampleJSON{s.Name, s.Instance, s.Sent, s.Received, s.ObservedAt, s.State,
		jsonFloat(s.FailureRate), jsonFloat(s.SlowCallRate), jsonFloat(s.FailureRateThreshold),
		jsonFloat(s.SlowCallRateThreshold), jsonFloat(s.Buffered), jsonFloat(s.Failed), jsonFloat(s.Slow),
		jsonFloat(s.SlowFailed), jsonFloat(s.NotPermitted), jsonFloat(s.NotPermittedTotal),
		jsonFloat(s.CallsSuccessful), jsonFloat(s.CallsFailed), jsonFloat(s.CallsIgnored), jsonFloat(s.ProcessStart)})
}

// UnmarshalJSON reads null values back as NaN.
func (s *BreakerSample) UnmarshalJSON(b []byte) error {
	j := breakerSampleJSON{}
	n := newBreakerSample("", "")
	j.FailureRate, j.SlowCallRate, j.FailureRateThreshold, j.SlowCallRateThreshold = jsonFloat(n.FailureRate), jsonFloat(n.SlowCallRate), jsonFloat(n.FailureRateThreshold), jsonFloat(n.SlowCallRateThreshold)
	j.Buffered, j.Failed, j.Slow, j.SlowFailed, j.NotPermitted, j.NotPermittedTotal = jsonFloat(n.Buffered), jsonFloat(n.Failed), jsonFloat(n.Slow), jsonFloat(n.SlowFailed), jsonFloat(n.NotPermitted), jsonFloat(n.NotPermittedTotal)
	j.CallsSuccessful, j.CallsFailed, j.CallsIgnored, j.ProcessStart = jsonFloat(n.CallsSuccessful), jsonFloat(n.CallsFailed), jsonFloat(n.CallsIgnored), jsonFloat(n.ProcessStart)
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = BreakerSample{j.Name, j.Instance, j.Sent, j.Received, j.ObservedAt, j.State,
		float64(j.FailureRate), float64(j.SlowCallRate), float64(j.FailureRateThreshold), float64(j.SlowCallRateThreshold),
		float64(j.Buffered), float64(j.Failed), float64(j.Slow), float64(j.SlowFailed), float64(j.NotPermitted),
		float64(j.NotPermittedTotal), float64(j.CallsSuccessful), float64(j.CallsFailed), float64(j.CallsIgnored), float64(j.ProcessStart)}
	return nil
}
