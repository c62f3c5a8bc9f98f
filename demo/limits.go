package demo

import (
	"bytes"
	"io"
	"net/http"
)

// MaxBodyBytes is the largest request body the service reads (64 KiB); a larger
// one is answered 413 Payload Too Large with Spring's error body, as pgsim does.
const MaxBodyBytes = 64 << 10

// limitBody answers 413 to a request whose body is over MaxBodyBytes, whether
// it says so in Content-Length or streams it chunked; other requests reach h
// with their body read into memory (at most MaxBodyBytes).
func limitBody(h http.Handler, fail func(http.ResponseWriter, *http.Request, int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			fail(w, r, http.StatusRequestEntityTooLarge)
			return
		}
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			data, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
			if err != nil {
				fail(w, r, http.StatusBadRequest)
				return
			}
			if len(data) > MaxBodyBytes {
				fail(w, r, http.StatusRequestEntityTooLarge)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
		}
		h.ServeHTTP(w, r)
	})
}
