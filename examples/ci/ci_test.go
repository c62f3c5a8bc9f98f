// Package ci_test lints the CI examples the way a user's CI would run them:
// actionlint (with shellcheck on every run: step) for the GitHub Actions
// workflow, and shellcheck on the GitLab job's scripts; and it parses the
// spec, expectations and --fail-on levels they hand to cbprobe.
package ci_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/experiments"
	"github.com/cbprobe/cbprobe/results"
	"go.yaml.in/yaml/v3"
)

func tool(t *testing.T, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	gobin, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(gobin)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("%s is not installed: %s (scripts/test-deps.sh, run by make test, installs it)", name, install)
	return ""
}

func TestGitHubActionsExample(t *testing.T) {
	tool(t, "shellcheck", "apt-get install shellcheck")
	actionlint := tool(t, "actionlint", "go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12")
	out, err := exec.Command(actionlint, "-shellcheck", "shellcheck", "github-actions.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("actionlint github-actions.yml: %v\n%s", err, out)
	}
}

// gitlabJob is the part of a GitLab CI job whose shell cbprobe's example writes.
type gitlabJob struct {
	BeforeScript []string `yaml:"before_script"`
	Script       []string `yaml:"script"`
	AfterScript  []string `yaml:"after_script"`
}

func TestGitLabExample(t *testing.T) {
	shellcheck := tool(t, "shellcheck", "apt-get install shellcheck")
	data, err := os.ReadFile("gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var jobs map[string]gitlabJob
	if err := yaml.Unmarshal(data, &jobs); err != nil {
		t.Fatalf("gitlab-ci.yml: %v", err)
	}
	if len(jobs) == 0 {
		t.Fatal("gitlab-ci.yml defines no job")
	}
	for name, job := range jobs {
		lines := append(append(append([]string{}, job.BeforeScript...), job.Script...), job.AfterScript...)
		if len(lines) == 0 {
			t.Errorf("job %s has no script", name)
			continue
		}
		// GitLab runs the lines in one shell, with its predefined variables set.
		script := "#!/bin/bash\nset -e\n: \"${CI_PROJECT_DIR:?}\"\n" + strings.Join(lines, "\n") + "\n"
		f := filepath.Join(t.TempDir(), name+".sh")
		if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(shellcheck, "-S", "style", f).CombinedOutput(); err != nil {
			t.Errorf("shellcheck on job %s's script: %v\n%s", name, err, out)
		}
	}
}

// TestExamplesUseValidFlags parses what the CI examples hand to cbprobe: the
// recovery spec (with its expectations) and every --expect and --fail-on
// value in both files, so a change of the grammar cannot leave them stale.
func TestExamplesUseValidFlags(t *testing.T) {
	if _, err := experiments.LoadSpec("recovery.yaml"); err != nil {
		t.Fatalf("recovery.yaml: %v", err)
	}
	expectRe := regexp.MustCompile(`--expect '([^']*)'`)
	failOnRe := regexp.MustCompile(`--fail-on (\S+)`)
	for _, file := range []string{"github-actions.yml", "gitlab-ci.yml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		exprs := expectRe.FindAllStringSubmatch(string(data), -1)
		if len(exprs) == 0 {
			t.Errorf("%s: no --expect", file)
		}
		for _, m := range exprs {
			if _, err := experiments.ParseExpectation(m[1]); err != nil {
				t.Errorf("%s: %v", file, err)
			}
		}
		levels := failOnRe.FindAllStringSubmatch(string(data), -1)
		if len(levels) == 0 {
			t.Errorf("%s: no --fail-on", file)
		}
		for _, m := range levels {
			if err := results.CheckFailOn(m[1]); err != nil {
				t.Errorf("%s: --fail-on: %v", file, err)
			}
		}
		if !strings.Contains(string(data), "examples/ci/recovery.yaml") {
			t.Errorf("%s does not run examples/ci/recovery.yaml", file)
		}
	}
}

// TestCIGuideWorkflowLints lints the workflows shown in docs/guides/ci.md
// (each ```yaml block that starts with "# .github/workflows/") the same way.
func TestCIGuideWorkflowLints(t *testing.T) {
	tool(t, "shellcheck", "apt-get install shellcheck")
	actionlint := tool(t, "actionlint", "go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12")
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "guides", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(# \\.github/workflows/.*?)```").FindAllStringSubmatch(string(data), -1)
	if len(blocks) == 0 {
		t.Fatal("docs/guides/ci.md shows no workflow")
	}
	for i, b := range blocks {
		f := filepath.Join(t.TempDir(), "workflow.yml")
		if err := os.WriteFile(f, []byte(b[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(actionlint, "-shellcheck", "shellcheck", f).CombinedOutput(); err != nil {
			t.Errorf("docs/guides/ci.md workflow %d: actionlint: %v\n%s", i+1, err, out)
		}
	}
}
