package service

import (
	"fmt"
	"maps"
	"path/filepath"
	"time"
)

// Spec is the part of an experiment spec file's `service:` block that says how
// cbprobe starts the user's service for each arm, the file form of the
// --service flags:
//
//	service:
//	  command: java -jar target/commerce.jar
//	  dir: ../examples/spring-commerce      # relative to the spec file
//	  start-timeout: 120s
//	  stop-grace: 10s
//	  health: /actuator/health
//	  gateway-property: pg.base-url
//	  env: {JAVA_TOOL_OPTIONS: -Xmx256m}
type Spec struct {
	// Command starts the service (run with /bin/sh -c); empty means no service is started.
	Command string `yaml:"command"`
	// Dir is the working directory, relative to the spec file's folder; empty
	// means that folder.
	Dir string `yaml:"dir"`
	// Env adds environment variables to the command.
	Env map[string]string `yaml:"env"`
	// StartTimeout bounds launch to healthy, e.g. "120s" (default 120s).
	StartTimeout string `yaml:"start-timeout"`
	// StopGrace is the time between SIGTERM and SIGKILL, e.g. "10s" (default 10s).
	StopGrace string `yaml:"stop-grace"`
	// Health is the path polled until it says UP (default /actuator/health).
	Health string `yaml:"health"`
	// GatewayProperty is the Spring property given the gateway's base URL
	// (default pg.base-url).
	GatewayProperty string `yaml:"gateway-property"`
}

// IsZero reports whether the block sets nothing.
func (s Spec) IsZero() bool {
	return s.Command == "" && s.Dir == "" && len(s.Env) == 0 && s.StartTimeout == "" &&
		s.StopGrace == "" && s.Health == "" && s.GatewayProperty == ""
}

// Config converts the block into a Config. A relative Dir is resolved against
// baseDir (the spec file's folder); with no Dir the command runs in baseDir.
// Bad durations are *ConfigError naming service.KEY.
func (s Spec) Config(baseDir string) (Config, error) {
	c := Config{Command: s.Command, Env: maps.Clone(s.Env), HealthPath: s.Health, GatewayProperty: s.GatewayProperty}
	var err error
	if c.StartTimeout, err = parseDuration("service.start-timeout", s.StartTimeout); err != nil {
		return Config{}, err
	}
	if c.StopGrace, err = parseDuration("service.stop-grace", s.StopGrace); err != nil {
		return Config{}, err
	}
	switch {
	case s.Dir != "" && filepath.IsAbs(s.Dir):
		c.Dir = s.Dir
	case s.Dir != "" || baseDir != "":
		c.Dir = filepath.Join(baseDir, s.Dir)
	}
	return c, nil
}

func parseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, &ConfigError{Field: field, Msg: fmt.Sprintf("%q is not a positive duration (e.g. 120s)", s)}
	}
	return d, nil
}

// Override returns c with every field that o sets replaced by o's (Env and
// Properties are merged, o's entries win). Flags override a spec file this way.
func (c Config) Override(o Config) Config {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Command, o.Command)
	set(&c.Dir, o.Dir)
	set(&c.GatewayProperty, o.GatewayProperty)
	set(&c.GatewayURL, o.GatewayURL)
	set(&c.LogPath, o.LogPath)
	set(&c.RunDir, o.RunDir)
	set(&c.Name, o.Name)
	set(&c.HealthPath, o.HealthPath)
	for _, d := range []struct{ dst, v *time.Duration }{
		{&c.StartTimeout, &o.StartTimeout}, {&c.StopGrace, &o.StopGrace}, {&c.DownGrace, &o.DownGrace}, {&c.PollInterval, &o.PollInterval},
	} {
		if *d.v != 0 {
			*d.dst = *d.v
		}
	}
	if o.Port != 0 {
		c.Port = o.Port
	}
	if o.Progress != nil {
		c.Progress = o.Progress
	}
	if o.Started != nil {
		c.Started = o.Started
	}
	c.Env = mergeMaps(c.Env, o.Env)
	c.Properties = mergeMaps(c.Properties, o.Properties)
	return c
}

func mergeMaps(a, b map[string]string) map[string]string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// Resolve combines a spec file's block (relative paths against baseDir) with
// the command line's settings (flags; nil when none were given, which win) and
// validates the result. It returns nil when neither names a command.
func (s Spec) Resolve(baseDir string, flags *Config) (*Config, error) {
	if s.Command == "" && (flags == nil || flags.Command == "") {
		if flags != nil && !isZeroConfig(*flags) {
			return nil, &ConfigError{Field: "--service", Msg: "the --service-* settings need --service COMMAND (or service.command in the spec)"}
		}
		return nil, nil
	}
	c, err := s.Config(baseDir)
	if err != nil {
		return nil, err
	}
	if flags != nil && flags.Command != "" {
		c.Dir = "" // the spec's folder is the working directory of the spec's own command only
	}
	if flags != nil {
		c = c.Override(*flags)
	}
	if err := c.Validate("--service"); err != nil {
		return nil, err
	}
	return &c, nil
}

func isZeroConfig(c Config) bool {
	return c.Command == "" && c.Dir == "" && len(c.Env) == 0 && len(c.Properties) == 0 && c.GatewayProperty == "" &&
		c.HealthPath == "" && c.StartTimeout == 0 && c.StopGrace == 0 && c.Port == 0
}
