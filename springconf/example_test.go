package springconf_test

import (
	"fmt"

	"github.com/cbprobe/cbprobe/springconf"
)

func ExampleFile_Resolve() {
	f, err := springconf.Load("testdata/field-report-pg-simulator.yml")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := f.Resolve("PgPaymentClient#requestPayment(String,PaymentRequest)")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("matched instance: %q\n", r.MatchedInstance)
	for _, k := range []string{"failure-rate-threshold", "sliding-window-size", "minimum-number-of-calls"} {
		fmt.Printf("%s <- %s\n", k, r.Sources[k])
	}
	fmt.Println(r.Config.FailureRateThreshold, r.Config.SlidingWindowSize, r.Config.MinimumNumberOfCalls)
	// Output:
	// matched instance: ""
	// failure-rate-threshold <- resilience4j.circuitbreaker.configs.default.failure-rate-threshold
	// sliding-window-size <- resilience4j.circuitbreaker.configs.default.sliding-window-size
	// minimum-number-of-calls <- library default
	// 60 20 100
}

func ExampleParseDuration() {
	for _, s := range []string{"100ms", "10s", "PT0.5S", "250", "0.5s"} {
		d, err := springconf.ParseDuration(s)
		fmt.Println(d, err)
	}
	// Output:
	// 100ms <nil>
	// 10s <nil>
	// 500ms <nil>
	// 250ms <nil>
	// 0s "0.5s" is not a duration (want e.g. 100ms, 10s, 1m, PT0.5S; a bare number is milliseconds): unknown unit ".5s" (want ns, us, ms, s, m, h or d)
}

func ExampleParse_error() {
	_, err := springconf.Parse("application.yml", []byte(`resilience4j:
  circuitbreaker:
    configs:
      default:
        failure-rate-threshold: 0
`), springconf.YAML)
	fmt.Println(err)
	// Output:
	// application.yml:5: resilience4j.circuitbreaker.configs.default.failure-rate-threshold: 0 is not in 1..100
}
