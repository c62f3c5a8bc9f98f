package io.cbprobe.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.github.resilience4j.timelimiter.TimeLimiter;
import io.github.resilience4j.timelimiter.TimeLimiterConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Replays time-limiter vectors (docs/conformance.md) on TimeLimiterImpl's Future form
 * (decorateFutureSupplier, the form Spring Cloud CircuitBreaker uses): the library calls
 * future.get(timeout) and, on TimeoutException, cancel(true) when cancel-running-future is set.
 * The future is a fake whose get(timeout) answers from the call's planned duration instead of
 * blocking: the result when the call ends at or before the timeout, else TimeoutException.
 * A call that ends exactly at the timeout is a race in the real world; vectors avoid it.
 */
final class TimeLimiterReplay implements Replayer {
    static final Set<String> KEYS = Set.of("timeout-duration", "cancel-running-future");

    @Override
    public List<JsonNode> run(ObjectNode v) throws VectorException {
        JsonNode c = v.path("config");
        for (java.util.Iterator<String> it = c.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!KEYS.contains(k)) {
                throw new VectorException(0, "config: unknown key \"" + k + "\"");
            }
        }
        TimeLimiterConfig.Builder b = TimeLimiterConfig.custom();
        if (c.has("timeout-duration")) {
            b.timeoutDuration(Json.duration(c.get("timeout-duration"), "timeout-duration", 0));
        }
        if (c.has("cancel-running-future")) {
            b.cancelRunningFuture(c.get("cancel-running-future").asBoolean());
        }
        TimeLimiterConfig cfg = b.build();
        TimeLimiter tl = TimeLimiter.of(v.path("name").asText("vector"), cfg);
        List<JsonNode> events = new ArrayList<>();
        tl.getEventPublisher().onEvent(e -> {
            ObjectNode n = Json.object();
            n.put("type", e.getEventType().name());
            events.add(n);
        });
        List<JsonNode> out = new ArrayList<>();
        JsonNode steps = v.get("steps");
        for (int i = 0; i < steps.size(); i++) {
            JsonNode s = steps.get(i);
            int step = i + 1;
            if (!s.path("op").asText().equals("call")) {
                throw new VectorException(step, "op: unknown op " + s.get("op") + " (want call)");
            }
            long d = s.path("duration_ms").asLong(-1);
            if (d < 0) {
                throw new VectorException(step, "duration_ms: missing or negative");
            }
            String outcome = s.path("outcome").asText();
            Exception failure = outcome.equals("success") ? null : Attempts.exception(outcome, step);
            FakeFuture f = new FakeFuture(d, failure);
            events.clear();
            String result;
            try {
                tl.decorateFutureSupplier(() -> f).call();
                result = "success";
            } catch (Exception e) {
                result = "throws:" + e.getClass().getName();
            }
            ObjectNode expect = Json.object();
            expect.put("outcome", result);
            expect.put("cancelled", f.cancelled);
            ArrayNode ev = expect.putArray("events");
            events.forEach(ev::add);
            out.add(expect);
        }
        return out;
    }

    /** A call that ends after durationMs with failure (null: success). */
    static final class FakeFuture implements Future<Object> {
        final long durationMs;
        final Exception failure;
        boolean cancelled;

        FakeFuture(long durationMs, Exception failure) {
            this.durationMs = durationMs;
            this.failure = failure;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            cancelled = true;
            return true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return false;
        }

        @Override
        public Object get() throws ExecutionException {
            if (failure != null) {
                throw new ExecutionException(failure);
            }
            return null;
        }

        @Override
        public Object get(long timeout, TimeUnit unit) throws ExecutionException, TimeoutException {
            if (durationMs > unit.toMillis(timeout)) {
                throw new TimeoutException();
            }
            return get();
        }
    }
}
