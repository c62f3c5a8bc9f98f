// Package service runs the user's service under test for one experiment arm
// (`cbprobe experiment NAME --service 'java -jar app.jar'`): it starts the command
// in its own process group with the arm's Spring properties in
// SPRING_APPLICATION_JSON, a free loopback port and the URL of cbprobe's gateway,
// waits until the health endpoint says UP, and stops the whole process group
// afterwards (SIGTERM, then SIGKILL after a grace period), so that nothing it
// started outlives the arm or cbprobe. The service's stdout and stderr go to a log
// file in the run directory; every fault (command not found, exited, listening on
// another port, never healthy, health DOWN, processes left behind) is an *Error
// whose message names the command, the fault and the last lines of that log.
//
// The package needs a Unix system (process groups); the checks of listening ports
// read /proc and are skipped where there is none.
package service

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Defaults of Config.
const (
	// DefaultHealthPath is Spring Boot actuator's health endpoint.
	DefaultHealthPath = "/actuator/health"
	// DefaultStartTimeout bounds the time from launch until health says UP.
	DefaultStartTimeout = 120 * time.Second
	// DefaultStopGrace is the time between SIGTERM and SIGKILL.
	DefaultStopGrace = 10 * time.Second
	// DefaultDownGrace is how long health may keep answering DOWN (or 404, 401,
	// 403) before the start is given up, well before the start timeout.
	DefaultDownGrace = 10 * time.Second
	// DefaultPollInterval is the time between two health requests.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultGatewayProperty is the Spring property that holds the payment
	// gateway's base URL in cbprobe's reference configuration and in
	// examples/spring-commerce.
	DefaultGatewayProperty = "pg.base-url"
	// LogTailLines is how many of the service's last log lines an Error shows.
	LogTailLines = 20
)

// Config says how to run the service for one arm.
type Config struct {
	// Command starts the service; it runs as /bin/sh -c COMMAND in a process group
	// of its own, e.g. "java -jar target/app.jar".
	Command string
	// Dir is the command's working directory; "" means cbprobe's.
	Dir string
	// Env adds or replaces environment variables on top of cbprobe's own.
	Env map[string]string
	// Properties are Spring properties (dotted keys as in application.properties)
	// given in SPRING_APPLICATION_JSON. A SPRING_APPLICATION_JSON already in the
	// environment (or in Env) is kept and these are merged into it; these win.
	Properties map[string]string
	// GatewayProperty is the property set to GatewayURL (default pg.base-url).
	GatewayProperty string
	// GatewayURL is the base URL of cbprobe's payment gateway (pgsim) that the
	// service should call; "" sets no gateway property.
	GatewayURL string
	// Port is where the service is told to listen on 127.0.0.1 (server.port,
	// SERVER_PORT); 0 picks a free port.
	Port int
	// LogPath is the file that receives the command's stdout and stderr; it is
	// created (or truncated). Required.
	LogPath string
	// RunDir, when set, is the run directory: the recorded log path is made
	// relative to it.
	RunDir string
	// Name names the run in messages, e.g. the arm ("" for none).
	Name string
	// HealthPath is the path polled until it says UP (default /actuator/health).
	HealthPath string
	// StartTimeout bounds launch to healthy (default 120 s).
	StartTimeout time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL (default 10 s).
	StopGrace time.Duration
	// DownGrace is how long health may keep answering DOWN, OUT_OF_SERVICE, 404,
	// 401 or 403 before the start is given up (default 10 s).
	DownGrace time.Duration
	// PollInterval is the time between health requests (default 250 ms).
	PollInterval time.Duration
	// Progress, when set, is called after every health request while starting
	// and when stopping; it must return quickly.
	Progress func(Progress)
	// Started, when set, is called once the command runs, before the health
	// wait (a command line registers Kill for a second Ctrl-C with it).
	Started func(*Process)
}

// ConfigError is a bad Config (exit code 2).
type ConfigError struct {
	// Field is the setting at fault, e.g. "--service".
	Field string
	// Msg says what is wrong with it.
	Msg string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// ExitCode is 2: a usage or configuration error.
func (e *ConfigError) ExitCode() int { return 2 }

// Validate checks the settings a user gives (flags, spec file) before anything
// runs. field names the command setting in messages (e.g. "--service").
func (c Config) Validate(field string) error {
	if strings.TrimSpace(c.Command) == "" {
		return &ConfigError{Field: field, Msg: "the command is empty"}
	}
	if c.HealthPath != "" && !strings.HasPrefix(c.HealthPath, "/") {
		return &ConfigError{Field: field + "-health", Msg: fmt.Sprintf("%q must start with /", c.HealthPath)}
	}
	for name, d := range map[string]time.Duration{"start-timeout": c.StartTimeout, "stop-grace": c.StopGrace, "down-grace": c.DownGrace, "poll-interval": c.PollInterval} {
		if d < 0 {
			return &ConfigError{Field: field + "-" + name, Msg: fmt.Sprintf("%s is negative", d)}
		}
	}
	if c.Port < 0 || c.Port > 65535 {
		return &ConfigError{Field: field + "-port", Msg: fmt.Sprintf("%d is not a TCP port", c.Port)}
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return &ConfigError{Field: field + "-env", Msg: fmt.Sprintf("%q is not an environment variable name", k)}
		}
	}
	if _, err := mergeSpringJSON(c.Env["SPRING_APPLICATION_JSON"], c.Properties); err != nil {
		return &ConfigError{Field: field, Msg: err.Error()}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.HealthPath == "" {
		c.HealthPath = DefaultHealthPath
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.StopGrace == 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.DownGrace == 0 {
		c.DownGrace = DefaultDownGrace
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.GatewayProperty == "" {
		c.GatewayProperty = DefaultGatewayProperty
	}
	return c
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// LogFileName is the name of an arm's service log in the run directory:
// service-<arm>.log.
func LogFileName(arm string) string {
	name := unsafeFileChars.ReplaceAllString(arm, "_")
	if name == "" {
		return "service.log"
	}
	return "service-" + name + ".log"
}

// ForArm returns c set up for one arm of a run: Name arm, the log file
// LogFileName(arm) in runDir, props added to c.Properties (props win) and the
// gateway's base URL.
func (c Config) ForArm(arm, runDir string, props map[string]string, gatewayURL string) Config {
	out := c
	out.Name = arm
	out.RunDir = runDir
	out.LogPath = filepath.Join(runDir, LogFileName(arm))
	out.Properties = maps.Clone(c.Properties)
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	maps.Copy(out.Properties, props)
	out.Env = maps.Clone(c.Env)
	out.GatewayURL = gatewayURL
	return out
}

// Stage is where a service run is.
type Stage string

// Stages reported through Config.Progress.
const (
	StageStarting Stage = "starting" // launched, nothing answers on the port yet
	StageHealth   Stage = "health"   // answers HTTP, health not UP yet
	StageHealthy  Stage = "healthy"  // health said UP
	StageStopping Stage = "stopping" // SIGTERM sent
	StageStopped  Stage = "stopped"  // no process of the group left
)

// Progress is a report on a starting or stopping service.
type Progress struct {
	// Name is Config.Name (the arm).
	Name string
	// Stage is where the run is.
	Stage Stage
	// Elapsed is the time since launch (since SIGTERM when stopping).
	Elapsed time.Duration
	// Timeout is the start timeout (the stop grace when stopping).
	Timeout time.Duration
	// URL is the service's base URL.
	URL string
	// Health is the last health answer, e.g. "connection refused" or "503 DOWN".
	Health string
}

// String is a one-line progress message for a terminal.
func (p Progress) String() string {
	prefix := "service"
	if p.Name != "" {
		prefix = p.Name + ": service"
	}
	el := p.Elapsed.Round(100 * time.Millisecond)
	switch p.Stage {
	case StageHealthy:
		return fmt.Sprintf("%s healthy on %s after %s", prefix, p.URL, el)
	case StageStopping:
		return fmt.Sprintf("%s stopping (%s of %s grace)", prefix, el, p.Timeout)
	case StageStopped:
		return fmt.Sprintf("%s stopped after %s", prefix, el)
	}
	s := fmt.Sprintf("%s starting on %s: %s of %s", prefix, p.URL, el, p.Timeout)
	if p.Health != "" {
		s += " (health: " + p.Health + ")"
	}
	return s
}
