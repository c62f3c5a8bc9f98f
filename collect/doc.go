// Package collect reads Resilience4j circuit breaker metrics from a running
// service and turns them into transitions labelled with their cause.
//
// Three sources sit behind one interface (Source): the Spring Boot actuator
// (/actuator/circuitbreakers, /actuator/circuitbreakerevents, /actuator/health,
// /actuator/timelimiterevents, /actuator/retryevents), a scrape of
// /actuator/prometheus, and a Prometheus server's query API. A Sampler polls a
// source on its own clock and streams what it read; a Tracker (and the pure
// Analyze function built on it) detects transitions and labels every OPEN as
// failure-rate, slow-call-rate, both, half-open-trial, forced or unknown, with
// the evidence that decided it.
package collect
