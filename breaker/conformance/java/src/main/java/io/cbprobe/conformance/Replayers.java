package io.cbprobe.conformance;

/** One replayer per vector kind, built once for the whole run (one JVM for every vector). */
final class Replayers {
    private BreakerReplay breaker;
    private RetryReplay retry;
    private TimeLimiterReplay timeLimiter;

    Replayer forKind(String kind) {
        switch (kind) {
            case "circuitbreaker":
                if (breaker == null) {
                    breaker = new BreakerReplay();
                }
                return breaker;
            case "retry":
                if (retry == null) {
                    retry = new RetryReplay();
                }
                return retry;
            case "timelimiter":
                if (timeLimiter == null) {
                    timeLimiter = new TimeLimiterReplay();
                }
                return timeLimiter;
            default:
                return null;
        }
    }
}
