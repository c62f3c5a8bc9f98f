package pgsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"go.yaml.in/yaml/v3"
)

// FileError is a bad configuration file; Error gives "file:line: key: msg".
// ExitCode is 2 (usage/configuration).
type FileError struct {
	File string // path of the configuration file
	Line int    // 1-based line of the fault; 0 when unknown
	Key  string // YAML key at fault; "" for the file as a whole
	Msg  string // what is wrong
}

// Error returns "file:line: key: msg".
func (e *FileError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Key != "" {
		s += ": " + e.Key
	}
	return s + ": " + e.Msg
}

// ExitCode returns 2.
func (e *FileError) ExitCode() int { return 2 }

// LoadConfigFile reads a YAML configuration file on top of base (see ParseConfig).
func LoadConfigFile(path string, base Config) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return base, &FileError{File: path, Msg: fmt.Sprintf("read: %v", err)}
	}
	return ParseConfig(path, data, base)
}

// ParseConfig reads a YAML document on top of base; keys absent from the
// document keep base's values. The document looks like:
//
//	seed: 1                       # 0 = random
//	callbackPrefix: http://localhost:8080
//	callbackWorkers: 64
//	callbackQueue: 100000
//	callbackTimeout: 5s
//	maxOrders: 1000000
//	maxAttempts: 1000000
//	log: attempts.jsonl
//	speed: 1
//	behavior:                     # the control API's JSON fields
//	  errorRate: 0.4
//	  latency: 100ms-500ms        # fixed, MIN-MAX, normal:..., lognormal:..., list:...
//	  errorTiming: immediate      # or after-latency
//	  slow: false
//	  slowLatency: 150ms-300ms
//	  hangRate: 0
//	  hangMax: 30s
//	  resetRate: 0
//
// Errors name the file, line and key.
func ParseConfig(name string, data []byte, base Config) (Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return base, &FileError{File: name, Msg: fmt.Sprintf("not valid YAML: %v", err)}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return base, nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return base, &FileError{File: name, Line: root.Line, Msg: "want a mapping of settings"}
	}
	cfg := base
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		fail := func(format string, args ...any) error {
			return &FileError{File: name, Line: v.Line, Key: k.Value, Msg: fmt.Sprintf(format, args...)}
		}
		var err error
		switch k.Value {
		case "seed":
			err = v.Decode(&cfg.Seed)
		case "callbackPrefix":
			err = v.Decode(&cfg.CallbackPrefix)
		case "callbackWorkers":
			err = v.Decode(&cfg.CallbackWorkers)
			if err == nil && cfg.CallbackWorkers < 1 {
				return base, fail("%d: want >= 1", cfg.CallbackWorkers)
			}
		case "callbackQueue":
			err = v.Decode(&cfg.CallbackQueue)
			if err == nil && cfg.CallbackQueue < 1 {
				return base, fail("%d: want >= 1", cfg.CallbackQueue)
			}
		case "callbackTimeout":
			var s string
			if err = v.Decode(&s); err == nil {
				var d time.Duration
				if d, err = time.ParseDuration(s); err == nil && d <= 0 {
					return base, fail("%q: want > 0", s)
				}
				cfg.CallbackTimeout = d
			}
		case "maxOrders":
			err = v.Decode(&cfg.MaxOrders)
			if err == nil && cfg.MaxOrders < 1 {
				return base, fail("%d: want >= 1", cfg.MaxOrders)
			}
		case "maxAttempts":
			err = v.Decode(&cfg.MaxAttempts)
			if err == nil && cfg.MaxAttempts < 1 {
				return base, fail("%d: want >= 1", cfg.MaxAttempts)
			}
		case "log":
			err = v.Decode(&cfg.LogPath)
		case "speed":
			err = v.Decode(&cfg.Speed)
			if err == nil && (math.IsNaN(cfg.Speed) || cfg.Speed <= 0 || math.IsInf(cfg.Speed, 0)) {
				return base, fail("%v: want a number > 0", cfg.Speed)
			}
		case "behavior":
			b, berr := behaviorFromYAML(v, cfg.Behavior)
			if berr != nil {
				var fe *behavior.FieldError
				if errors.As(berr, &fe) && fe.Field != "" {
					line := v.Line
					if n := findKey(v, fe.Field); n != nil {
						line = n.Line
					}
					return base, &FileError{File: name, Line: line, Key: "behavior." + fe.Field, Msg: fe.Msg}
				}
				return base, fail("%v", berr)
			}
			cfg.Behavior = b
		default:
			return base, &FileError{File: name, Line: k.Line, Key: k.Value,
				Msg: "unknown setting (known: seed, callbackPrefix, callbackWorkers, callbackQueue, callbackTimeout, maxOrders, maxAttempts, log, speed, behavior)"}
		}
		if err != nil {
			return base, fail("%v", err)
		}
	}
	return cfg, nil
}

// behaviorFromYAML converts the YAML mapping to JSON and decodes it with the
// control API's decoder, so both accept exactly the same fields and values.
func behaviorFromYAML(n *yaml.Node, base behavior.Behavior) (behavior.Behavior, error) {
	if n.Kind != yaml.MappingNode {
		return base, errors.New("want a mapping of behaviour fields")
	}
	var generic map[string]any
	if err := n.Decode(&generic); err != nil {
		return base, err
	}
	data, err := json.Marshal(generic)
	if err != nil {
		return base, fmt.Errorf("convert to JSON: %w", err)
	}
	if isZeroBehavior(base) {
		base = behavior.DefaultBehavior()
	}
	return DecodeBehavior(base, data)
}

func findKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}
