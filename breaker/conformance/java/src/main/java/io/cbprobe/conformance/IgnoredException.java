package io.cbprobe.conformance;

/** The exception class every circuit-breaker vector configures with ignoreExceptions. */
public final class IgnoredException extends RuntimeException {
    private static final long serialVersionUID = 1L;
}
