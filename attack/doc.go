// Package attack is cbprobe's load engine: open-model traffic phases driven by
// vegeta (one Attacker per phase, one shared http.Client so keep-alive
// connections survive a pause), a pacer that never catches up across a backlog
// (missed sends are dropped and counted), intended and actual send times for
// every request, sequential users, and multi-step request flows loaded from
// YAML with templates and captured values.
//
// Units: rates are requests (flow runs) per second, durations are
// time.Duration, times are wall-clock time.Time values with monotonic readings.
package attack
