package springconf

import "testing"

func TestLintThreadPoolBulkheadSizedByCPUs(t *testing.T) {
	const feign = "spring.cloud.openfeign.circuitbreaker.enabled: true\n"
	for _, tc := range []struct {
		name, yml string
		want      bool
	}{
		{"Feign breaker, pool unset", feign, true},
		{"pool sized", feign + "resilience4j.thread-pool-bulkhead.configs.default:\n  core-thread-pool-size: 20\n  max-thread-pool-size: 20\n", false},
		{"only max sized", feign + "resilience4j.thread-pool-bulkhead.configs.default.max-thread-pool-size: 8\n", false},
		{"bulkhead off", feign + "spring.cloud.circuitbreaker.bulkhead.resilience4j.enabled: false\n", false},
		{"no thread pool at all", feign + "spring.cloud.circuitbreaker.resilience4j.disable-thread-pool: true\n", false},
		{"semaphore bulkhead", feign + "spring.cloud.circuitbreaker.resilience4j.enableSemaphoreDefaultBulkhead: true\n", false},
		{"no Feign breaker", "resilience4j.circuitbreaker.instances.a.sliding-window-size: 10\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("application.yml", []byte(tc.yml), YAML)
			if err != nil {
				t.Fatal(err)
			}
			got := false
			for _, fd := range Lint(f, LintOptions{}) {
				if fd.ID == "thread-pool-bulkhead-sized-by-cpus" {
					got = true
				}
			}
			if got != tc.want {
				t.Errorf("thread-pool-bulkhead-sized-by-cpus reported: %v, want %v", got, tc.want)
			}
		})
	}
}
