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
	entries  []entry        // every property of the documents read, in file order, kept for Overlay
	profiles Profiles       // the active profiles the documents were chosen by
	// unknownAt and unknownCount gather unknown-key findings by key while binding.
	unknownAt    map[string]int
	unknownCount map[int]int
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
	// spellings are the other keys that bound to the same name (e.g. Client#m(int) merged
	// into Clientmint, or backends.x beside instances.x), in file order.
	spellings []spelling
}

// spelling is one more way the file wrote an instance key.
type spelling struct {
	mapName, raw string
	bracketed    bool
	line         int
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
	// character other than a letter, digit, '-', '_' or '.' dropped.
	Bound string
	// Line is the 1-based line of the key (YAML) or of its first property (.properties).
	Line int
}

// Load reads a .yml, .yaml or .properties file (by extension) and parses it.
func Load(path string) (*File, error) { return LoadWith(path, Options{}) }

func formatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yml", ".yaml":
		return YAML, nil
	case ".properties":
		return Properties, nil
	}
	return YAML, &Error{File: path, Msg: "unknown file type (want .yml, .yaml or .properties)"}
}

// Parse parses data in the given format with the profiles the file itself activates
// (ParseWith with zero Options). name is used in error messages and findings.
// Every resilience4j circuitbreaker, timelimiter and retry entry is checked the way the
// Spring property setters check it, so a value that would stop the application from
// starting is an error here. All such errors are returned, joined; each is an *Error.
func Parse(name string, data []byte, f Format) (*File, error) {
	return ParseWith(name, data, f, Options{})
}

// LoadWith is Load with Options (the active profiles).
func LoadWith(path string, o Options) (*File, error) {
	f, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("read: %v", err)}
	}
	return ParseWith(path, data, f, o)
}

// ParseWith parses data as Parse does, reading the documents (YAML "---", .properties
// "#---") that Spring Boot would read with the profiles of o: a document with
// spring.config.activate.on-profile applies when one of its profile expressions matches
// the active profiles; later documents override earlier ones.
func ParseWith(name string, data []byte, f Format, o Options) (*File, error) {
	file := &File{name: name, format: f, props: map[string]*entry{}, lists: map[string][]*entry{}}
	var raw [][]entry
	var lines []map[string]int
	switch f {
	case YAML:
		d, l, err := parseYAML(name, data)
		if err != nil {
			return nil, err
		}
		raw, lines = d, l
		file.keyLines = map[string]int{}
	case Properties:
		d, err := parseProperties(name, data)
		if err != nil {
			return nil, err
		}
		raw = d
	default:
		return nil, &Error{File: name, Msg: fmt.Sprintf("unknown format %d", int(f))}
	}
	docs := make([]document, len(raw))
	hasProfileDocs := false
	for i, d := range raw {
		act, exprs := activationOf(d)
		docs[i] = document{entries: d, activation: act, exprs: exprs}
		hasProfileDocs = hasProfileDocs || act != nil
	}
	file.profiles = activeProfiles(docs, o)
	var entries []entry
	for i, d := range docs {
		if d.activation != nil {
			ok, err := profilesMatch(d.exprs, file.profiles.Active)
			if err != nil {
				return nil, errorf(name, d.activation.line, d.activation.name, "%v (Spring fails to start)", err)
			}
			file.profileDocNotes(d, ok)
			if !ok {
				continue
			}
		}
		entries = append(entries, d.entries...)
		if i < len(lines) {
			for k, l := range lines[i] {
				if file.keyLines[k] == 0 {
					file.keyLines[k] = l
				}
			}
		}
	}
	if hasProfileDocs || o.Profiles != nil || file.profiles.From != "Spring's default profile" {
		file.notes = append(file.notes, file.profilesNote())
	}
	file.entries = entries
	file.index(entries)
	file.importNotes()
	if err := file.bind(entries); err != nil {
		return nil, err
	}
	return file, nil
}

// ActiveProfiles returns the profiles the file was read with and where they came from.
func (f *File) ActiveProfiles() Profiles { return f.profiles }

func (f *File) profilesNote() Finding {
	p := f.profiles
	msg := fmt.Sprintf("Read with the active profiles %s (from %s).", strings.Join(p.Active, ", "), p.From)
	if len(p.Assumed) > 0 {
		msg += " Assumed: " + strings.Join(p.Assumed, "; ") + "."
	}
	return Finding{ID: "active-profiles", Severity: SeverityInfo, Key: "spring.profiles.active", Message: msg,
		Fix: "Pass --profile NAME (repeatable) to read the file as the service you deploy reads it."}
}

// profileDocNotes reports a profile document that was skipped, and profile-only keys that
// Spring Boot rejects in it.
func (f *File) profileDocNotes(d document, applied bool) {
	a := d.activation
	if canonKey(a.elems) == "spring.profiles" {
		f.notes = append(f.notes, Finding{ID: "legacy-profile-key", Severity: SeverityError, Key: a.name, Line: a.line,
			Message: "spring.profiles in a document is the pre-2.4 syntax: Spring Boot 2.4+ fails to start with InvalidConfigDataPropertyException (it should be replaced with spring.config.activate.on-profile).",
			Fix:     "Write spring.config.activate.on-profile: " + strings.Join(d.exprs, ", ") + " instead."})
	}
	for _, e := range d.entries {
		elems := e.elems
		if n := len(elems); n > 1 {
			if _, ok := isIndex(elems[n-1]); ok {
				elems = elems[:n-1]
			}
		}
		switch canonKey(elems) {
		case "spring.profiles.active", "spring.profiles.include", "spring.profiles.default":
			f.notes = append(f.notes, Finding{ID: "profile-key-in-profile-document", Severity: SeverityError, Key: e.name, Line: e.line,
				Message: fmt.Sprintf("%s is set in a profile-specific document: Spring Boot fails to start (InvalidConfigDataPropertyException: invalid in a profile specific resource).", e.name),
				Fix:     "Move it to a document without spring.config.activate.on-profile, or use spring.profiles.group."})
		}
	}
	if applied {
		return
	}
	r4j := 0
	for _, e := range d.entries {
		if len(e.elems) > 0 && !e.elems[0].bracketed && (canon(e.elems[0].text) == "resilience4j" || strings.HasPrefix(canonKey(e.elems), "spring.cloud.")) {
			r4j++
		}
	}
	what := fmt.Sprintf("its %s", plural(len(d.entries), "setting"))
	if r4j > 0 {
		what += fmt.Sprintf(", %d of them resilience4j or Spring Cloud settings,", r4j)
	}
	suggest := ""
	for _, x := range d.exprs {
		for _, t := range tokenizeProfileExpr(x) {
			if !strings.ContainsAny(t, "()&|!") && suggest == "" {
				suggest = t
			}
		}
	}
	fix := "Pass --profile with the profile you deploy with to check this document."
	if suggest != "" {
		fix = fmt.Sprintf("Run lint with --profile %s (repeatable) to check this document as Spring reads it with that profile.", suggest)
	}
	f.notes = append(f.notes, Finding{ID: "profile-document-skipped", Severity: SeverityInfo, Key: a.name, Line: a.line,
		Message: fmt.Sprintf("This document applies only when the profiles %q are active; the active profiles are %s (from %s), so lint skipped %s and checked none of them.", strings.Join(d.exprs, ", "), strings.Join(f.profiles.Active, ", "), f.profiles.From, what),
		Fix:     fix})
}

// importNotes reports spring.config.import: Spring reads those sources too, lint does not.
func (f *File) importNotes() {
	vals, ok := f.getList("spring.config.import")
	if !ok {
		return
	}
	line := f.lineOfKey("spring.config.import")
	for _, v := range vals {
		f.notes = append(f.notes, Finding{ID: "config-import-not-read", Severity: SeverityInfo, Key: "spring.config.import", Line: line,
			Message: fmt.Sprintf("Spring also loads %q (spring.config.import), whose properties override this file's; lint reads only this file, so settings there are not checked.", v),
			Fix:     "Lint the imported file as well, or the configuration the service really runs with (--actuator compares the live thresholds)."})
	}
}

// lineOfKey finds the line of a property or list written in the file (0 if absent).
func (f *File) lineOfKey(src string) int {
	elems, err := parseName(src)
	if err != nil {
		return 0
	}
	c := canonKey(elems)
	if e, ok := f.props[c]; ok {
		return e.line
	}
	if items, ok := f.lists[c]; ok && len(items) > 0 {
		return items[0].line
	}
	if l := f.keyLines[c]; l > 0 {
		return l
	}
	return 0
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
	f.unknownAt = map[string]int{}
	defer f.countUnknown()
	for i := range entries {
		e := &entries[i]
		if len(e.elems) > 0 && !e.elems[0].bracketed && canon(e.elems[0].text) != "resilience4j" && looksLikeResilience4j(e.elems[0].text) {
			f.misspelledPrefix(e)
			continue
		}
		if len(e.elems) < 2 || e.elems[0].bracketed || canon(e.elems[0].text) != "resilience4j" {
			continue
		}
		mod := e.elems[1]
		s := f.sections[canon(mod.text)]
		if s == nil || mod.bracketed {
			if !knownModules[canon(mod.text)] {
				msg := "resilience4j has no module named " + strconv.Quote(mod.text) + "; Spring ignores everything under it."
				if near := nearest(canon(mod.text), moduleNames()); near != "" {
					msg += fmt.Sprintf(" Did you mean %q?", near)
				}
				f.unknown(e, "resilience4j."+mod.text, msg)
			}
			continue
		}
		if len(e.elems) < 3 {
			continue
		}
		mapEl := e.elems[2]
		mapName := canon(mapEl.text)
		// backends is the 1.x name of instances, kept by CommonCircuitBreakerConfigurationProperties
		// and CommonRetryConfigurationProperties (getBackends returns the instances map); the
		// time limiter's properties have no backends.
		if mapEl.bracketed || !(mapName == "configs" || mapName == "instances" || (mapName == "backends" && s.name != sectionTimeLimiter)) {
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
			f.unknown(e, s.prefix+"."+mapName+"."+rawKey(keyEl), "This map key is empty after Spring drops every character other than letters, digits, '-', '_' and '.'; write it in brackets.")
			continue
		}
		inst := s.instanceFor(mapName, keyEl, bound, line)
		rest := e.elems[4:]
		if len(rest) == 0 {
			continue // an empty mapping: the instance exists with no settings
		}
		sp, ok := s.specs[canon(rest[0].text)]
		if !ok || rest[0].bracketed {
			f.unknown(e, inst.path(s, rawKey(rest[0])), unknownSettingMessage(s, inst, rest))
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
	msg := fmt.Sprintf("Not a key of a %s instance; Spring ignores it silently.", s.name)
	names := make([]string, 0, len(s.specs))
	byCanon := map[string]string{}
	for c, sp := range s.specs {
		names = append(names, c)
		byCanon[c] = sp.name
	}
	sort.Strings(names)
	if near := nearest(canon(rest[0].text), names); near != "" {
		msg += fmt.Sprintf(" Did you mean %s?", byCanon[near])
	}
	return msg
}

// unknown reports a key Spring ignores, once per key however many properties lie under it.
func (f *File) unknown(e *entry, key, msg string) {
	if i, ok := f.unknownAt[key]; ok {
		f.unknownCount[i]++
		return
	}
	if f.unknownCount == nil {
		f.unknownCount = map[int]int{}
	}
	f.unknownAt[key] = len(f.notes)
	f.unknownCount[len(f.notes)] = 1
	line := e.line
	if elems, err := parseName(key); err == nil {
		if l := f.keyLines[canonKey(elems)]; l > 0 {
			line = l
		}
	}
	f.notes = append(f.notes, Finding{ID: "unknown-key", Severity: SeverityWarning, Key: key, Line: line,
		Message: msg, Fix: "Check the spelling against the resilience4j-spring-boot3 property names, or remove the key."})
}

// countUnknown adds to each unknown-key finding how many properties it covers.
func (f *File) countUnknown() {
	for i, n := range f.unknownCount {
		if n > 1 && i < len(f.notes) {
			f.notes[i].Message += fmt.Sprintf(" (%d properties under this key are ignored.)", n)
		}
	}
	f.unknownAt, f.unknownCount = nil, nil
}

// looksLikeResilience4j reports whether a top-level key is a misspelling of resilience4j
// (at most two edits away, compared in relaxed form).
func looksLikeResilience4j(top string) bool {
	c := canon(top)
	return c != "resilience4j" && editDistance(c, "resilience4j") <= 2
}

func (f *File) misspelledPrefix(e *entry) {
	key := e.elems[0].text
	if i, ok := f.unknownAt["top:"+key]; ok {
		f.unknownCount[i]++
		return
	}
	if f.unknownCount == nil {
		f.unknownCount = map[int]int{}
	}
	f.unknownAt["top:"+key] = len(f.notes)
	f.unknownCount[len(f.notes)] = 1
	line := e.line
	if l := f.keyLines[canon(key)]; l > 0 {
		line = l
	}
	f.notes = append(f.notes, Finding{ID: "resilience4j-prefix-misspelled", Severity: SeverityError, Key: key, Line: line,
		Message: fmt.Sprintf("The top-level key %q is not resilience4j: Spring binds nothing under it, so every breaker, retry and time limiter in this block runs with the library defaults (or configs written elsewhere).", key),
		Fix:     "Spell the top-level key resilience4j."})
}

// moduleNames are the resilience4j-spring-boot3 modules (relaxed form).
func moduleNames() []string {
	return []string{"circuitbreaker", "timelimiter", "retry", "bulkhead", "threadpoolbulkhead", "ratelimiter", "micrometer", "thread", "scheduled"}
}

// nearest returns the candidate at most 3 edits from s (the closest), or "".
func nearest(s string, candidates []string) string {
	best, bestD := "", 4
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD && d > 0 {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two ASCII strings.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (s *section) instanceFor(mapName string, keyEl element, bound string, line int) *instance {
	m := s.instances
	if mapName == "configs" {
		m = s.configs
	}
	if in, ok := m[bound]; ok {
		raw := rawKey(keyEl)
		known := raw == in.raw && mapName == in.mapName
		for _, sp := range in.spellings {
			known = known || (sp.raw == raw && sp.mapName == mapName)
		}
		if !known {
			in.spellings = append(in.spellings, spelling{mapName: mapName, raw: raw, bracketed: keyEl.bracketed, line: line})
		}
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
