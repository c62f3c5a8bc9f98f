// Command fakesvc is a stand-in for a user's Spring Boot service in the service
// package's tests: it reads its port from SPRING_APPLICATION_JSON the way Spring
// does (the JSON tree flattened by joining keys with "."), serves
// /actuator/health, and misbehaves on request (-mode).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"
)

func main() {
	mode := flag.String("mode", "up", "up, down, never, hang, other-port, quiet-other-port, ignore-term, spawn, daemon, sleep, exit")
	delay := flag.Duration("delay", 0, "wait this long before listening")
	pidfile := flag.String("pidfile", "", "append this process's pid (and its children's) to this file")
	flag.Parse()
	props := flatten(os.Getenv("SPRING_APPLICATION_JSON"))
	port, _ := strconv.Atoi(props["server.port"])
	if port == 0 {
		port, _ = strconv.Atoi(os.Getenv("SERVER_PORT"))
	}
	writePID(*pidfile, os.Getpid())
	fmt.Println("fakesvc: starting, mode", *mode, "port", port)
	switch *mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "fakesvc: APPLICATION FAILED TO START: bad configuration")
		os.Exit(1)
	case "sleep":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "spawn":
		// a grandchild in the same process group that ignores SIGTERM
		c := exec.Command(os.Args[0], "-mode", "sleep", "-pidfile", *pidfile)
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fakesvc: spawn:", err)
			os.Exit(1)
		}
	case "daemon":
		// a child in a session of its own serves the port; this process exits 0
		// once the child listens, the way a daemonising start script does.
		c := exec.Command(os.Args[0], "-mode", "up", "-pidfile", *pidfile)
		c.Env = os.Environ()
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fakesvc: daemon:", err)
			os.Exit(1)
		}
		for i := 0; i < 500; i++ {
			if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				conn.Close()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Println("fakesvc: daemon started")
		os.Exit(0)
	case "other-port", "quiet-other-port":
		port++
	}
	time.Sleep(*delay)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakesvc: listen:", err)
		os.Exit(1)
	}
	if *mode != "quiet-other-port" {
		fmt.Printf("o.s.b.w.embedded.tomcat.TomcatWebServer  : Tomcat started on port %d (http) with context path '/'\n", port)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/actuator/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.spring-boot.actuator.v3+json")
		switch *mode {
		case "down":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":"DOWN","components":{"db":{"status":"DOWN"}}}`)
		case "never":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":"STARTING"}`)
		case "hang":
			<-r.Context().Done()
		default:
			fmt.Fprint(w, `{"status":"UP"}`)
		}
	})
	mux.HandleFunc("/props", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(props)
	})
	for i := 0; i < 30; i++ {
		fmt.Printf("fakesvc: log line %d\n", i)
	}
	_ = http.Serve(l, mux)
}

// flatten reads SPRING_APPLICATION_JSON as Spring's
// SpringApplicationJsonEnvironmentPostProcessor does: nested objects are joined
// with ".", lists get [i].
func flatten(js string) map[string]string {
	out := map[string]string{}
	if js == "" {
		return out
	}
	var tree map[string]any
	if err := json.Unmarshal([]byte(js), &tree); err != nil {
		fmt.Fprintln(os.Stderr, "fakesvc: SPRING_APPLICATION_JSON:", err)
		os.Exit(1)
	}
	var walk func(prefix string, v any)
	walk = func(name string, v any) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				n := k
				if name != "" {
					n = name + "." + k
				}
				walk(n, t[k])
			}
		case []any:
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", name, i), e)
			}
		default:
			out[name] = fmt.Sprint(t)
		}
	}
	walk("", tree)
	return out
}

func writePID(path string, pid int) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintln(f, pid)
	f.Close()
}
