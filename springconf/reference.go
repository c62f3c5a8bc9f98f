package springconf

import _ "embed"

//go:embed reference.yml
var referenceYAML []byte

// ReferenceYAML returns cbprobe's reference setting (DESIGN.md) as an application.yml:
// under resilience4j.circuitbreaker.configs.default COUNT_BASED 20, failure rate 60 %,
// slow calls above 100 ms, slow-call rate 50 %, 10 s in OPEN, 5 half-open calls, minimum
// calls left at the default; TimeLimiter 600 ms; Retry 3 attempts 500 ms apart; the
// actuator endpoints cbprobe reads exposed and the circuit-breaker health indicator on.
// The returned slice is a copy.
func ReferenceYAML() []byte {
	return append([]byte(nil), referenceYAML...)
}

// ReferenceName is the name the reference setting reads as in errors and findings.
const ReferenceName = "reference application.yml"

// LoadOrReference loads path, or parses the reference setting when path is "".
// It is how every command picks its configuration file.
func LoadOrReference(path string) (*File, error) {
	if path == "" {
		return Parse(ReferenceName, referenceYAML, YAML)
	}
	return Load(path)
}
