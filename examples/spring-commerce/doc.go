// Package springcommerce holds the Go tests that hold cbprobe's demo to the real Spring Boot
// service in this folder (examples/spring-commerce): schema parity of the actuator JSON and
// the Prometheus text on both Spring generations, with both Feign naming schemes, and lint of
// the service's application.yml. The jars are built by `make spring-example`
// (scripts/spring-example.sh); docs/spring-parity.md says what is compared and why the listed
// differences are deliberate.
package springcommerce
