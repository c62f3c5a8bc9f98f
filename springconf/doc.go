// Package springconf reads a Spring Boot application.yml or application.properties the way
// Spring Boot 3 and resilience4j-spring-boot3 do, and turns its resilience4j sections into
// breaker configs: relaxed binding of property names, Spring's map-key rule for
// instance names, configs/instances/base-config inheritance, Spring's duration syntax and
// the range checks of the Spring property setters. Lint reports the configuration traps
// that need no running service.
//
// # Exceptions and Go errors
//
// record-exceptions, ignore-exceptions and retry-exceptions list Java class names. A Go
// error takes part in that matching by implementing
//
//	interface{ JavaClass() string }
//
// anywhere in its errors.Unwrap chain (found with errors.As). JavaClass returns a fully
// qualified name such as "java.util.concurrent.TimeoutException" or a simple name such
// as "TimeoutException". An error may also implement
//
//	interface{ JavaSuperclasses() []string }
//
// to name its superclasses, so that a listed superclass matches it as Java's
// isAssignableFrom would. For well-known JDK, Spring, Feign and Resilience4j classes the
// superclasses are built in (see KnownSuperclasses). An error with no JavaClass is treated
// as a "java.lang.RuntimeException".
//
// breaker's errors map as: *breaker.TimeoutError is java.util.concurrent.TimeoutException
// and *breaker.CallNotPermittedError is
// io.github.resilience4j.circuitbreaker.CallNotPermittedException (through their JavaClass
// methods).
package springconf
