package springcommerce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds a jar's start until /actuator/health answers UP. Starting needs about
// 10-15 s of CPU (some 9,000 classes); on 2 cores shared with the race-enabled unit tests that
// is well under a minute, but on a machine whose load average was 45 (other builds) the JVM got
// 3-4 % of a core and took minutes. The bound leaves room for that.
const startTimeout = 5 * time.Minute

// javaService is one running jar, in its own process group.
type javaService struct {
	cmd     *exec.Cmd
	url     string
	logPath string
	exited  chan struct{}
	waitErr error
	started time.Duration // from exec to health UP
}

// jarPath returns the jar of a generation ("boot3", "boot4"); a missing jar fails the test
// with how to build it.
func jarPath(t *testing.T, gen string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("target", "spring-commerce-"+gen+".jar"))
	if err != nil {
		t.Fatalf("jar path: %v", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: build it with `make spring-example` (scripts/spring-example.sh; needs a JDK 17+ and Maven): %v", p, err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("java not found: install a JDK 17 or newer (apt-get install openjdk-17-jdk-headless): %v", err)
	}
	return p
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startJava starts `java -jar jar` on port with appJSON as SPRING_APPLICATION_JSON, waits for
// health UP and stops the whole process group when the test ends.
func startJava(t *testing.T, jar string, port int, appJSON string) *javaService {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "service.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create service log: %v", err)
	}
	// Small heap, C1 only and serial GC: the service starts faster on 2 loaded cores.
	cmd := exec.Command("java", "-Xmx256m", "-Xss512k", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-jar", jar)
	cmd.Env = append(os.Environ(),
		"SERVER_PORT="+strconv.Itoa(port),
		"SERVER_ADDRESS=127.0.0.1",
		"SPRING_APPLICATION_JSON="+appJSON)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start java -jar %s: %v", jar, err)
	}
	s := &javaService{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), logPath: logPath, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop(t) })
	if err := s.waitHealthy(startTimeout); err != nil {
		t.Fatalf("%s did not become healthy: %v\n--- last lines of its log ---\n%s", filepath.Base(jar), err, s.logTail(40))
	}
	s.started = time.Since(begin)
	t.Logf("%s healthy on %s after %v", filepath.Base(jar), s.url, s.started.Round(100*time.Millisecond))
	return s
}

func (s *javaService) waitHealthy(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	var last string
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("process exited early (%v)", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("no UP from /actuator/health within %v (last: %s)", limit, last)
		case <-time.After(250 * time.Millisecond):
		}
		resp, err := client.Get(s.url + "/actuator/health")
		if err != nil {
			last = err.Error()
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		last = fmt.Sprintf("HTTP %d %s", resp.StatusCode, body)
		if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"status":"UP"`)) {
			return nil
		}
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after a grace period, and waits.
func (s *javaService) stop(t *testing.T) {
	select {
	case <-s.exited:
		return
	default:
	}
	pgid := s.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Errorf("SIGTERM process group %d: %v", pgid, err)
	}
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		t.Logf("process group %d ignored SIGTERM for 20 s: SIGKILL", pgid)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.exited
	}
	// Nothing of the group may outlive the test.
	if err := syscall.Kill(-pgid, 0); err == nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		t.Errorf("process group %d still had members after the service exited; killed", pgid)
	}
}

func (s *javaService) logTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
