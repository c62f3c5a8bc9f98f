//go:build !race

package experiments

// embeddedSpeed is the --speed of the embedded-setup tests without -race: the
// issue's --speed 20 (see speed_race_test.go for why -race runs slower).
const embeddedSpeed = 20
