package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/cbprobe/cbprobe/results"
)

// killWait bounds the wait for the group to disappear after SIGKILL.
const killWait = 5 * time.Second

// healthRequestTimeout bounds one health request.
const healthRequestTimeout = 2 * time.Second

// Process is a running service started by Start. Stop it with Stop; it is also
// stopped when the context given to Start ends.
type Process struct {
	cfg  Config
	log  *slog.Logger
	cmd  *exec.Cmd
	pgid int
	port int
	url  string

	launched time.Time
	exited   chan struct{} // closed once the command's shell has been reaped
	exitErr  error         // cmd.Wait's result, set before exited is closed
	exitAt   time.Time

	mu  sync.Mutex
	rec results.Service

	stopOnce sync.Once
	stopDone chan struct{}
	stopErr  error
}

// Start launches cfg.Command and waits until its health endpoint says UP. On any
// failure the process group is stopped before Start returns, and the error is
// an *Error (exit code 3), a *ConfigError (exit code 2), or the context's error
// (interrupted). The returned Process is stopped by Stop or when ctx ends.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Process, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate("--service"); err != nil {
		return nil, err
	}
	if !groupsSupported {
		return nil, &ConfigError{Field: "--service", Msg: "cbprobe starts a service only where Unix process groups and /bin/sh exist (Linux, macOS), not on " +
			runtime.GOOS + ": start the service yourself and give its URL with --target"}
	}
	if cfg.LogPath == "" {
		return nil, &ConfigError{Field: "service log", Msg: "no log file given"}
	}
	cfg = cfg.withDefaults()
	port := cfg.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, &Error{Name: cfg.Name, Command: cfg.Command, Fault: FaultLaunch, Detail: err.Error()}
		}
	}
	p := &Process{
		cfg: cfg, log: log, port: port, url: fmt.Sprintf("http://127.0.0.1:%d", port),
		exited: make(chan struct{}), stopDone: make(chan struct{}),
	}
	props := p.properties()
	p.rec = results.Service{Command: cfg.Command, Dir: cfg.Dir, Log: p.relLog(), URL: p.url, Properties: props}
	env, err := buildEnv(os.Environ(), cfg.Env, props, port)
	if err != nil {
		return nil, &ConfigError{Field: "--service", Msg: err.Error()}
	}
	logFile, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, p.fault(FaultLaunch, fmt.Sprintf("create its log: %v", err), "", false)
	}
	cmd := exec.Command("/bin/sh", "-c", cfg.Command)
	cmd.Dir = cfg.Dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	inOwnGroup(cmd)
	p.cmd = cmd
	p.launched = time.Now()
	err = cmd.Start()
	_ = logFile.Close() // the child holds its own descriptor
	if err != nil {
		hint := ""
		if cfg.Dir != "" {
			hint = "check the working directory " + cfg.Dir
		}
		return nil, p.fault(FaultLaunch, err.Error(), hint, false)
	}
	p.pgid = cmd.Process.Pid
	p.rec.PID = p.pgid
	log.Info("service launched", "command", cfg.Command, "pid", p.pgid, "url", p.url, "log", cfg.LogPath)
	p.progress(StageStarting, 0, cfg.StartTimeout, "")
	if cfg.Started != nil {
		cfg.Started(p)
	}
	go p.reap()
	go func() {
		select {
		case <-ctx.Done():
			p.stop(context.Background(), false)
		case <-p.stopDone:
		}
	}()
	if err := p.waitHealthy(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// URL is the service's base URL, http://127.0.0.1:PORT.
func (p *Process) URL() string { return p.url }

// Port is the TCP port the service was told to listen on.
func (p *Process) Port() int { return p.port }

// PID is the process id of the command's shell, which is also the id of its
// process group.
func (p *Process) PID() int { return p.pgid }

// LogPath is the file holding the service's stdout and stderr.
func (p *Process) LogPath() string { return p.cfg.LogPath }

// Record returns what is known of the run so far: command, log, properties
// and timings.
func (p *Process) Record() results.Service {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rec
	r.Properties = maps.Clone(p.rec.Properties)
	r.Notes = append([]string(nil), p.rec.Notes...)
	return r
}

// Stop stops the service's process group: SIGTERM, then SIGKILL once the stop
// grace period (shortened by ctx) has passed, and waits until no process of the
// group is left. It returns the run's record. The error is an *Error when the
// service had exited before Stop (FaultDied) or when processes survived
// (FaultLeftover); the record is complete either way. Stop may be called more
// than once and from several goroutines; later calls return the first result.
func (p *Process) Stop(ctx context.Context) (results.Service, error) {
	p.stop(ctx, true)
	return p.Record(), p.stopErr
}

// Kill sends SIGKILL to the whole process group at once, without waiting; for
// a process that must exit now (a second Ctrl-C). It does nothing once Stop has
// finished, so it never signals a group id the system has reused.
func (p *Process) Kill() {
	select {
	case <-p.stopDone:
		return
	default:
	}
	if p.pgid > 0 {
		_ = signalGroup(p.pgid, syscall.SIGKILL)
	}
}

// properties are the Spring properties the service gets: the configured ones,
// the gateway's URL, and the port and address to listen on.
func (p *Process) properties() map[string]string {
	props := maps.Clone(p.cfg.Properties)
	if props == nil {
		props = map[string]string{}
	}
	if p.cfg.GatewayURL != "" {
		props[p.cfg.GatewayProperty] = p.cfg.GatewayURL
	}
	props["server.port"] = strconv.Itoa(p.port)
	props["server.address"] = "127.0.0.1"
	return props
}

func (p *Process) relLog() string {
	if p.cfg.RunDir != "" {
		if rel, err := filepath.Rel(p.cfg.RunDir, p.cfg.LogPath); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return p.cfg.LogPath
}

// buildEnv is environ with extra set, SPRING_APPLICATION_JSON holding props
// (merged into the one environ or extra already has) and SERVER_PORT.
func buildEnv(environ []string, extra, props map[string]string, port int) ([]string, error) {
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set(k, extra[k])
	}
	js, err := mergeSpringJSON(env["SPRING_APPLICATION_JSON"], props)
	if err != nil {
		return nil, err
	}
	set("SPRING_APPLICATION_JSON", js)
	set("SERVER_PORT", strconv.Itoa(port))
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = k + "=" + env[k]
	}
	return out, nil
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port on 127.0.0.1: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port, nil
}

// reap waits for the command's shell and records how it ended.
func (p *Process) reap() {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.exitErr, p.exitAt = err, time.Now()
	p.rec.Exit = describeExit(p.cmd.ProcessState)
	p.mu.Unlock()
	close(p.exited)
}

func (p *Process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitCode is the shell's exit status, -1 when it was killed by a signal or
// has not exited.
func (p *Process) exitCode() int {
	if !p.hasExited() || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

func describeExit(st *os.ProcessState) string {
	if st == nil {
		return ""
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + signalName(ws.Signal())
	}
	return fmt.Sprintf("exit status %d", st.ExitCode())
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return s.String()
}

// gone reports whether the service has ended: its shell exited with a non-zero
// status, or exited and left no process in the group. (A shell that exits 0
// after starting the server in the background leaves the service running.)
func (p *Process) gone() bool {
	if !p.hasExited() {
		return false
	}
	return p.exitCode() != 0 || !groupAlive(p.pgid)
}

// answer is the outcome of one health request.
type answer struct {
	err     error
	refused bool
	code    int
	status  string // the JSON "status" field, "" when absent
	body    string // the start of the body
}

func (a answer) answered() bool { return a.err == nil }

func (a answer) up() bool {
	return a.err == nil && a.code/100 == 2 && (a.status == "" || strings.EqualFold(a.status, "UP"))
}

// settled reports an answer that will not turn UP by waiting: DOWN, OUT_OF_SERVICE,
// a missing endpoint, or one that needs credentials.
func (a answer) settled() bool {
	if a.err != nil {
		return false
	}
	switch strings.ToUpper(a.status) {
	case "DOWN", "OUT_OF_SERVICE":
		return true
	}
	return a.code == http.StatusNotFound || a.code == http.StatusUnauthorized || a.code == http.StatusForbidden
}

func (a answer) String() string {
	switch {
	case a.refused:
		return "connection refused"
	case a.err != nil:
		return a.err.Error()
	case a.status != "":
		return fmt.Sprintf("%d %s", a.code, a.status)
	case a.body != "":
		return fmt.Sprintf("%d %s", a.code, a.body)
	}
	return strconv.Itoa(a.code)
}

func (p *Process) probe(ctx context.Context, client *http.Client, timeout time.Duration) answer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+p.cfg.HealthPath, nil)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return answer{err: err, refused: true}
		}
		if ctx.Err() == context.DeadlineExceeded {
			return answer{err: fmt.Errorf("no answer within %s", timeout)}
		}
		return answer{err: err}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	a := answer{code: resp.StatusCode}
	var h struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(data, &h) == nil {
		a.status = h.Status
	}
	a.body = strings.Join(strings.Fields(string(data)), " ")
	if len(a.body) > 200 {
		a.body = a.body[:200] + "…"
	}
	return a
}

// startedOnPort finds the port a Java web server says it started on.
var startedOnPort = regexp.MustCompile(`(?i)(?:tomcat|jetty|undertow|netty)[^\n]*?started on port(?:\(s\))?:?\s*(\d+)`)

// loggedPort returns the last port the log says a web server started on (0: none).
func (p *Process) loggedPort() int {
	m := startedOnPort.FindAllSubmatch(readTail(p.cfg.LogPath, 256<<10), -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(string(m[len(m)-1][1]))
	return n
}

// groupPorts lists the TCP ports the process group listens on (nil if unknown).
func (p *Process) groupPorts() []int {
	l, err := listeningPorts(func(st procfs.ProcStat) bool { return st.PGRP == p.pgid })
	if err != nil {
		return nil
	}
	return l.ports()
}

func (p *Process) progress(stage Stage, elapsed, timeout time.Duration, health string) {
	if p.cfg.Progress == nil {
		return
	}
	p.cfg.Progress(Progress{Name: p.cfg.Name, Stage: stage, Elapsed: elapsed, Timeout: timeout, URL: p.url, Health: health})
}

// waitHealthy polls the health endpoint until it says UP, the service fails,
// the start timeout passes or ctx ends. On failure it stops the group.
func (p *Process) waitHealthy(ctx context.Context) error {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	deadline := p.launched.Add(p.cfg.StartTimeout)
	tick := time.NewTicker(p.cfg.PollInterval)
	defer tick.Stop()
	var (
		last                  answer
		firstAnswer, badSince time.Time
		nextLogScan           time.Time
	)
	for {
		if p.gone() {
			return p.exitFault()
		}
		timeout := min(healthRequestTimeout, max(time.Until(deadline), 50*time.Millisecond))
		a := p.probe(ctx, client, timeout)
		now := time.Now()
		if ctx.Err() != nil {
			p.stop(context.Background(), false)
			return fmt.Errorf("start service `%s`: %w", p.cfg.Command, ctx.Err())
		}
		last = a
		if a.answered() && firstAnswer.IsZero() {
			firstAnswer = now
		}
		if a.up() {
			p.mu.Lock()
			p.rec.StartSeconds = now.Sub(p.launched).Seconds()
			p.rec.HealthWaitSeconds = now.Sub(firstAnswer).Seconds()
			p.mu.Unlock()
			p.progress(StageHealthy, now.Sub(p.launched), p.cfg.StartTimeout, a.String())
			p.log.Info("service healthy", "url", p.url, "after", now.Sub(p.launched))
			return nil
		}
		if a.settled() {
			if badSince.IsZero() {
				badSince = now
			}
			if now.Sub(badSince) >= p.cfg.DownGrace {
				return p.settledFault(a, now.Sub(badSince), firstAnswer, now)
			}
		} else {
			badSince = time.Time{}
		}
		if a.refused && !now.Before(nextLogScan) {
			nextLogScan = now.Add(time.Second)
			if lp := p.loggedPort(); lp != 0 && lp != p.port {
				return p.startFault(FaultOtherPort, firstAnswer, now,
					fmt.Sprintf("its log says it started on port %d, but it was given port %d (server.port in SPRING_APPLICATION_JSON and SERVER_PORT)", lp, p.port),
					"a --server.port argument or -Dserver.port in the command outranks SPRING_APPLICATION_JSON: remove it")
			}
		}
		if !now.Before(deadline) {
			return p.timeoutFault(last, firstAnswer, now)
		}
		stage := StageStarting
		if !firstAnswer.IsZero() {
			stage = StageHealth
		}
		p.progress(stage, now.Sub(p.launched), p.cfg.StartTimeout, a.String())
		select {
		case <-ctx.Done():
		case <-p.exited:
		case <-tick.C:
		}
	}
}

func (p *Process) exitFault() error {
	p.mu.Lock()
	exit, at := p.rec.Exit, p.exitAt
	p.mu.Unlock()
	detail := fmt.Sprintf("%s after %s", exit, at.Sub(p.launched).Round(time.Millisecond))
	switch p.exitCode() {
	case 127:
		return p.startFault(FaultNotFound, time.Time{}, at, detail, "the shell could not find the command: check its spelling, PATH and the working directory")
	case 126:
		return p.startFault(FaultNotFound, time.Time{}, at, detail, "the command is not executable (chmod +x?)")
	}
	return p.startFault(FaultExited, time.Time{}, at, detail, "")
}

func (p *Process) settledFault(a answer, during time.Duration, firstAnswer, now time.Time) error {
	detail := fmt.Sprintf("GET %s%s answered %s for %s", p.url, p.cfg.HealthPath, a, during.Round(time.Millisecond))
	if a.body != "" && a.status != "" {
		detail += ": " + a.body
	}
	switch a.code {
	case http.StatusNotFound:
		return p.startFault(FaultNeverHealthy, firstAnswer, now, detail,
			"is spring-boot-starter-actuator on the classpath and health exposed (management.endpoints.web.exposure.include)? Or set the health path")
	case http.StatusUnauthorized, http.StatusForbidden:
		return p.startFault(FaultNeverHealthy, firstAnswer, now, detail, "the health endpoint needs credentials: permit it in your security configuration")
	}
	return p.startFault(FaultDown, firstAnswer, now, detail, "a health contributor is DOWN (its details are in the answer above when management.endpoint.health.show-details=always)")
}

func (p *Process) timeoutFault(last answer, firstAnswer, now time.Time) error {
	detail := fmt.Sprintf("no UP from GET %s%s within %s; last answer: %s", p.url, p.cfg.HealthPath, p.cfg.StartTimeout, last)
	if firstAnswer.IsZero() {
		if ports := p.groupPorts(); len(ports) > 0 && !containsInt(ports, p.port) {
			return p.startFault(FaultOtherPort, firstAnswer, now,
				fmt.Sprintf("nothing answered on port %d within %s, but its processes listen on %s", p.port, p.cfg.StartTimeout, joinInts(ports)),
				"make the service read server.port (SPRING_APPLICATION_JSON) or SERVER_PORT")
		}
		return p.startFault(FaultNeverHealthy, firstAnswer, now, detail, "raise --service-start-timeout if it is still starting")
	}
	return p.startFault(FaultNeverHealthy, firstAnswer, now, detail, "")
}

// startFault stops the group and returns the fault with the log's tail.
func (p *Process) startFault(f Fault, firstAnswer, now time.Time, detail, hint string) error {
	p.mu.Lock()
	p.rec.StartSeconds = now.Sub(p.launched).Seconds()
	if !firstAnswer.IsZero() {
		p.rec.HealthWaitSeconds = now.Sub(firstAnswer).Seconds()
	}
	p.mu.Unlock()
	p.stop(context.Background(), false)
	if p.stopErr != nil {
		var e *Error
		if errors.As(p.stopErr, &e) && e.Fault == FaultLeftover {
			detail += "; and " + e.Detail
		}
	}
	return p.fault(f, detail, hint, true)
}

// fault builds an *Error; withTail adds the log's last lines.
func (p *Process) fault(f Fault, detail, hint string, withTail bool) *Error {
	e := &Error{Name: p.cfg.Name, Command: p.cfg.Command, Fault: f, Detail: detail, Hint: hint}
	if withTail {
		e.LogPath = p.cfg.LogPath
		e.Tail = tailLines(p.cfg.LogPath, LogTailLines)
	}
	p.mu.Lock()
	p.rec.Error = string(f) + ": " + detail
	p.mu.Unlock()
	e.Record = p.Record()
	return e
}

// stop ends the process group once; duringRun marks a stop after a successful
// start, where an earlier exit of the service is a fault.
func (p *Process) stop(ctx context.Context, duringRun bool) {
	p.stopOnce.Do(func() {
		defer close(p.stopDone)
		p.stopErr = p.terminate(ctx, duringRun)
	})
	<-p.stopDone
}

func (p *Process) terminate(ctx context.Context, duringRun bool) error {
	if p.cmd == nil || p.pgid == 0 {
		return nil
	}
	var died error
	if duringRun && p.gone() {
		p.mu.Lock()
		exit, at := p.rec.Exit, p.exitAt
		p.mu.Unlock()
		died = p.fault(FaultDied, fmt.Sprintf("%s after %s, before cbprobe stopped it", exit, at.Sub(p.launched).Round(time.Millisecond)), "", true)
	}
	start := time.Now()
	var notes []string
	killed := false
	if groupAlive(p.pgid) {
		grace := p.cfg.StopGrace
		if dl, ok := ctx.Deadline(); ok {
			grace = min(grace, max(time.Until(dl), 0))
		}
		p.progress(StageStopping, 0, grace, "")
		_ = signalGroup(p.pgid, syscall.SIGTERM)
		if !p.waitGroupGone(ctx, grace, start) {
			killed = true
			p.log.Info("service ignored SIGTERM; sending SIGKILL", "pgid", p.pgid, "grace", grace)
			_ = signalGroup(p.pgid, syscall.SIGKILL)
			p.waitGroupGone(context.Background(), killWait, start)
		}
	}
	select {
	case <-p.exited:
	case <-time.After(killWait):
		notes = append(notes, fmt.Sprintf("the command's shell (pid %d) was not reaped within %s", p.pgid, killWait))
	}
	stopped := time.Since(start)
	notes = append(notes, p.killEscaped()...)
	p.mu.Lock()
	p.rec.StopSeconds = stopped.Seconds()
	p.rec.Killed = killed
	p.rec.Notes = append(p.rec.Notes, notes...)
	p.mu.Unlock()
	p.progress(StageStopped, stopped, p.cfg.StopGrace, "")
	if groupAlive(p.pgid) {
		left := groupMembers(p.pgid)
		return p.fault(FaultLeftover, fmt.Sprintf("process group %d still has %s after SIGKILL", p.pgid, strings.Join(left, ", ")), "", false)
	}
	return died
}

// waitGroupGone polls until the group has no process left, d has passed since
// start, or ctx ends. It reports whether the group is gone.
func (p *Process) waitGroupGone(ctx context.Context, d time.Duration, start time.Time) bool {
	deadline := start.Add(d)
	for {
		if !groupAlive(p.pgid) {
			return true
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return false
		}
		p.progress(StageStopping, time.Since(start), d, "")
		t := time.NewTimer(min(50*time.Millisecond, time.Until(deadline)))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// killEscaped kills processes that left the group (setsid, a daemon) but still
// listen on the service's port and were started after the service was
// launched: they are the service's, and nothing the command started may
// outlive the run.
func (p *Process) killEscaped() []string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil
	}
	st, err := fs.Stat()
	if err != nil {
		return nil
	}
	launched := float64(p.launched.Unix()) - 2 // boot time has whole seconds
	self := os.Getpid()
	l, err := listeningPorts(func(ps procfs.ProcStat) bool {
		if ps.PID == self {
			return false
		}
		// StartTime is in clock ticks since boot; USER_HZ is 100 on Linux.
		started := float64(st.BootTime) + float64(ps.Starttime)/100
		return started >= launched
	})
	if err != nil {
		return nil
	}
	var notes []string
	for _, pid := range l[p.port] {
		cmdline := commandLine(pid)
		err := signalPID(pid, syscall.SIGKILL)
		if err == nil {
			waitDead(fs, pid, killWait)
		}
		note := fmt.Sprintf("process %d (%s) had left the process group and still listened on port %d; killed", pid, cmdline, p.port)
		if err != nil {
			note = fmt.Sprintf("process %d (%s) had left the process group and still listens on port %d; kill: %v", pid, cmdline, p.port, err)
		}
		p.log.Warn("service process outside its group", "pid", pid, "cmd", cmdline, "port", p.port, "err", err)
		notes = append(notes, note)
	}
	return notes
}

// waitDead polls until pid is gone or a zombie, at most d.
func waitDead(fs procfs.FS, pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		p, err := fs.Proc(pid)
		if err != nil {
			return
		}
		if st, err := p.Stat(); err != nil || st.State == "Z" || st.State == "X" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func joinInts(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}
