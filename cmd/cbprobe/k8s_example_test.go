package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/results"
	"go.yaml.in/yaml/v3"
)

// The parts of the Kubernetes API the example uses, field names as in the
// API reference (batch/v1 Job, core/v1 PodSpec, PersistentVolumeClaim).
// Decoding with KnownFields rejects any field of the example not listed
// here, so a misspelt field (completionmode, fieldPath) fails the test.
type k8sObject struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Metadata   k8sMetadata `yaml:"metadata"`
	Spec       k8sSpec     `yaml:"spec"`
}

type k8sMetadata struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

// k8sSpec holds a Job's and a PersistentVolumeClaim's spec fields.
type k8sSpec struct {
	// PersistentVolumeClaim
	AccessModes []string `yaml:"accessModes"`
	Resources   struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
	// Job
	CompletionMode        string `yaml:"completionMode"`
	Completions           *int   `yaml:"completions"`
	Parallelism           *int   `yaml:"parallelism"`
	BackoffLimit          *int   `yaml:"backoffLimit"`
	ActiveDeadlineSeconds *int   `yaml:"activeDeadlineSeconds"`
	Template              struct {
		Metadata k8sMetadata `yaml:"metadata"`
		Spec     k8sPodSpec  `yaml:"spec"`
	} `yaml:"template"`
}

type k8sPodSpec struct {
	RestartPolicy  string         `yaml:"restartPolicy"`
	InitContainers []k8sContainer `yaml:"initContainers"`
	Containers     []k8sContainer `yaml:"containers"`
	Volumes        []struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	} `yaml:"volumes"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

func (c k8sContainer) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom == nil { // a fieldRef is known only in the pod
			return e.Value, true
		}
	}
	return "", false
}

// expand does what the kubelet does to a container's args: $(VAR) becomes
// the value of the container's env VAR (overrides first, then the
// manifest's), unknown references stay as they are.
func (c k8sContainer) expand(s string, overrides map[string]string) string {
	return regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if v, ok := overrides[name]; ok {
			return v
		}
		if v, ok := c.env(name); ok {
			return v
		}
		return ref
	})
}

// TestK8sExample reads examples/k8s/cbprobe-shards.yaml as Kubernetes would
// read its fields, checks what makes the shards an Indexed Job of N shards
// and the merge a step over exactly those N directories, and then runs the
// containers' own arguments (expanded as the kubelet does, with the target,
// phases, start time and volume replaced by local ones) against the demo on
// loopback: N shard attacks at once, then the merge. No cluster is involved:
// scheduling, the volume and the images are not checked (see the README).
func TestK8sExample(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "k8s", "cbprobe-shards.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// envsubst, as the README says to apply it.
	runID := "run-test"
	text := strings.NewReplacer("${RUN_ID}", runID, "${START_AT}", "2026-01-01T00:00:00Z").Replace(string(data))
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	var objs []k8sObject
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		objs = append(objs, o)
	}
	var pvc, shards, merge *k8sObject
	for i := range objs {
		o := &objs[i]
		switch {
		case o.Kind == "PersistentVolumeClaim":
			pvc = o
		case o.Kind == "Job" && o.Spec.CompletionMode == "Indexed":
			shards = o
		case o.Kind == "Job":
			merge = o
		}
	}
	if pvc == nil || shards == nil || merge == nil {
		t.Fatalf("want a PersistentVolumeClaim, an Indexed Job and a merge Job; got %d objects", len(objs))
	}
	if !slices.Contains(pvc.Spec.AccessModes, "ReadWriteMany") {
		t.Errorf("the results volume is %v: pods on several nodes need ReadWriteMany", pvc.Spec.AccessModes)
	}
	for _, j := range []*k8sObject{shards, merge} {
		if j.APIVersion != "batch/v1" || j.Spec.Template.Spec.RestartPolicy != "Never" {
			t.Errorf("job %s: apiVersion %q restartPolicy %q, want batch/v1 and Never", j.Metadata.Name, j.APIVersion, j.Spec.Template.Spec.RestartPolicy)
		}
		vols := j.Spec.Template.Spec.Volumes
		if len(vols) != 1 || vols[0].PersistentVolumeClaim.ClaimName != pvc.Metadata.Name {
			t.Errorf("job %s does not mount the claim %s", j.Metadata.Name, pvc.Metadata.Name)
		}
	}

	// The shards: Indexed, N completions all at once, the index from the
	// completion-index annotation into --shard INDEX/N.
	if len(shards.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the shards Job has %d containers, want 1", len(shards.Spec.Template.Spec.Containers))
	}
	sc := shards.Spec.Template.Spec.Containers[0]
	nText, _ := sc.env("SHARDS")
	n, err := strconv.Atoi(nText)
	if err != nil || n < 2 {
		t.Fatalf("SHARDS = %q, want a count of at least 2", nText)
	}
	if c, p := shards.Spec.Completions, shards.Spec.Parallelism; c == nil || p == nil || *c != n || *p != n {
		t.Errorf("completions %v, parallelism %v: want both %d (SHARDS), so every shard runs at once", c, p, n)
	}
	indexFrom := ""
	for _, e := range sc.Env {
		if e.Name == "SHARD_INDEX" && e.ValueFrom != nil {
			indexFrom = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if indexFrom != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("SHARD_INDEX comes from %q, want the pod's job-completion-index annotation", indexFrom)
	}
	if sc.Args[0] != "attack" || flagValue(sc.Args, "--shard") != "$(SHARD_INDEX)/$(SHARDS)" || flagValue(sc.Args, "--start-at") == "" {
		t.Errorf("shard args %q: want attack --shard $(SHARD_INDEX)/$(SHARDS) --start-at ...", sc.Args)
	}
	mountOK := func(c k8sContainer, dir string) bool {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(dir, m.MountPath+"/") {
				return true
			}
		}
		return false
	}
	shardOut := sc.expand(flagValue(sc.Args, "--out"), nil)
	if !mountOK(sc, shardOut) || !strings.Contains(shardOut, "$(SHARD_INDEX)") {
		t.Errorf("shard --out %q: want a directory per index on the mounted volume", shardOut)
	}

	// The merge: waits for N complete shard runs, then merges exactly the N
	// shard directories.
	if len(merge.Spec.Template.Spec.InitContainers) != 1 || len(merge.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the merge Job wants one initContainer (the wait) and one container")
	}
	wait := merge.Spec.Template.Spec.InitContainers[0]
	script := strings.Join(wait.Command, " ")
	if w, _ := wait.env("SHARDS"); w != nText || !strings.Contains(script, `"complete": true`) || !strings.Contains(script, "$SHARDS") {
		t.Errorf("the wait (SHARDS=%q) must count %d run.json with \"complete\": true:\n%s", w, n, script)
	}
	mc := merge.Spec.Template.Spec.Containers[0]
	if len(mc.Args) < 2 || mc.Args[0] != "report" || mc.Args[1] != "merge" {
		t.Fatalf("merge args %q, want report merge ...", mc.Args)
	}
	var mergeDirs []string
	for _, a := range mc.Args[2:] {
		if strings.HasPrefix(a, "-") {
			break
		}
		mergeDirs = append(mergeDirs, mc.expand(a, nil))
	}
	var wantDirs []string
	for i := range n {
		wantDirs = append(wantDirs, strings.ReplaceAll(shardOut, "$(SHARD_INDEX)", strconv.Itoa(i)))
	}
	if !slices.Equal(mergeDirs, wantDirs) {
		t.Errorf("merge reads %q, the shards write %q", mergeDirs, wantDirs)
	}
	mergeOut := mc.expand(flagValue(mc.Args, "--out"), nil)
	if !mountOK(mc, mergeOut) {
		t.Errorf("merge --out %q is not on the mounted volume", mergeOut)
	}

	// Run the containers' arguments here: the demo as the target, a short
	// plan, a start time 2 s ahead and a temporary directory as the volume.
	svc := startWatchDemo(t, behavior.DefaultBehavior(), 1)
	vol := t.TempDir()
	mount := sc.VolumeMounts[0].MountPath
	local := func(s string) string { return strings.Replace(s, mount, vol, 1) }
	const phases = "20/s:1s,0/s:500ms,10/s:1s"
	startAt := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	codes := make([]int, n)
	outs := make([]string, n)
	for i := range n {
		env := map[string]string{"SHARD_INDEX": strconv.Itoa(i), "TARGET_URL": svc.URL(), "PHASES": phases, "START_AT": startAt}
		var args []string
		for _, a := range sc.Args {
			args = append(args, local(sc.expand(a, env)))
		}
		wg.Go(func() {
			stdout, stderr, code := runCLI(context.Background(), args...)
			codes[i], outs[i] = code, stdout+stderr
		})
	}
	wg.Wait()
	for i, c := range codes {
		// 0, or 3 when the breaker could not be judged from one shard's share.
		if c != 0 && c != exitInfrastructure {
			t.Fatalf("shard %d exited %d:\n%s", i, c, outs[i])
		}
	}
	// The wait script, in this machine's sh, finds the N complete runs at once.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitDir, _ := wait.env("RUN_DIR")
	sh := exec.CommandContext(ctx, wait.Command[0], wait.Command[1:]...)
	sh.Env = append(os.Environ(), "SHARDS="+nText, "RUN_DIR="+local(waitDir))
	if out, err := sh.CombinedOutput(); err != nil {
		t.Errorf("the wait script did not see the %d complete shard runs: %v\n%s", n, err, out)
	}
	var args []string
	for _, a := range mc.Args {
		args = append(args, local(mc.expand(a, nil)))
	}
	stdout, stderr, code := runCLI(context.Background(), args...)
	if code != 0 && code != exitInfrastructure {
		t.Fatalf("merge exited %d:\n%s%s", code, stdout, stderr)
	}
	rec, err := results.Load(local(mergeOut))
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := attack.ParsePhases(phases)
	want := 0
	for _, ph := range plan {
		want += ph.Planned()
	}
	tot := rec.Run.Arms[0].Totals()
	if tot.Planned != want || tot.Sent+tot.Dropped != want || len(rec.Requests) != tot.Sent {
		t.Errorf("merged run: planned %d, sent %d + dropped %d, %d rows; want %d planned", tot.Planned, tot.Sent, tot.Dropped, len(rec.Requests), want)
	}
	if _, err := os.Stat(filepath.Join(local(mergeOut), results.HTMLFile)); err != nil {
		t.Errorf("merge --html: %v", err)
	}
	if !bytes.Contains([]byte(stdout), []byte(fmt.Sprintf("merged %d shards", n))) {
		t.Errorf("merge printed:\n%s", stdout)
	}
}

// flagValue is the argument after flag in args ("" if absent).
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
