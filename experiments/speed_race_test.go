//go:build race

package experiments

// embeddedSpeed is the --speed of the embedded-setup tests under -race. The
// issue asks for --speed 20, but the race detector slows every goroutine
// several times: at --speed 20 (300 requests/s of real time in one process on
// 2 cores) the 1 s TimeLimiter is 50 ms of real time and stalls longer than
// that were seen — the timelimiter-1000ms arm of slow-call opened with a
// failure rate of 70 %, all timeouts, which never happens in real time. At
// --speed 5 the margins are four times larger (the 1 s TimeLimiter against
// 150–300 ms answers leaves 140 ms of real time) and the rate is 75
// requests/s; the three experiments take 25–30 s together (in parallel).
const embeddedSpeed = 5
