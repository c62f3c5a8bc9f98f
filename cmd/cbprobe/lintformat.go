package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cbprobe/cbprobe/springconf"
)

// Output formats of cbprobe lint (--format).
const (
	lintFormatText  = "text"
	lintFormatJSON  = "json"
	lintFormatSARIF = "sarif"
)

func lintFormats() []string { return []string{lintFormatText, lintFormatJSON, lintFormatSARIF} }

// lintFinding is one finding as `lint --format json` writes it: camelCase
// keys, as in run.json.
type lintFinding struct {
	// ID is the rule's stable kebab-case name, e.g. "half-open-trial-cannot-pass".
	ID string `json:"id"`
	// Severity is "error", "warning" or "info".
	Severity string `json:"severity"`
	// File is the checked file, as given on the command line.
	File string `json:"file"`
	// Line is the 1-based line of Key in File; 0 (left out) when the key is not in the file.
	Line int `json:"line,omitempty"`
	// Key is the property path the finding is about.
	Key string `json:"key"`
	// Message explains the trap.
	Message string `json:"message"`
	// Fix says which setting to change and how.
	Fix string `json:"fix,omitempty"`
	// Breakers names the circuit breakers the finding is about.
	Breakers []string `json:"breakers,omitempty"`
}

// writeLintText writes the findings for a reader, one block a finding.
func writeLintText(w io.Writer, path string, findings []springconf.Finding) error {
	if len(findings) == 0 {
		_, err := fmt.Fprintf(w, "%s: no findings\n", path)
		return err
	}
	for _, fd := range findings {
		loc := path
		if fd.Line > 0 {
			loc = fmt.Sprintf("%s:%d", path, fd.Line)
		}
		if _, err := fmt.Fprintf(w, "%s %s [%s] %s\n  %s\n  fix: %s\n", loc, fd.Severity, fd.ID, fd.Key, fd.Message, fd.Fix); err != nil {
			return err
		}
	}
	return nil
}

// writeLintJSON writes the findings as an indented JSON array of lintFinding.
func writeLintJSON(w io.Writer, path string, findings []springconf.Finding) error {
	out := make([]lintFinding, 0, len(findings))
	for _, f := range findings {
		out = append(out, lintFinding{ID: f.ID, Severity: f.Severity, File: path, Line: f.Line, Key: f.Key,
			Message: f.Message, Fix: f.Fix, Breakers: f.Breakers})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("encode lint findings: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// The SARIF 2.1.0 subset lint writes (OASIS SARIF v2.1.0, §3): one run whose
// tool lists a rule per finding id, and one result per finding.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	Name                 string       `json:"name"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	HelpURI              string       `json:"helpUri"`
	DefaultConfiguration sarifConfig  `json:"defaultConfiguration"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical  `json:"physicalLocation"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind,omitempty"`
}

const (
	sarifSchema = "https://json.schemastore.org/sarif-2.1.0.json"
	// lintHelpURI documents every lint finding.
	lintHelpURI = "https://github.com/cbprobe/cbprobe/blob/main/docs/reference/lint-findings.md"
)

// sarifLevel maps a finding severity to a SARIF result level.
func sarifLevel(severity string) string {
	switch severity {
	case "error":
		return "error"
	case "warning":
		return "warning"
	}
	return "note"
}

// sarifURI is the artifact URI of path: relative paths with forward slashes
// (code scanning resolves them from the repository root), absolute ones as
// file:// URIs.
func sarifURI(path string) string {
	p := filepath.ToSlash(path)
	if filepath.IsAbs(path) {
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		return "file://" + p
	}
	return strings.TrimPrefix(p, "./")
}

// ruleTitle turns a rule id into words: "half-open-trial-cannot-pass" → "Half open trial cannot pass".
func ruleTitle(id string) string {
	s := strings.ReplaceAll(id, "-", " ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ruleName is the id in PascalCase, SARIF's convention for reportingDescriptor.name.
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// sarifFor builds the SARIF log of findings in the file at path; version is
// the tool's version ("" leaves it out).
func sarifFor(path, version string, findings []springconf.Finding) sarifLog {
	driver := sarifDriver{Name: "cbprobe", Version: version, InformationURI: "https://github.com/cbprobe/cbprobe", Rules: []sarifRule{}}
	index := map[string]int{}
	res := []sarifResult{}
	for _, f := range findings {
		i, ok := index[f.ID]
		if !ok {
			i = len(driver.Rules)
			index[f.ID] = i
			driver.Rules = append(driver.Rules, sarifRule{ID: f.ID, Name: ruleName(f.ID), ShortDescription: sarifMessage{Text: ruleTitle(f.ID)},
				HelpURI: lintHelpURI, DefaultConfiguration: sarifConfig{Level: sarifLevel(f.Severity)}})
		}
		msg := f.Message
		if f.Fix != "" {
			msg += " Fix: " + f.Fix
		}
		loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: sarifURI(path)}}}
		if f.Line > 0 {
			loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Line}
		}
		if f.Key != "" {
			loc.LogicalLocations = []sarifLogical{{FullyQualifiedName: f.Key, Kind: "member"}}
		}
		r := sarifResult{RuleID: f.ID, RuleIndex: i, Level: sarifLevel(f.Severity), Message: sarifMessage{Text: msg},
			Locations: []sarifLocation{loc}}
		if len(f.Breakers) > 0 {
			r.Properties = map[string]any{"breakers": slices.Clone(f.Breakers)}
		}
		res = append(res, r)
	}
	return sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{{Tool: sarifTool{Driver: driver}, Results: res}}}
}

// writeLintSARIF writes the findings as a SARIF 2.1.0 log.
func writeLintSARIF(w io.Writer, path, version string, findings []springconf.Finding) error {
	b, err := json.MarshalIndent(sarifFor(path, version, findings), "", "  ")
	if err != nil {
		return fmt.Errorf("encode SARIF: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
