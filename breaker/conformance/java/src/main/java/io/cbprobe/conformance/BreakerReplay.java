package io.cbprobe.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.circuitbreaker.IllegalStateTransitionException;
import io.github.resilience4j.circuitbreaker.event.CircuitBreakerEvent;
import io.github.resilience4j.circuitbreaker.event.CircuitBreakerOnStateTransitionEvent;
import io.github.resilience4j.circuitbreaker.internal.CircuitBreakerStateMachine;
import io.github.resilience4j.circuitbreaker.internal.SchedulerFactory;
import io.github.resilience4j.core.IntervalFunction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.mockito.MockMakers;
import org.mockito.Mockito;

/**
 * Replays circuit-breaker vectors (shared/conformance/README.md, plus the keys of
 * docs/conformance.md) on a CircuitBreakerStateMachine built from CircuitBreakerConfig with a
 * fake clock. Its two timers run on a FakeScheduler: the state machine takes them from
 * SchedulerFactory.getScheduler(), and SchedulerFactory has only a private constructor
 * (SchedulerFactory.java, v2.4.0, lines 18-19), so the public constructor
 * CircuitBreakerStateMachine(String, CircuitBreakerConfig, SchedulerFactory) is given a Mockito
 * stub of it that returns the fake scheduler, the seam that constructor's javadoc names
 * ("A SchedulerFactory which can be mocked in tests", CircuitBreakerStateMachine.java lines 96-103).
 */
final class BreakerReplay implements Replayer {
    static final Set<String> KEYS = Set.of(
        "sliding-window-type", "sliding-window-size", "minimum-number-of-calls", "failure-rate-threshold",
        "slow-call-rate-threshold", "slow-call-duration-threshold", "wait-duration-in-open-state",
        "permitted-number-of-calls-in-half-open-state", "max-wait-duration-in-half-open-state",
        "automatic-transition-from-open-to-half-open-enabled", "transition-to-state-after-wait-duration",
        "initial-state", "enable-exponential-backoff", "exponential-backoff-multiplier",
        "exponential-max-wait-duration-in-open-state", "enable-randomized-wait", "randomized-wait-factor");

    private final FakeScheduler scheduler = new FakeScheduler();
    private final SchedulerFactory schedulerFactory;

    BreakerReplay() {
        // The subclass mock maker defines a subclass at run time and needs no agent: the default
        // inline mock maker attaches one to the JVM, which costs seconds at start.
        schedulerFactory = Mockito.mock(SchedulerFactory.class, Mockito.withSettings().mockMaker(MockMakers.SUBCLASS));
        Mockito.when(schedulerFactory.getScheduler()).thenReturn(scheduler);
    }

    @Override
    public List<JsonNode> run(ObjectNode v) throws VectorException {
        FakeClock clock = new FakeClock(T0);
        scheduler.reset(clock);
        CircuitBreakerConfig cfg = config(v.path("config"), clock);
        CircuitBreakerStateMachine cb = new CircuitBreakerStateMachine(v.path("name").asText("vector"), cfg, schedulerFactory);
        List<JsonNode> events = new ArrayList<>();
        cb.getEventPublisher().onEvent(e -> events.add(event(e)));
        Map<String, Boolean> acquired = new HashMap<>();
        List<JsonNode> out = new ArrayList<>();
        JsonNode steps = v.get("steps");
        long last = 0;
        for (int i = 0; i < steps.size(); i++) {
            JsonNode s = steps.get(i);
            int step = i + 1;
            long at = s.path("at_ms").asLong(-1);
            if (at < last) {
                throw new VectorException(step, "at_ms: " + s.get("at_ms") + " is missing, negative or before the previous step");
            }
            last = at;
            events.clear();
            scheduler.advanceTo(T0.plusMillis(at));
            ObjectNode expect = Json.object();
            Boolean permitted = null;
            String error = null;
            String op = s.path("op").asText();
            try {
                switch (op) {
                    case "call":
                        permitted = cb.tryAcquirePermission();
                        if (permitted) {
                            record(cb, s, step);
                        }
                        break;
                    case "acquire":
                        permitted = cb.tryAcquirePermission();
                        if (acquired.put(id(s, step), permitted) != null) {
                            throw new VectorException(step, "id: " + s.get("id") + " was acquired before");
                        }
                        break;
                    case "record":
                        Boolean p = acquired.remove(id(s, step));
                        if (p == null || !p) {
                            throw new VectorException(step, "id: " + s.get("id") + " names no earlier permitted, unrecorded acquire");
                        }
                        record(cb, s, step);
                        break;
                    case "read":
                        break;
                    case "transition":
                        transition(cb, s.path("to").asText(), step);
                        break;
                    case "reset":
                        cb.reset();
                        break;
                    default:
                        throw new VectorException(step, "op: unknown op \"" + op + "\" (want call, acquire, record, read, transition, reset)");
                }
            } catch (IllegalStateTransitionException e) {
                error = "IllegalStateTransitionException";
            } catch (RuntimeException e) {
                error = e.getClass().getSimpleName();
            }
            expect.set("permitted", permitted == null ? Json.F.nullNode() : Json.F.booleanNode(permitted));
            expect.put("state", cb.getState().name());
            ArrayNode ev = expect.putArray("events");
            events.forEach(ev::add);
            expect.set("metrics", metrics(cb.getMetrics()));
            if (error != null) {
                expect.put("error", error);
            }
            out.add(expect);
        }
        return out;
    }

    private static String id(JsonNode s, int step) throws VectorException {
        String id = s.path("id").asText("");
        if (id.isEmpty()) {
            throw new VectorException(step, "id: missing for op " + s.path("op").asText());
        }
        return id;
    }

    private static void record(CircuitBreaker cb, JsonNode s, int step) throws VectorException {
        JsonNode d = s.get("duration_ms");
        if (d == null || !d.canConvertToLong() || d.asLong() < 0) {
            throw new VectorException(step, "duration_ms: missing or negative");
        }
        long ms = d.asLong();
        switch (s.path("outcome").asText()) {
            case "success" -> cb.onSuccess(ms, TimeUnit.MILLISECONDS);
            case "failure" -> cb.onError(ms, TimeUnit.MILLISECONDS, new RuntimeException());
            case "ignored" -> cb.onError(ms, TimeUnit.MILLISECONDS, new IgnoredException());
            default -> throw new VectorException(step, "outcome: " + s.get("outcome") + " is not success, failure or ignored");
        }
    }

    private static void transition(CircuitBreaker cb, String to, int step) throws VectorException {
        switch (to) {
            case "CLOSED" -> cb.transitionToClosedState();
            case "OPEN" -> cb.transitionToOpenState();
            case "HALF_OPEN" -> cb.transitionToHalfOpenState();
            case "FORCED_OPEN" -> cb.transitionToForcedOpenState();
            case "DISABLED" -> cb.transitionToDisabledState();
            case "METRICS_ONLY" -> cb.transitionToMetricsOnlyState();
            default -> throw new VectorException(step, "to: unknown state \"" + to + "\"");
        }
    }

    private static JsonNode event(CircuitBreakerEvent e) {
        ObjectNode n = Json.object();
        n.put("type", e.getEventType().name());
        if (e instanceof CircuitBreakerOnStateTransitionEvent t) {
            n.put("transition", t.getStateTransition().name());
        }
        return n;
    }

    private static JsonNode metrics(CircuitBreaker.Metrics m) {
        ObjectNode n = Json.object();
        n.set("failure_rate", Json.rate(m.getFailureRate()));
        n.set("slow_call_rate", Json.rate(m.getSlowCallRate()));
        n.put("buffered_calls", m.getNumberOfBufferedCalls());
        n.put("failed_calls", m.getNumberOfFailedCalls());
        n.put("successful_calls", m.getNumberOfSuccessfulCalls());
        n.put("slow_calls", m.getNumberOfSlowCalls());
        n.put("slow_successful_calls", m.getNumberOfSlowSuccessfulCalls());
        n.put("slow_failed_calls", m.getNumberOfSlowFailedCalls());
        n.put("not_permitted_calls", m.getNumberOfNotPermittedCalls());
        return n;
    }

    /**
     * The config block as builder calls. Keys of the public README map one to one; the open-state
     * wait keys follow Spring's CommonCircuitBreakerConfigurationProperties (v2.4.0, lines 113-118
     * and 208-250): exponential and randomised together are refused; both apply only when
     * wait-duration-in-open-state is set above 0 ms; the exponential cap applies only when the
     * multiplier is set too.
     */
    static CircuitBreakerConfig config(JsonNode c, FakeClock clock) throws VectorException {
        CircuitBreakerConfig.Builder b = CircuitBreakerConfig.custom()
            .clock(clock)
            .currentTimestampFunction(cl -> cl.millis(), TimeUnit.MILLISECONDS)
            .ignoreExceptions(IgnoredException.class);
        for (java.util.Iterator<String> it = c.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!KEYS.contains(k)) {
                throw new VectorException(0, "config: unknown key \"" + k + "\"");
            }
        }
        try {
            if (bool(c, "enable-exponential-backoff") && bool(c, "enable-randomized-wait")) {
                throw new VectorException(0, "config: enable-exponential-backoff and enable-randomized-wait together "
                    + "(Spring refuses this with IllegalStateException)");
            }
            if (c.has("wait-duration-in-open-state")) {
                Duration wait = Json.duration(c.get("wait-duration-in-open-state"), "wait-duration-in-open-state", 0);
                if (wait.toMillis() > 0) {
                    if (bool(c, "enable-exponential-backoff")) {
                        JsonNode mult = c.get("exponential-backoff-multiplier");
                        JsonNode max = c.get("exponential-max-wait-duration-in-open-state");
                        if (max != null && mult != null) {
                            b.waitIntervalFunctionInOpenState(IntervalFunction.ofExponentialBackoff(wait, mult.doubleValue(),
                                Json.duration(max, "exponential-max-wait-duration-in-open-state", 0)));
                        } else if (mult != null) {
                            b.waitIntervalFunctionInOpenState(IntervalFunction.ofExponentialBackoff(wait, mult.doubleValue()));
                        } else {
                            b.waitIntervalFunctionInOpenState(IntervalFunction.ofExponentialBackoff(wait));
                        }
                    } else if (bool(c, "enable-randomized-wait")) {
                        JsonNode f = c.get("randomized-wait-factor");
                        b.waitIntervalFunctionInOpenState(f != null ? IntervalFunction.ofRandomized(wait, f.doubleValue())
                            : IntervalFunction.ofRandomized(wait));
                    } else {
                        b.waitDurationInOpenState(wait);
                    }
                }
            }
            if (c.has("failure-rate-threshold")) {
                b.failureRateThreshold(c.get("failure-rate-threshold").floatValue());
            }
            if (c.has("slow-call-rate-threshold")) {
                b.slowCallRateThreshold(c.get("slow-call-rate-threshold").floatValue());
            }
            if (c.has("slow-call-duration-threshold")) {
                b.slowCallDurationThreshold(Json.duration(c.get("slow-call-duration-threshold"), "slow-call-duration-threshold", 0));
            }
            if (c.has("max-wait-duration-in-half-open-state")) {
                b.maxWaitDurationInHalfOpenState(Json.duration(c.get("max-wait-duration-in-half-open-state"),
                    "max-wait-duration-in-half-open-state", 0));
            }
            if (c.has("transition-to-state-after-wait-duration")) {
                b.transitionToStateAfterWaitDuration(state(c.get("transition-to-state-after-wait-duration").asText()));
            }
            if (c.has("sliding-window-size")) {
                b.slidingWindowSize(c.get("sliding-window-size").intValue());
            }
            if (c.has("minimum-number-of-calls")) {
                b.minimumNumberOfCalls(c.get("minimum-number-of-calls").intValue());
            }
            if (c.has("sliding-window-type")) {
                b.slidingWindowType(CircuitBreakerConfig.SlidingWindowType.valueOf(c.get("sliding-window-type").asText()));
            }
            if (c.has("permitted-number-of-calls-in-half-open-state")) {
                b.permittedNumberOfCallsInHalfOpenState(c.get("permitted-number-of-calls-in-half-open-state").intValue());
            }
            if (c.has("automatic-transition-from-open-to-half-open-enabled")) {
                b.automaticTransitionFromOpenToHalfOpenEnabled(c.get("automatic-transition-from-open-to-half-open-enabled").booleanValue());
            }
            if (c.has("initial-state")) {
                b.initialState(state(c.get("initial-state").asText()));
            }
            return b.build();
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new VectorException(0, "config: the library refuses it: " + e.getMessage(), e);
        }
    }

    private static boolean bool(JsonNode c, String k) {
        return c.path(k).asBoolean(false);
    }

    private static CircuitBreaker.State state(String s) throws VectorException {
        try {
            return CircuitBreaker.State.valueOf(s);
        } catch (IllegalArgumentException e) {
            throw new VectorException(0, "config: unknown state \"" + s + "\"");
        }
    }
}
