package springconf

import (
	"errors"
	"strings"

	"github.com/cbprobe/cbprobe/breaker"
)

// Java class names cbprobe uses for its own errors and defaults.
const (
	// ClassRuntimeException is the class of a Go error that names no Java class.
	ClassRuntimeException = "java.lang.RuntimeException"
	// ClassTimeoutException is what a TimeLimiter throws (breaker.TimeoutError).
	ClassTimeoutException = "java.util.concurrent.TimeoutException"
	// ClassCallNotPermitted is what an OPEN breaker throws (breaker.CallNotPermittedError).
	ClassCallNotPermitted = "io.github.resilience4j.circuitbreaker.CallNotPermittedException"
)

type javaClasser interface{ JavaClass() string }

type javaSuperclasser interface{ JavaSuperclasses() []string }

// KnownSuperclasses returns the superclasses of a well-known Java exception class, nearest
// first (e.g. java.net.SocketTimeoutException -> java.io.InterruptedIOException,
// java.io.IOException, java.lang.Exception, java.lang.Throwable), or nil if the class is not
// in cbprobe's table. Both fully qualified and simple names are accepted.
func KnownSuperclasses(class string) []string {
	parent := map[string]string{
		"java.lang.Exception":                                             "java.lang.Throwable",
		"java.lang.Error":                                                 "java.lang.Throwable",
		"java.lang.RuntimeException":                                      "java.lang.Exception",
		"java.lang.IllegalStateException":                                 "java.lang.RuntimeException",
		"java.lang.IllegalArgumentException":                              "java.lang.RuntimeException",
		"java.util.concurrent.TimeoutException":                           "java.lang.Exception",
		"java.util.concurrent.ExecutionException":                         "java.lang.Exception",
		"java.util.concurrent.CompletionException":                        "java.lang.RuntimeException",
		"java.util.concurrent.CancellationException":                      "java.lang.IllegalStateException",
		"java.io.IOException":                                             "java.lang.Exception",
		"java.io.InterruptedIOException":                                  "java.io.IOException",
		"java.net.SocketTimeoutException":                                 "java.io.InterruptedIOException",
		"java.net.SocketException":                                        "java.io.IOException",
		"java.net.ConnectException":                                       "java.net.SocketException",
		"java.net.http.HttpTimeoutException":                              "java.io.IOException",
		"io.github.resilience4j.circuitbreaker.CallNotPermittedException": "java.lang.RuntimeException",
		"io.github.resilience4j.retry.MaxRetriesExceededException":        "java.lang.RuntimeException",
		"feign.FeignException":                                            "java.lang.RuntimeException",
		"feign.RetryableException":                                        "feign.FeignException",
		"feign.FeignException$FeignServerException":                       "feign.FeignException",
		"feign.FeignException$FeignClientException":                       "feign.FeignException",
		"feign.FeignException$InternalServerError":                        "feign.FeignException$FeignServerException",
		"feign.FeignException$ServiceUnavailable":                         "feign.FeignException$FeignServerException",
		"feign.FeignException$BadGateway":                                 "feign.FeignException$FeignServerException",
		"feign.FeignException$GatewayTimeout":                             "feign.FeignException$FeignServerException",
		"feign.FeignException$BadRequest":                                 "feign.FeignException$FeignClientException",
		"feign.FeignException$NotFound":                                   "feign.FeignException$FeignClientException",
		"org.springframework.core.NestedRuntimeException":                 "java.lang.RuntimeException",
		"org.springframework.web.client.RestClientException":              "org.springframework.core.NestedRuntimeException",
		"org.springframework.web.client.ResourceAccessException":          "org.springframework.web.client.RestClientException",
		"org.springframework.web.client.RestClientResponseException":      "org.springframework.web.client.RestClientException",
		"org.springframework.web.client.HttpStatusCodeException":          "org.springframework.web.client.RestClientResponseException",
		"org.springframework.web.client.HttpServerErrorException":         "org.springframework.web.client.HttpStatusCodeException",
		"org.springframework.web.client.HttpClientErrorException":         "org.springframework.web.client.HttpStatusCodeException",
	}
	full := class
	if _, ok := parent[full]; !ok && full != "java.lang.Throwable" {
		full = ""
		for k := range parent {
			if simpleName(k) == class && !strings.ContainsAny(class, ".") {
				full = k
				break
			}
		}
		if full == "" {
			return nil
		}
	}
	var out []string
	for p, ok := parent[full]; ok && len(out) < 32; p, ok = parent[p] {
		out = append(out, p)
	}
	return out
}

// simpleName is Java's Class.getSimpleName for a binary name: after the last '.' or '$'.
func simpleName(class string) string {
	if i := strings.LastIndexAny(class, ".$"); i >= 0 {
		return class[i+1:]
	}
	return class
}

// sameClass compares two class names: equal, or one written without a package and the
// simple names equal.
func sameClass(a, b string) bool {
	if a == b {
		return true
	}
	aq, bq := strings.Contains(a, "."), strings.Contains(b, ".")
	if aq && bq {
		return false
	}
	return simpleName(a) == simpleName(b)
}

// JavaClassOf returns the Java class of err and its superclasses (nearest first): from the
// first error in err's chain with a JavaClass method; else java.util.concurrent.TimeoutException
// for a *breaker.TimeoutError and CallNotPermittedException for a *breaker.CallNotPermittedError
// in the chain; else java.lang.RuntimeException.
func JavaClassOf(err error) (class string, supers []string) {
	var jc javaClasser
	var te *breaker.TimeoutError
	var cnp *breaker.CallNotPermittedError
	switch {
	case err == nil:
	case errors.As(err, &jc):
		class = jc.JavaClass()
		if js, ok := jc.(javaSuperclasser); ok {
			supers = append(supers, js.JavaSuperclasses()...)
		}
	case errors.As(err, &te):
		class = ClassTimeoutException
	case errors.As(err, &cnp):
		class = ClassCallNotPermitted
	}
	if class == "" {
		class = ClassRuntimeException
	}
	if len(supers) == 0 {
		supers = KnownSuperclasses(class)
	}
	return class, supers
}

// IsInstance reports whether err is an instance of the listed Java class, the way Java's
// Class.isAssignableFrom decides it (the class itself or one of its superclasses).
func IsInstance(err error, class string) bool {
	c, supers := JavaClassOf(err)
	if sameClass(c, class) {
		return true
	}
	for _, s := range supers {
		if sameClass(s, class) {
			return true
		}
	}
	return false
}

func anyInstance(err error, classes []string) bool {
	for _, c := range classes {
		if IsInstance(err, c) {
			return true
		}
	}
	return false
}

// NewClassifier builds the circuit breaker's classification from record-exceptions and
// ignore-exceptions, as CircuitBreakerStateMachine.onError does: an error matching ignore
// is ignored; else, when record is non-empty, an error matching it is a failure and every
// other error a success; when record is empty every error is a failure. It returns nil
// (the library default) when both lists are empty.
func NewClassifier(record, ignore []string) breaker.Classifier {
	if len(record) == 0 && len(ignore) == 0 {
		return nil
	}
	rec := append([]string(nil), record...)
	ign := append([]string(nil), ignore...)
	return func(err error) breaker.Outcome {
		if anyInstance(err, ign) {
			return breaker.OutcomeIgnored
		}
		if len(rec) > 0 && !anyInstance(err, rec) {
			return breaker.OutcomeSuccess
		}
		return breaker.OutcomeFailure
	}
}

// NewRetryPredicate builds RetryConfig.Retryable from retry-exceptions and
// ignore-exceptions: (retry is empty or err matches it) and err matches no ignore entry.
// It returns nil (retry every error) when both lists are empty.
func NewRetryPredicate(retry, ignore []string) func(error) bool {
	if len(retry) == 0 && len(ignore) == 0 {
		return nil
	}
	rt := append([]string(nil), retry...)
	ign := append([]string(nil), ignore...)
	return func(err error) bool {
		if len(rt) > 0 && !anyInstance(err, rt) {
			return false
		}
		return !anyInstance(err, ign)
	}
}
