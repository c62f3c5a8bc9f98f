package io.cbprobe.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.github.resilience4j.core.IntervalBiFunction;
import io.github.resilience4j.core.IntervalFunction;
import io.github.resilience4j.core.functions.Either;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.event.RetryEvent;
import io.github.resilience4j.retry.event.RetryOnRetryEvent;
import io.github.resilience4j.retry.internal.RetryImpl;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * Replays retry vectors (docs/conformance.md) on RetryImpl. Waits do not sleep: the library's
 * public static RetryImpl.setSleepFunction (RetryImpl.java, v2.4.0, line 95) takes them
 * instead of Thread.sleep; each RETRY event carries its wait. Config keys follow Spring's CommonRetryConfigurationProperties (v2.4.0,
 * lines 122-160 and 175-239); retry-on-results stands for a result predicate class that is true
 * for the listed results.
 */
final class RetryReplay implements Replayer {
    static final Set<String> KEYS = Set.of("max-attempts", "wait-duration", "enable-exponential-backoff",
        "exponential-backoff-multiplier", "exponential-max-wait-duration", "enable-randomized-wait",
        "randomized-wait-factor", "retry-exceptions", "ignore-exceptions", "fail-after-max-attempts", "retry-on-results");

    private final List<Long> waits = new ArrayList<>();

    RetryReplay() {
        RetryImpl.setSleepFunction(waits::add);
    }

    @Override
    public boolean checkedOnly(String op) {
        return op.equals("wait-range");
    }

    @Override
    public List<JsonNode> run(ObjectNode v) throws VectorException {
        RetryConfig cfg = config(v.path("config"));
        Retry retry = Retry.of(v.path("name").asText("vector"), cfg);
        List<JsonNode> events = new ArrayList<>();
        retry.getEventPublisher().onEvent(e -> events.add(event(e)));
        List<JsonNode> out = new ArrayList<>();
        JsonNode steps = v.get("steps");
        for (int i = 0; i < steps.size(); i++) {
            JsonNode s = steps.get(i);
            int step = i + 1;
            String op = s.path("op").asText();
            switch (op) {
                case "execute" -> out.add(execute(retry, s, step, events));
                case "wait-range" -> out.add(waitRange(cfg, s, step));
                default -> throw new VectorException(step, "op: unknown op \"" + op + "\" (want execute or wait-range)");
            }
        }
        return out;
    }

    private JsonNode execute(Retry retry, JsonNode s, int step, List<JsonNode> events) throws VectorException {
        JsonNode attempts = s.get("attempts");
        if (attempts == null || !attempts.isArray() || attempts.isEmpty()) {
            throw new VectorException(step, "attempts: missing or empty");
        }
        List<Object> planned = new ArrayList<>();
        for (JsonNode a : attempts) {
            String w = a.asText();
            if (w.equals("success")) {
                planned.add(null);
            } else if (w.startsWith("result:")) {
                planned.add(w.substring("result:".length()));
            } else {
                planned.add(Attempts.exception(w, step));
            }
        }
        events.clear();
        waits.clear();
        int[] calls = {0};
        Callable<Object> task = () -> {
            if (calls[0] >= planned.size()) {
                throw new RanOut();
            }
            Object p = planned.get(calls[0]++);
            if (p instanceof Exception e) {
                throw e;
            }
            return p;
        };
        String outcome;
        try {
            Object r = Retry.decorateCallable(retry, task).call();
            outcome = r == null ? "success" : "result:" + r;
        } catch (RanOut e) {
            throw new VectorException(step, "attempts: the library asked for attempt " + (calls[0] + 1) + " of a list of " + planned.size());
        } catch (Exception e) {
            outcome = "throws:" + e.getClass().getName();
        }
        ObjectNode expect = Json.object();
        expect.put("calls", calls[0]);
        expect.put("outcome", outcome);
        ArrayNode ev = expect.putArray("events");
        events.forEach(ev::add);
        Retry.Metrics m = retry.getMetrics();
        ObjectNode mn = expect.putObject("metrics");
        mn.put("successful_without_retry", m.getNumberOfSuccessfulCallsWithoutRetryAttempt());
        mn.put("successful_with_retry", m.getNumberOfSuccessfulCallsWithRetryAttempt());
        mn.put("failed_without_retry", m.getNumberOfFailedCallsWithoutRetryAttempt());
        mn.put("failed_with_retry", m.getNumberOfFailedCallsWithRetryAttempt());
        return expect;
    }

    /** Marks the end of a vector's attempt list (a fault of the vector, not an outcome). */
    private static final class RanOut extends RuntimeException {
        private static final long serialVersionUID = 1L;
    }

    /**
     * wait-range: draws the configured interval for retry number "attempt" "samples" times. It
     * returns the step's own expect when every draw lies in [min_ms, max_ms] and the smallest and
     * largest draws come within 2 % of the range's width (at least 1 ms) of its ends, else the
     * observed extremes. With a uniform draw over W+1 values, the chance that N draws all miss
     * one end's 2 % is (0.98)^N: 2.8e-18 for N = 2000.
     */
    private static JsonNode waitRange(RetryConfig cfg, JsonNode s, int step) throws VectorException {
        int attempt = s.path("attempt").asInt(0);
        int samples = s.path("samples").asInt(0);
        JsonNode want = s.path("expect");
        if (attempt < 1 || samples < 1 || samples > 1_000_000 || !want.path("min_ms").canConvertToLong() || !want.path("max_ms").canConvertToLong()) {
            throw new VectorException(step, "wait-range needs attempt >= 1, samples in 1..1000000 and expect.min_ms, expect.max_ms");
        }
        long lo = want.get("min_ms").asLong(), hi = want.get("max_ms").asLong();
        IntervalBiFunction<Object> f = cfg.getIntervalBiFunction();
        long min = Long.MAX_VALUE, max = Long.MIN_VALUE;
        for (int i = 0; i < samples; i++) {
            long x = f.apply(attempt, Either.left(new RuntimeException()));
            min = Math.min(min, x);
            max = Math.max(max, x);
        }
        long slack = Math.max(1, (hi - lo) / 50);
        if (min >= lo && max <= hi && min <= lo + slack && max >= hi - slack) {
            return want;
        }
        ObjectNode got = Json.object();
        got.put("min_ms", min);
        got.put("max_ms", max);
        return got;
    }

    private static JsonNode event(RetryEvent e) {
        ObjectNode n = Json.object();
        n.put("type", e.getEventType().name());
        n.put("number_of_attempts", e.getNumberOfRetryAttempts());
        if (e instanceof RetryOnRetryEvent r) {
            n.put("wait_ms", r.getWaitInterval().toMillis());
        }
        if (e.getLastThrowable() != null) {
            n.put("exception", e.getLastThrowable().getClass().getName());
        }
        return n;
    }

    static RetryConfig config(JsonNode c) throws VectorException {
        for (java.util.Iterator<String> it = c.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!KEYS.contains(k)) {
                throw new VectorException(0, "config: unknown key \"" + k + "\"");
            }
        }
        RetryConfig.Builder<Object> b = RetryConfig.custom();
        try {
            if (c.has("wait-duration")) {
                Duration wait = Json.duration(c.get("wait-duration"), "wait-duration", 0);
                boolean exp = c.path("enable-exponential-backoff").asBoolean(false);
                boolean rnd = c.path("enable-randomized-wait").asBoolean(false);
                JsonNode mult = c.get("exponential-backoff-multiplier");
                JsonNode factor = c.get("randomized-wait-factor");
                JsonNode maxN = c.get("exponential-max-wait-duration");
                Duration max = maxN == null ? null : Json.duration(maxN, "exponential-max-wait-duration", 0);
                IntervalFunction f = null;
                if (exp && rnd) {
                    if (max != null && factor != null && mult != null) {
                        f = IntervalFunction.ofExponentialRandomBackoff(wait, mult.doubleValue(), factor.doubleValue(), max);
                    } else if (factor != null && mult != null) {
                        f = IntervalFunction.ofExponentialRandomBackoff(wait, mult.doubleValue(), factor.doubleValue());
                    } else if (mult != null) {
                        f = IntervalFunction.ofExponentialRandomBackoff(wait, mult.doubleValue());
                    } else {
                        f = IntervalFunction.ofExponentialRandomBackoff(wait);
                    }
                } else if (exp) {
                    if (max != null && mult != null) {
                        f = IntervalFunction.ofExponentialBackoff(wait, mult.doubleValue(), max);
                    } else if (mult != null) {
                        f = IntervalFunction.ofExponentialBackoff(wait, mult.doubleValue());
                    } else {
                        f = IntervalFunction.ofExponentialBackoff(wait);
                    }
                } else if (rnd) {
                    f = factor != null ? IntervalFunction.ofRandomized(wait, factor.doubleValue()) : IntervalFunction.ofRandomized(wait);
                } else {
                    b.waitDuration(wait);
                }
                if (f != null) {
                    b.intervalBiFunction(IntervalBiFunction.ofIntervalFunction(f));
                }
            }
            if (c.has("max-attempts") && c.get("max-attempts").intValue() != 0) {
                b.maxAttempts(c.get("max-attempts").intValue());
            }
            if (c.has("ignore-exceptions")) {
                b.ignoreExceptions(Attempts.classes(c.get("ignore-exceptions"), "ignore-exceptions"));
            }
            if (c.has("retry-exceptions")) {
                b.retryExceptions(Attempts.classes(c.get("retry-exceptions"), "retry-exceptions"));
            }
            if (c.has("retry-on-results")) {
                Set<String> results = new HashSet<>();
                c.get("retry-on-results").forEach(n -> results.add(n.asText()));
                b.retryOnResult(r -> r != null && results.contains(r.toString()));
            }
            if (c.has("fail-after-max-attempts")) {
                b.failAfterMaxAttempts(c.get("fail-after-max-attempts").asBoolean());
            }
            return b.build();
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new VectorException(0, "config: the library refuses it: " + e.getMessage(), e);
        }
    }
}
