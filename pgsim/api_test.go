package pgsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

func TestCreateValidation(t *testing.T) {
	// A 30 s latency: any 4xx that waited for it would time out the 5 s client,
	// so these cases also prove that 4xx answers come without delay.
	b := quiet()
	b.Latency = behavior.Fixed{D: 30 * time.Second}
	_, base := newTestServer(t, Config{Behavior: b, Seed: 1})
	client := &http.Client{Timeout: 5 * time.Second}
	url := base + "/api/v1/payments"
	body := func(edit string) string {
		m := map[string]any{}
		_ = json.Unmarshal([]byte(validBody), &m)
		var patch map[string]any
		if err := json.Unmarshal([]byte(edit), &patch); err != nil {
			t.Fatalf("test case patch %q: %v", edit, err)
		}
		for k, v := range patch {
			if v == "<absent>" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		out, _ := json.Marshal(m)
		return string(out)
	}
	tests := []struct {
		name   string
		user   string
		body   string
		status int
		want   string // whole body
	}{
		{name: "no user header, bad body", body: `{`, status: 400, want: failBody("Bad Request", "유저 ID 헤더는 필수입니다.")},
		{name: "empty body", user: "u1", body: "", status: 400, want: failBody("Bad Request", msgBodyUnreadable)},
		{name: "malformed JSON", user: "u1", body: `{"orderId":`, status: 400, want: failBody("Bad Request", msgBodyUnreadable)},
		{name: "array body", user: "u1", body: `[1,2]`, status: 400, want: failBody("Bad Request", msgBodyUnreadable)},
		{name: "missing orderId", user: "u1", body: body(`{"orderId":"<absent>"}`), status: 400, want: failBody("Bad Request", "필수 필드 'orderId'이(가) 누락되었습니다.")},
		{name: "missing callbackUrl", user: "u1", body: body(`{"callbackUrl":"<absent>"}`), status: 400, want: failBody("Bad Request", "필수 필드 'callbackUrl'이(가) 누락되었습니다.")},
		{name: "null amount", user: "u1", body: body(`{"amount":null}`), status: 400, want: failBody("Bad Request", "필수 필드 'amount'이(가) 누락되었습니다.")},
		{name: "unknown card type", user: "u1", body: body(`{"cardType":"VISA"}`), status: 400,
			want: failBody("Bad Request", "필드 'cardType'의 값 'VISA'이(가) 예상 타입(CardTypeDto)과 일치하지 않습니다. 사용 가능한 값 : [SAMSUNG, KB, HYUNDAI]")},
		{name: "card type as number", user: "u1", body: body(`{"cardType":1}`), status: 400,
			want: failBody("Bad Request", "필드 'cardType'의 값 '1'이(가) 예상 타입(CardTypeDto)과 일치하지 않습니다. 사용 가능한 값 : [SAMSUNG, KB, HYUNDAI]")},
		{name: "amount not a number", user: "u1", body: body(`{"amount":"abc"}`), status: 400,
			want: failBody("Bad Request", "필드 'amount'의 값 'abc'이(가) 예상 타입(long)과 일치하지 않습니다. ")},
		{name: "amount bool", user: "u1", body: body(`{"amount":true}`), status: 400,
			want: failBody("Bad Request", "필드 'amount'의 값 'true'이(가) 예상 타입(long)과 일치하지 않습니다. ")},
		{name: "orderId object", user: "u1", body: body(`{"orderId":{"a":1}}`), status: 400,
			want: failBody("Bad Request", `필드 'orderId'의 값 '{\"a\":1}'이(가) 예상 타입(String)과 일치하지 않습니다. `)},
		{name: "short orderId", user: "u1", body: body(`{"orderId":"12345"}`), status: 400, want: failBody("Bad Request", "주문 ID는 6자리 이상 문자열이어야 합니다.")},
		{name: "blank orderId", user: "u1", body: body(`{"orderId":"       "}`), status: 400, want: failBody("Bad Request", "주문 ID는 6자리 이상 문자열이어야 합니다.")},
		{name: "bad card number", user: "u1", body: body(`{"cardNo":"1234567898141451"}`), status: 400, want: failBody("Bad Request", "카드 번호는 xxxx-xxxx-xxxx-xxxx 형식이어야 합니다.")},
		{name: "zero amount", user: "u1", body: body(`{"amount":0}`), status: 400, want: failBody("Bad Request", "결제금액은 양의 정수여야 합니다.")},
		{name: "negative amount string", user: "u1", body: body(`{"amount":"-5"}`), status: 400, want: failBody("Bad Request", "결제금액은 양의 정수여야 합니다.")},
		{name: "callback prefix", user: "u1", body: body(`{"callbackUrl":"http://example.com/cb"}`), status: 400, want: failBody("Bad Request", "콜백 URL 은 http://localhost:8080 로 시작해야 합니다.")},
		{name: "validation order: orderId before cardNo", user: "u1", body: body(`{"orderId":"1","cardNo":"x"}`), status: 400, want: failBody("Bad Request", "주문 ID는 6자리 이상 문자열이어야 합니다.")},
		{name: "type error before missing field", user: "u1", body: `{"cardType":"VISA"}`, status: 400,
			want: failBody("Bad Request", "필드 'cardType'의 값 'VISA'이(가) 예상 타입(CardTypeDto)과 일치하지 않습니다. 사용 가능한 값 : [SAMSUNG, KB, HYUNDAI]")},
		{name: "body over 1 MiB", user: "u1", body: `{"orderId":"` + strings.Repeat("x", 1<<20) + `"}`, status: 413,
			want: failBody("Payload Too Large", msgTooLarge)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := do(t, client, http.MethodPost, url, tc.user, tc.body)
			if got.status != tc.status || got.body != tc.want {
				t.Fatalf("got %d %s\nwant %d %s", got.status, got.body, tc.status, tc.want)
			}
			if ct := got.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// isTransactionKey reports whether k has the original's form yyyyMMdd:TR:xxxxxx.
func isTransactionKey(k string) bool {
	return regexp.MustCompile(`^\d{8}:TR:[0-9a-f]{6}$`).MatchString(k)
}

func TestCreateSuccessAndLookups(t *testing.T) {
	s, base := newTestServer(t, Config{Behavior: quiet(), Seed: 1})
	url := base + "/api/v1/payments"
	// Numbers as strings and unknown fields are accepted, as Jackson does.
	first := do(t, nil, http.MethodPost, url, "u1",
		`{"orderId":"order-1","cardType":"KB","cardNo":"1111-2222-3333-4444","amount":"5000","callbackUrl":"http://localhost:8080/cb","extra":true}`)
	second := do(t, nil, http.MethodPost, url, "u1",
		`{"orderId":"order-1","cardType":"HYUNDAI","cardNo":"1111-2222-3333-5555","amount":7000,"callbackUrl":"http://localhost:8080/cb"}`)
	var keys []string
	for _, r := range []reply{first, second} {
		var env struct {
			Meta map[string]any `json:"meta"`
			Data map[string]any `json:"data"`
		}
		if r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		if err := json.Unmarshal([]byte(r.body), &env); err != nil {
			t.Fatal(err)
		}
		key, _ := env.Data["transactionKey"].(string)
		want := fmt.Sprintf(`{"meta":{"result":"SUCCESS"},"data":{"transactionKey":"%s","status":"PENDING"}}`, key)
		if r.body != want || !isTransactionKey(key) {
			t.Fatalf("create body %s, want %s with a key like 20250816:TR:9577c5", r.body, want)
		}
		kst := time.Now().In(time.FixedZone("KST", 9*3600)).Format("20060102")
		if !strings.HasPrefix(key, kst) && !strings.HasPrefix(key, time.Now().Add(-time.Minute).In(time.FixedZone("KST", 9*3600)).Format("20060102")) {
			t.Errorf("key %s does not start with the Seoul date %s", key, kst)
		}
		keys = append(keys, key)
	}
	if keys[0] == keys[1] {
		t.Fatalf("two transactions share key %s", keys[0])
	}

	tests := []struct {
		name   string
		method string
		path   string
		user   string
		status int
		want   string
	}{
		{name: "detail", method: "GET", path: "/api/v1/payments/" + keys[0], user: "u1", status: 200,
			want: `{"meta":{"result":"SUCCESS"},"data":{"transactionKey":"` + keys[0] + `","orderId":"order-1","cardType":"KB","cardNo":"1111-2222-3333-4444","amount":5000,"status":"PENDING"}}`},
		{name: "detail other user", method: "GET", path: "/api/v1/payments/" + keys[0], user: "u2", status: 404,
			want: failBody("Not Found", "(transactionKey: "+keys[0]+") 결제건이 존재하지 않습니다.")},
		{name: "detail unknown key", method: "GET", path: "/api/v1/payments/20250101:TR:000000", user: "u1", status: 404,
			want: failBody("Not Found", "(transactionKey: 20250101:TR:000000) 결제건이 존재하지 않습니다.")},
		{name: "detail without header", method: "GET", path: "/api/v1/payments/" + keys[0], status: 400, want: failBody("Bad Request", "유저 ID 헤더는 필수입니다.")},
		{name: "list newest first", method: "GET", path: "/api/v1/payments?orderId=order-1", user: "u1", status: 200,
			want: `{"meta":{"result":"SUCCESS"},"data":{"orderId":"order-1","transactions":[{"transactionKey":"` + keys[1] + `","status":"PENDING"},{"transactionKey":"` + keys[0] + `","status":"PENDING"}]}}`},
		{name: "list other user", method: "GET", path: "/api/v1/payments?orderId=order-1", user: "u2", status: 404,
			want: failBody("Not Found", "(orderId: order-1) 에 해당하는 결제건이 존재하지 않습니다.")},
		{name: "list without header", method: "GET", path: "/api/v1/payments?orderId=order-1", status: 400, want: failBody("Bad Request", "유저 ID 헤더는 필수입니다.")},
		{name: "list without orderId", method: "GET", path: "/api/v1/payments", user: "u1", status: 400,
			want: failBody("Bad Request", "필수 요청 파라미터 'orderId' (타입: String)가 누락되었습니다.")},
		{name: "wrong method on collection", method: "PUT", path: "/api/v1/payments", user: "u1", status: 405, want: failBody("Method Not Allowed", msgMethod("PUT"))},
		{name: "wrong method on item", method: "DELETE", path: "/api/v1/payments/" + keys[0], user: "u1", status: 405, want: failBody("Method Not Allowed", msgMethod("DELETE"))},
		{name: "unknown path", method: "GET", path: "/api/v2/nothing", user: "u1", status: 404, want: failBody("Not Found", "존재하지 않는 요청입니다.")},
		{name: "nested path", method: "GET", path: "/api/v1/payments/a/b", user: "u1", status: 404, want: failBody("Not Found", "존재하지 않는 요청입니다.")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := do(t, nil, tc.method, base+tc.path, tc.user, "")
			if got.status != tc.status || got.body != tc.want {
				t.Fatalf("got %d %s\nwant %d %s", got.status, got.body, tc.status, tc.want)
			}
		})
	}
	st := s.Stats()
	if st.Requests[EndpointCreate][OutcomeSuccess] != 2 || st.Transactions != 2 {
		t.Errorf("stats requests %v transactions %d, want 2 creates and 2 transactions", st.Requests, st.Transactions)
	}
	if got := do(t, nil, "PUT", base+"/api/v1/payments", "u1", ""); got.header.Get("Allow") != "GET, POST" {
		t.Errorf("405 Allow header %q", got.header.Get("Allow"))
	}
}

func TestCreateInjectedError(t *testing.T) {
	b := quiet()
	b.ErrorRate = 1
	s, base := newTestServer(t, Config{Behavior: b, Seed: 1})
	got := do(t, nil, http.MethodPost, base+"/api/v1/payments", "u1", validBody)
	if want := failBody("Internal Server Error", "현재 서버가 불안정합니다. 잠시 후 다시 시도해주세요."); got.status != 500 || got.body != want {
		t.Fatalf("got %d %s, want 500 %s", got.status, got.body, want)
	}
	att := s.Attempts()
	if len(att) != 1 || att[0].Outcome != OutcomeError || att[0].UserID != "u1" || att[0].OrderID != "1351039135" || att[0].N != 1 {
		t.Fatalf("attempt log %+v", att)
	}
	if s.Stats().Transactions != 0 {
		t.Fatal("a failed call stored a transaction")
	}
}

func TestErrorRateZeroNeverFails(t *testing.T) {
	b := behavior.DefaultBehavior()
	b.ErrorRate = 0
	s, base := newTestServer(t, Config{Behavior: b, Seed: 3, Speed: 100}) // 1–5 ms latency
	for i := range 200 {
		body := strings.Replace(validBody, "1351039135", fmt.Sprintf("order-%04d", i), 1)
		if got := do(t, nil, http.MethodPost, base+"/api/v1/payments", "u1", body); got.status != 200 {
			t.Fatalf("call %d: %d %s", i, got.status, got.body)
		}
	}
	if st := s.Stats().Attempts; st.Outcomes[OutcomeSuccess] != 200 || st.Orders != 200 || st.Mean != 1 {
		t.Fatalf("attempt stats %+v", st)
	}
}

func TestSlowModeTiming(t *testing.T) {
	b := behavior.DefaultBehavior() // 40 % errors, ignored in slow mode
	b.Slow = true
	s, base := newTestServer(t, Config{Behavior: b, Seed: 5})
	const n = 16
	type res struct {
		status  int
		elapsed time.Duration
	}
	out := make(chan res, n)
	for i := range n {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/payments", strings.NewReader(strings.Replace(validBody, "1351039135", fmt.Sprintf("slow-%04d", i), 1)))
			req.Header.Set("X-USER-ID", "u1")
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- res{status: -1}
				return
			}
			resp.Body.Close()
			out <- res{status: resp.StatusCode, elapsed: time.Since(start)}
		}()
	}
	for range n {
		r := <-out
		// The lower bound is exact (the server sleeps at least the sample). No
		// wall-clock upper bound: it would fail on a loaded 2-core CI machine;
		// the attempt log below checks every sampled delay is within 150–300 ms.
		if r.status != 200 || r.elapsed < 150*time.Millisecond {
			t.Errorf("slow call: status %d after %v, want 200 after at least 150 ms", r.status, r.elapsed)
		}
	}
	for _, a := range s.Attempts() {
		if a.Outcome != OutcomeSuccess || a.Injected < 150*time.Millisecond || a.Injected > 300*time.Millisecond {
			t.Errorf("attempt %+v: want success with 150–300 ms injected", a)
		}
	}
}
