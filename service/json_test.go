package service

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// flattenLikeSpring is what Spring reads from a SPRING_APPLICATION_JSON value:
// PropertiesFromJSON, whose own test (TestPropertiesFromJSON) pins it to fixed keys.
func flattenLikeSpring(t *testing.T, js string) map[string]string {
	t.Helper()
	out, err := PropertiesFromJSON(js)
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	return out
}

func TestSpringApplicationJSON(t *testing.T) {
	feign := "resilience4j.circuitbreaker.instances[PgPaymentClient#requestPayment(String,PaymentRequest)]"
	cases := []struct {
		name  string
		props map[string]string
		json  string // "" to check only the round trip
	}{
		{name: "nested", props: map[string]string{
			"resilience4j.timelimiter.configs.default.timeout-duration": "600ms",
			"resilience4j.retry.configs.default.max-attempts":           "1",
		}, json: `{"resilience4j":{"retry":{"configs":{"default":{"max-attempts":"1"}}},"timelimiter":{"configs":{"default":{"timeout-duration":"600ms"}}}}}`},
		{name: "bracketed map key stays with its name", props: map[string]string{
			feign + ".sliding-window-size":    "20",
			feign + ".failure-rate-threshold": "60",
		}, json: `{"resilience4j":{"circuitbreaker":{"instances[PgPaymentClient#requestPayment(String,PaymentRequest)]":{"failure-rate-threshold":"60","sliding-window-size":"20"}}}}`},
		{name: "dots inside brackets", props: map[string]string{"logging.level[org.springframework.web]": "DEBUG"},
			json: `{"logging":{"level[org.springframework.web]":"DEBUG"}}`},
		{name: "value and subtree under one name", props: map[string]string{"a.b": "1", "a.b.c": "2", "a.b.d.e": "3"},
			json: `{"a":{"b":"1"},"a.b.c":"2","a.b.d.e":"3"}`},
		{name: "special characters in values", props: map[string]string{"pg.base-url": "http://127.0.0.1:8082/?a=<b>&c=\"d\""}},
		{name: "empty", props: map[string]string{}, json: `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SpringApplicationJSON(tc.props)
			if err != nil {
				t.Fatal(err)
			}
			if tc.json != "" && got != tc.json {
				t.Errorf("got  %s\nwant %s", got, tc.json)
			}
			if flat := flattenLikeSpring(t, got); !maps.Equal(flat, tc.props) {
				t.Errorf("Spring would read %v, want %v", flat, tc.props)
			}
		})
	}
}

func TestSpringApplicationJSONBadKeys(t *testing.T) {
	for _, key := range []string{"", "a..b", ".a", "a.", "a[b", "a]b", "a[b]]"} {
		t.Run(key, func(t *testing.T) {
			_, err := SpringApplicationJSON(map[string]string{key: "v"})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
				t.Errorf("error %v, want one naming %q", err, key)
			}
		})
	}
}

func TestMergeSpringJSON(t *testing.T) {
	base := `{"spring":{"datasource":{"url":"jdbc:h2:mem:x"}},"pg":{"base-url":"http://gateway.example","retry-wait":"1s"}}`
	got, err := mergeSpringJSON(base, map[string]string{"pg.base-url": "http://127.0.0.1:5", "server.port": "9"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"spring.datasource.url": "jdbc:h2:mem:x", "pg.base-url": "http://127.0.0.1:5", "pg.retry-wait": "1s", "server.port": "9",
	}
	if flat := flattenLikeSpring(t, got); !maps.Equal(flat, want) {
		t.Errorf("Spring would read %v, want %v", flat, want)
	}
	if _, err := mergeSpringJSON(`[1]`, nil); err == nil {
		t.Error("a JSON list as SPRING_APPLICATION_JSON was accepted")
	}
}

func TestPropertiesFromJSON(t *testing.T) {
	props := map[string]string{
		"resilience4j.circuitbreaker.instances[PgPaymentClient#requestPayment(String,PaymentRequest)].sliding-window-size": "20",
		"a.b": "1", "a.b.c": "2", "server.port": "8080",
	}
	js, err := SpringApplicationJSON(props)
	if err != nil {
		t.Fatal(err)
	}
	got, err := PropertiesFromJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, props) {
		t.Errorf("round trip: got %v, want %v", got, props)
	}
	got, err = PropertiesFromJSON(`{"x":{"n":20,"f":1.50,"b":true,"l":["p","q"]}}`)
	want := map[string]string{"x.n": "20", "x.f": "1.50", "x.b": "true", "x.l[0]": "p", "x.l[1]": "q"}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("got %v %v, want %v", got, err, want)
	}
	if _, err := PropertiesFromJSON(`[1]`); err == nil {
		t.Error("a list was accepted")
	}
}
