package springconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Format is the syntax of a Spring configuration file.
type Format int

const (
	// YAML is application.yml / application.yaml (multi-document allowed).
	YAML Format = iota
	// Properties is application.properties (java.util.Properties syntax).
	Properties
)

// String returns "yaml" or "properties".
func (f Format) String() string {
	if f == Properties {
		return "properties"
	}
	return "yaml"
}

// File is a parsed Spring configuration: every property flattened to Spring's names, the
// resilience4j sections bound and checked. Build it with Load or Parse.
type File struct {
	name     string
	format   Format
	props    map[string]*entry   // canonical key -> last scalar entry
	lists    map[string][]*entry // canonical key of a list -> its indexed items, in index order
	sections map[string]*section
	notes    []Finding      // parse-time findings: unknown keys, duplicates, skipped documents
	keyLines map[string]int // YAML only: canonical key of every mapping key -> its line
	entries  []entry        // every property in file order, kept for Overlay
}

// section is resilience4j.circuitbreaker / timelimiter / retry after binding.
type section struct {
	name      string // circuitbreaker | timelimiter | retry
	prefix    string // resilience4j.<name>
	specs     map[string]spec
	configs   map[string]*instance // by bound name
	instances map[string]*instance // by bound name (instances and backends)
	order     []*instance          // instances in file order
}

// instance is one configs.<key> or instances.<key> entry.
type instance struct {
	mapName   string // configs | instances | backends
	raw       string // the key as written, brackets kept
	bound     string // the key after Spring's map-key rule
	bracketed bool
	line      int
	settings  map[string]*setting // kebab name -> value
}

// setting is one bound per-instance value with where it came from.
type setting struct {
	key  string // full key path, kebab, e.g. resilience4j.circuitbreaker.configs.default.sliding-window-size
	line int
	val  value
	// fromItems is true for a list assembled from indexed items (record-exceptions[0], ...).
	fromItems bool
}

// InstanceKey is one key under configs./instances./backends. as written and as Spring binds it.
type InstanceKey struct {
	// Map is "configs", "instances" or "backends".
	Map string
	// Raw is the key as written, brackets kept: "[PgPaymentClient#requestPayment(String,PaymentRequest)]".
	Raw string
	// Bound is the map key Spring uses: brackets removed, and for an unbracketed key every
	// character other than a letter, digit, '-' or '.' dropped.
	Bound string
	// Line is the 1-based line of the key (YAML) or of its first property (.properties).
	Line int
}

// Load reads a .yml, .yaml or .properties file (by extension) and parses it.
func Load(path string) (*File, error) {
	var f Format
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yml", ".yaml":
		f = YAML
	case ".properties":
		f = Properties
	default:
		return nil, &Error{File: path, Msg: "unknown file type (want .yml, .yaml or .properties)"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("read: %v", err)}
	}
	return Parse(path, data, f)
}

// Parse parses data in the given format. name is used in error messages and findings.
// Every resilience4j circuitbreaker, timelimiter and retry entry is checked the way the
// Spring property setters check it, so a value that would stop the application from
// starting is an error here. All such errors are returned, joined; each is an *Error.
func Parse(name string, data []byte, f Format) (*File, error) {
	file := &File{name: name, format: f, props: map[string]*entry{}, lists: map[string][]*entry{}}
	var docs [][]entry
	switch f {
	case YAML:
		d, lines, err := parseYAML(name, data)
		if err != nil {
			return nil, err
		}
		docs, file.keyLines = d, lines
	case Properties:
		d, err := parseProperties(name, data)
		if err != nil {
			return nil, err
		}
		docs = d
	default:
		return nil, &Error{File: name, Msg: fmt.Sprintf("unknown format %d", int(f))}
	}
	var entries []entry
	for _, doc := range docs {
		if e, ok := profileActivation(doc); ok {
			file.notes = append(file.notes, Finding{ID: "profile-document-skipped", Severity: SeverityInfo, Key: e.name, Line: e.line,
				Message: fmt.Sprintf("This YAML document applies only when %s=%s is active; cbprobe reads the documents without a profile condition.", e.name, e.value),
				Fix:     "Put the settings cbprobe should check in a document without a profile condition, or pass the profile's file."})
			continue
		}
		entries = append(entries, doc...)
	}
	file.entries = entries
	file.index(entries)
	if err := file.bind(entries); err != nil {
		return nil, err
	}
	return file, nil
}

// profileActivation finds spring.config.activate.on-profile (or the legacy spring.profiles) in a document.
func profileActivation(doc []entry) (entry, bool) {
	for _, e := range doc {
		c := canonKey(e.elems)
		if c == "spring.config.activate.onprofile" || c == "spring.profiles" {
			return e, true
		}
	}
	return entry{}, false
}

// canonKey renders elements in relaxed form: unbracketed elements canonicalised,
// bracketed ones kept exactly inside brackets.
func canonKey(elems []element) string { return joinElems(elems, canon) }

// joinElems renders elements as a key path: unbracketed elements passed
// through plain and joined by dots, bracketed ones kept exactly inside brackets.
func joinElems(elems []element, plain func(string) string) string {
	var b strings.Builder
	for i, e := range elems {
		if e.bracketed {
			b.WriteString("[" + e.text + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(plain(e.text))
	}
	return b.String()
}

// isIndex reports whether e is a list index such as [0].
func isIndex(e element) (int, bool) {
	if !e.bracketed || e.text == "" {
		return 0, false
	}
	n, err := strconv.Atoi(e.text)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func (f *File) index(entries []entry) {
	type item struct {
		idx int
		e   *entry
	}
	tmp := map[string][]item{}
	for i := range entries {
		e := &entries[i]
		n := len(e.elems)
		if idx, ok := isIndex(e.elems[n-1]); ok && n > 1 {
			base := canonKey(e.elems[:n-1])
			tmp[base] = append(tmp[base], item{idx, e})
			continue
		}
		f.props[canonKey(e.elems)] = e
	}
	for k, items := range tmp {
		sort.SliceStable(items, func(a, b int) bool { return items[a].idx < items[b].idx })
		var out []*entry
		for j, it := range items {
			if j > 0 && items[j-1].idx == it.idx {
				out[len(out)-1] = it.e // a later document overrides the same index
				continue
			}
			out = append(out, it.e)
		}
		f.lists[k] = out
	}
}

// Get returns any property by its dotted key, compared with Spring's relaxed rules
// ("pg.base-url", "pg.baseUrl" and "pg.base_url" are the same key). A list is returned
// comma-joined. The bool is false when the key is absent.
func (f *File) Get(key string) (string, bool) {
	elems, err := parseName(key)
	if err != nil {
		return "", false
	}
	c := canonKey(elems)
	if items, ok := f.lists[c]; ok {
		vals := make([]string, len(items))
		for i, it := range items {
			vals[i] = it.value
		}
		return strings.Join(vals, ","), true
	}
	if e, ok := f.props[c]; ok {
		return e.value, true
	}
	return "", false
}

// getList returns a list property given either as indexed items or as a comma string.
func (f *File) getList(key string) ([]string, bool) {
	v, ok := f.Get(key)
	if !ok {
		return nil, false
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, true
}

// Name returns the file name given to Load or Parse.
func (f *File) Name() string { return f.name }

// Format returns the syntax the file was parsed as.
func (f *File) Format() Format { return f.format }

// InstanceNames lists the keys under configs., instances. and backends. of a section
// ("circuitbreaker", "timelimiter" or "retry"), in file order.
func (f *File) InstanceNames(sectionName string) []InstanceKey {
	s := f.sections[sectionName]
	if s == nil {
		return nil
	}
	out := make([]InstanceKey, 0, len(s.order))
	for _, in := range s.order {
		out = append(out, InstanceKey{Map: in.mapName, Raw: in.raw, Bound: in.bound, Line: in.line})
	}
	return out
}

// bind walks the resilience4j sections and checks every value.
func (f *File) bind(entries []entry) error {
	f.sections = map[string]*section{
		sectionCircuitBreaker: {name: sectionCircuitBreaker, specs: circuitBreakerSpecs()},
		sectionTimeLimiter:    {name: sectionTimeLimiter, specs: timeLimiterSpecs()},
		sectionRetry:          {name: sectionRetry, specs: retrySpecs()},
	}
	for _, s := range f.sections {
		s.prefix = "resilience4j." + s.name
		s.configs = map[string]*instance{}
		s.instances = map[string]*instance{}
	}
	knownModules := map[string]bool{"circuitbreaker": true, "timelimiter": true, "retry": true, "bulkhead": true,
		"threadpoolbulkhead": true, "ratelimiter": true, "micrometer": true, "thread": true, "scheduled": true}
	var errs []error
	for i := range entries {
		e := &entries[i]
		if len(e.elems) < 2 || e.elems[0].bracketed || canon(e.elems[0].text) != "resilience4j" {
			continue
		}
		mod := e.elems[1]
		s := f.sections[canon(mod.text)]
		if s == nil || mod.bracketed {
			if !knownModules[canon(mod.text)] {
				f.unknown(e, "resilience4j."+mod.text, "resilience4j has no module named "+strconv.Quote(mod.text)+"; Spring ignores everything under it.")
			}
			continue
		}
		if len(e.elems) < 3 {
			continue
		}
		mapEl := e.elems[2]
		mapName := canon(mapEl.text)
		if mapEl.bracketed || !(mapName == "configs" || mapName == "instances" || (mapName == "backends" && s.name == sectionCircuitBreaker)) {
			if !mapEl.bracketed && sectionGlobals(s.name)[mapName] {
				continue
			}
			f.unknown(e, s.prefix+"."+rawKey(mapEl), "Not a key of "+s.prefix+"; Spring ignores it silently.")
			continue
		}
		if len(e.elems) < 4 {
			if !e.null {
				f.unknown(e, e.name, "A value where Spring expects a map of names to settings.")
			}
			continue
		}
		keyEl := e.elems[3]
		bound := boundMapKey(keyEl)
		line := e.line
		if kl := f.keyLines[canonKey(e.elems[:4])]; kl > 0 {
			line = kl
		}
		if bound == "" {
			f.unknown(e, s.prefix+"."+mapName+"."+rawKey(keyEl), "This map key is empty after Spring drops every character other than letters, digits, '-' and '.'; write it in brackets.")
			continue
		}
		inst := s.instanceFor(mapName, keyEl, bound, line)
		rest := e.elems[4:]
		if len(rest) == 0 {
			continue // an empty mapping: the instance exists with no settings
		}
		sp, ok := s.specs[canon(rest[0].text)]
		if !ok || rest[0].bracketed {
			f.unknown(e, inst.path(s, joinRaw(rest)), unknownSettingMessage(s, inst, rest))
			continue
		}
		path := inst.path(s, sp.name)
		listItem := false
		if len(rest) == 2 {
			if _, isIdx := isIndex(rest[1]); isIdx && sp.kind == kindClasses {
				listItem = true
			}
		}
		if len(rest) > 1 && !listItem {
			f.unknown(e, inst.path(s, joinRaw(rest)), fmt.Sprintf("%s takes a single value; Spring ignores this nested or list form silently and %s stays unset.", sp.name, sp.name))
			continue
		}
		if e.null || strings.TrimSpace(e.value) == "" && sp.kind != kindClasses {
			continue // an empty value binds as null: not set
		}
		v, err := parseValue(sp.kind, e.value)
		if err == nil && sp.check != nil {
			if msg := sp.check(v); msg != "" {
				err = fmt.Errorf("%s %s", strings.TrimSpace(e.value), msg)
			}
		}
		if err != nil {
			errs = append(errs, errorf(f.name, e.line, path, "%v", err))
			continue
		}
		prev := inst.settings[sp.name]
		if listItem {
			if prev != nil && prev.fromItems {
				prev.val.list = append(prev.val.list, v.list...)
				continue
			}
		} else if prev != nil {
			f.notes = append(f.notes, Finding{ID: "duplicate-setting", Severity: SeverityWarning, Key: path, Line: e.line,
				Message: fmt.Sprintf("%s is set twice for %s (also at line %d, maybe in another spelling or under backends); the later value wins.", sp.name, inst.raw, prev.line),
				Fix:     "Keep one of the two."})
		}
		if v.list == nil && sp.kind == kindClasses {
			v.list = []string{}
		}
		inst.settings[sp.name] = &setting{key: path, line: e.line, val: v, fromItems: listItem}
	}
	errs = append(errs, f.checkCombinations()...)
	errs = append(errs, f.checkBaseConfigs()...)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return nil
}

// joinRaw renders elements as a key path, brackets kept.
func joinRaw(elems []element) string {
	return joinElems(elems, func(s string) string { return s })
}

func unknownSettingMessage(s *section, inst *instance, rest []element) string {
	if len(rest) > 1 && !inst.bracketed && inst.mapName != "configs" {
		if _, ok := s.specs[canon(rest[len(rest)-1].text)]; ok {
			return fmt.Sprintf("Not a key of a %s instance; Spring ignores it silently. A '.' in an instance name nests the keys: the instance is %q. Write the name in brackets to keep it whole.", s.name, inst.bound)
		}
	}
	return fmt.Sprintf("Not a key of a %s instance; Spring ignores it silently.", s.name)
}

func (f *File) unknown(e *entry, key, msg string) {
	f.notes = append(f.notes, Finding{ID: "unknown-key", Severity: SeverityWarning, Key: key, Line: e.line,
		Message: msg, Fix: "Check the spelling against the resilience4j-spring-boot3 property names, or remove the key."})
}

func (s *section) instanceFor(mapName string, keyEl element, bound string, line int) *instance {
	m := s.instances
	if mapName == "configs" {
		m = s.configs
	}
	if in, ok := m[bound]; ok {
		return in
	}
	in := &instance{mapName: mapName, raw: rawKey(keyEl), bound: bound, bracketed: keyEl.bracketed, line: line, settings: map[string]*setting{}}
	m[bound] = in
	s.order = append(s.order, in)
	return in
}

// path is the full key path of a setting of this instance, as the file wrote the instance key.
func (in *instance) path(s *section, setting string) string {
	sep := "."
	if in.bracketed {
		sep = ""
	}
	return s.prefix + "." + in.mapName + sep + in.raw + "." + setting
}

// checkCombinations applies the checks Spring runs when it builds each config.
func (f *File) checkCombinations() []error {
	var errs []error
	cb := f.sections[sectionCircuitBreaker]
	for _, in := range cb.order {
		exp, rnd := in.settings[keyEnableExponentialBackoff], in.settings[keyEnableRandomizedWait]
		if exp != nil && rnd != nil && exp.val.b && rnd.val.b {
			errs = append(errs, errorf(f.name, rnd.line, rnd.key, "enable-exponential-backoff and enable-randomized-wait cannot both be true for a circuit breaker (IllegalStateException at start-up)"))
		}
	}
	return errs
}

// Management is what the file says about the actuator.
type Management struct {
	// ExposureInclude is management.endpoints.web.exposure.include; Spring Boot's default is ["health"].
	ExposureInclude []string
	// ExposureExclude is management.endpoints.web.exposure.exclude.
	ExposureExclude []string
	// HealthCircuitBreakersEnabled is management.health.circuitbreakers.enabled (default false).
	HealthCircuitBreakersEnabled bool
	// ShowDetails is management.endpoint.health.show-details ("never" by default).
	ShowDetails string
}

// Exposed reports whether the web endpoint with this id is exposed.
func (m Management) Exposed(id string) bool {
	for _, x := range m.ExposureExclude {
		if x == "*" || strings.EqualFold(x, id) {
			return false
		}
	}
	for _, x := range m.ExposureInclude {
		if x == "*" || strings.EqualFold(x, id) {
			return true
		}
	}
	return false
}

// Management returns the actuator settings, with Spring Boot's defaults where unset.
func (f *File) Management() Management {
	m := Management{ExposureInclude: []string{"health"}, ShowDetails: "never"}
	if l, ok := f.getList("management.endpoints.web.exposure.include"); ok {
		m.ExposureInclude = l
	}
	if l, ok := f.getList("management.endpoints.web.exposure.exclude"); ok {
		m.ExposureExclude = l
	}
	if v, ok := f.Get("management.health.circuitbreakers.enabled"); ok {
		b, err := parseValue(kindBool, v)
		m.HealthCircuitBreakersEnabled = err == nil && b.b
	}
	if v, ok := f.Get("management.endpoint.health.show-details"); ok {
		m.ShowDetails = strings.TrimSpace(v)
	}
	return m
}
