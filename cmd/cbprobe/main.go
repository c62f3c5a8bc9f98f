// Command cbprobe proves that a circuit breaker behaves as configured: it runs
// experiments against a service, labels every OPEN transition by its cause and
// compares what it saw with what Resilience4j's rules predict.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(os.Stdout, os.Stderr).ExecuteContext(ctx)
	code := exitCode(ctx, err)
	stop()
	if err != nil && !isSilent(err) {
		fmt.Fprintln(os.Stderr, "cbprobe:", err)
	}
	os.Exit(code)
}
