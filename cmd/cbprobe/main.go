// Command cbprobe proves that a circuit breaker behaves as configured: it runs
// experiments against a service, labels every OPEN transition by its cause and
// compares what it saw with what Resilience4j's rules predict.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

func main() {
	// A first Ctrl-C stops the command (partial results written); a second exits at once.
	ctx, stop := notifyInterrupt(context.Background(), os.Exit, os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(os.Stdout, os.Stderr).ExecuteContext(ctx)
	code := exitCode(ctx, err)
	stop()
	if err != nil && !isSilent(err) {
		fmt.Fprintln(os.Stderr, "cbprobe:", err)
	}
	os.Exit(code)
}
